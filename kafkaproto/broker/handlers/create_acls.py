"""CreateAcls (kafka-acls --add): each ACL is checked as Kafka's controller checks it (a literal or prefixed
pattern with a name, a real resource type, operation and permission, a principal Type:name, the cluster named
kafka-cluster), then all that pass are written to the metadata log together."""

from ... import errors
from ...messages import ApiKey, CreateAclsResponse
from ..dispatch import handles
from ..state.acls import (ALLOW, ALTER, CLUSTER, CLUSTER_NAME, DENY, LITERAL, OPERATIONS, PREFIXED, RESOURCE_TYPES,
                          Acl, principal_error)
from ._acls import refused

Result = CreateAclsResponse.AclCreationResult


def _invalid(creation):
    """Why Kafka refuses to create the ACL, or None."""
    if creation.resource_type not in RESOURCE_TYPES:
        return f"Invalid resourceType {creation.resource_type}"
    if creation.resource_pattern_type not in (LITERAL, PREFIXED):
        return f"Invalid patternType {creation.resource_pattern_type}"
    if creation.operation not in OPERATIONS:
        return f"Invalid operation {creation.operation}"
    if creation.permission_type not in (ALLOW, DENY):
        return f"Invalid permissionType {creation.permission_type}"
    if not creation.resource_name:
        return "Resource name should not be empty"
    if creation.resource_type == CLUSTER and creation.resource_name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    return principal_error(creation.principal)


@handles(ApiKey.CREATE_ACLS, versions=range(1, 4))
def create_acls(ctx, request):
    denied = refused(ctx, ALTER)
    if denied:
        error, message = denied
        return CreateAclsResponse(throttle_time_ms=0, results=[
            Result(error_code=error.code, error_message=message) for _ in request.creations])
    results, new = [], []
    for creation in request.creations:
        why = _invalid(creation)
        if why:
            results.append(Result(error_code=errors.INVALID_REQUEST.code, error_message=why))
            continue
        acl = Acl(creation.resource_type, creation.resource_name, creation.resource_pattern_type,
                  creation.principal, creation.host, creation.operation, creation.permission_type)
        if acl not in ctx.state.cluster.acls.by_id.values() and acl not in new:
            new.append(acl)
        results.append(Result(error_code=errors.NONE.code, error_message=None))
    if new:
        ctx.state.cluster.add_acls(new)
    return CreateAclsResponse(throttle_time_ms=0, results=results)
