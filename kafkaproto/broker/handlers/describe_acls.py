"""DescribeAcls (kafka-acls --list): the ACLs a filter selects (state/acls.py: Filter), grouped by resource
pattern. A filter with an UNKNOWN (0) field closes the connection, as Kafka cannot read it."""

from ... import errors
from ...messages import ApiKey, DescribeAclsResponse
from ..dispatch import Close, handles
from ..state.acls import DESCRIBE, KNOWN, UNKNOWN, Filter
from ._acls import refused

Resource, Description = DescribeAclsResponse.DescribeAclsResource, DescribeAclsResponse.AclDescription


def acl_filter(asked):
    """The Filter of a DescribeAcls request or a DeleteAcls filter (their fields are named alike)."""
    return Filter(asked.resource_type_filter, asked.resource_name_filter, asked.pattern_type_filter,
                  asked.principal_filter, asked.host_filter, asked.operation, asked.permission_type)


def unparsable(acl_filter):
    """Whether a field is UNKNOWN (0): Kafka cannot read such a filter, and closes the connection."""
    return UNKNOWN in (acl_filter.resource_type, acl_filter.pattern_type, acl_filter.operation,
                       acl_filter.permission_type)


def not_known(acl_filter):
    """Why DeleteAcls refuses a filter with a code Kafka does not know (it reads as UNKNOWN), or None; DescribeAcls
    takes it, and it matches nothing."""
    if acl_filter.resource_type > KNOWN["resource_type"] or acl_filter.pattern_type > KNOWN["pattern_type"]:
        return "Unknown patternFilter."
    if acl_filter.operation > KNOWN["operation"] or acl_filter.permission_type > KNOWN["permission_type"]:
        return "Unknown entryFilter."
    return None


@handles(ApiKey.DESCRIBE_ACLS, versions=range(1, 4))
def describe_acls(ctx, request):
    chosen = acl_filter(request)
    if unparsable(chosen):
        return Close("DescribeAcls with an UNKNOWN field (0)")
    denied = refused(ctx, DESCRIBE)
    if denied:
        error, message = denied
        return DescribeAclsResponse(throttle_time_ms=0, error_code=error.code, error_message=message, resources=[])
    grouped = {}
    for _, acl in ctx.state.cluster.acls.matching(chosen):
        grouped.setdefault((acl.resource_type, acl.resource_name, acl.pattern_type), []).append(Description(
            principal=acl.principal, host=acl.host, operation=acl.operation, permission_type=acl.permission_type))
    return DescribeAclsResponse(throttle_time_ms=0, error_code=errors.NONE.code, error_message=None, resources=[
        Resource(resource_type=t, resource_name=n, pattern_type=p, acls=acls) for (t, n, p), acls in grouped.items()])
