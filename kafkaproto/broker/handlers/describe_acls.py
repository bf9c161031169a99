"""DescribeAcls (kafka-acls --list): the ACLs a filter selects (state/acls.py: Filter), grouped by resource
pattern."""

from ... import errors
from ...messages import ApiKey, DescribeAclsResponse
from ..dispatch import handles
from ..state.acls import DESCRIBE, Filter
from ._acls import refused

Resource, Description = DescribeAclsResponse.DescribeAclsResource, DescribeAclsResponse.AclDescription


def acl_filter(asked):
    """The Filter of a DescribeAcls request or a DeleteAcls filter (their fields are named alike)."""
    return Filter(asked.resource_type_filter, asked.resource_name_filter, asked.pattern_type_filter,
                  asked.principal_filter, asked.host_filter, asked.operation, asked.permission_type)


def unknown(acl_filter):
    """Why Kafka refuses a filter with UNKNOWN (0) in a field, or None."""
    if 0 in (acl_filter.resource_type, acl_filter.pattern_type, acl_filter.operation, acl_filter.permission_type):
        return "The filter contains UNKNOWN elements"
    return None


@handles(ApiKey.DESCRIBE_ACLS, versions=range(1, 4))
def describe_acls(ctx, request):
    denied = refused(ctx, DESCRIBE)
    chosen = acl_filter(request)
    if not denied and unknown(chosen):
        denied = errors.INVALID_REQUEST, unknown(chosen)
    if denied:
        error, message = denied
        return DescribeAclsResponse(throttle_time_ms=0, error_code=error.code, error_message=message, resources=[])
    grouped = {}
    for _, acl in ctx.state.cluster.acls.matching(chosen):
        grouped.setdefault((acl.resource_type, acl.resource_name, acl.pattern_type), []).append(Description(
            principal=acl.principal, host=acl.host, operation=acl.operation, permission_type=acl.permission_type))
    return DescribeAclsResponse(throttle_time_ms=0, error_code=errors.NONE.code, error_message=None, resources=[
        Resource(resource_type=t, resource_name=n, pattern_type=p, acls=acls) for (t, n, p), acls in grouped.items()])
