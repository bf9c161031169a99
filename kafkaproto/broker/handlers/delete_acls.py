"""DeleteAcls (kafka-acls --remove): every ACL each filter selects is removed, and listed in the answer under
that filter (an ACL two filters select is listed under both, and removed once). A filter with a code Kafka
does not know is INVALID_REQUEST; one with an UNKNOWN (0) field closes the connection."""

from ... import errors
from ...messages import ApiKey, DeleteAclsResponse
from ..dispatch import Close, handles
from ..state.acls import ALTER
from ._acls import refused
from .describe_acls import acl_filter, not_known, unparsable

Result, Matching = DeleteAclsResponse.DeleteAclsFilterResult, DeleteAclsResponse.DeleteAclsMatchingAcl


@handles(ApiKey.DELETE_ACLS, versions=range(1, 4))
def delete_acls(ctx, request):
    if any(unparsable(acl_filter(asked)) for asked in request.filters):
        return Close("DeleteAcls with an UNKNOWN field (0)")
    denied = refused(ctx, ALTER)
    if denied:
        error, message = denied
        return DeleteAclsResponse(throttle_time_ms=0, filter_results=[
            Result(error_code=error.code, error_message=message, matching_acls=[]) for _ in request.filters])
    acls = ctx.state.cluster.acls
    results, removed = [], {}
    for asked in request.filters:
        chosen = acl_filter(asked)
        why = not_known(chosen)
        if why:
            results.append(Result(error_code=errors.INVALID_REQUEST.code, error_message=why, matching_acls=[]))
            continue
        found = acls.matching(chosen)
        removed.update(found)
        results.append(Result(error_code=errors.NONE.code, error_message=None, matching_acls=[Matching(
            error_code=errors.NONE.code, error_message=None, resource_type=acl.resource_type,
            resource_name=acl.resource_name, pattern_type=acl.pattern_type, principal=acl.principal,
            host=acl.host, operation=acl.operation, permission_type=acl.permission_type) for _, acl in found]))
    if removed:
        ctx.state.cluster.remove_acls(list(removed))
    return DeleteAclsResponse(throttle_time_ms=0, filter_results=results)
