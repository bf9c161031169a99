"""CreateAcls (kafka-acls --add): each ACL is checked as Kafka checks it (a literal or prefixed pattern with a
name, a real resource type, operation and permission, a principal Type:name, the cluster named kafka-cluster:
else INVALID_REQUEST), then all that pass are written to the metadata log together. A request with an UNKNOWN
(0) field closes the connection, and one with ANY fails whole (UNKNOWN_SERVER_ERROR), as on Kafka 4.3."""

from ... import errors
from ...messages import ApiKey, CreateAclsResponse
from ..dispatch import Close, handles
from ..state.acls import (ALLOW, ALTER, ANY, CLUSTER, CLUSTER_NAME, DENY, LITERAL, MATCH, OPERATIONS, PREFIXED,
                          RESOURCE_TYPES, UNKNOWN, Acl, principal_error)
from ._acls import refused

Result = CreateAclsResponse.AclCreationResult


def _invalid(creation):
    """Why Kafka refuses to create the ACL, or None (codes it does not know read as UNKNOWN)."""
    if creation.resource_type not in RESOURCE_TYPES:
        return "Invalid resourceType UNKNOWN"
    if creation.resource_pattern_type not in (LITERAL, PREFIXED):
        return "Invalid patternType UNKNOWN"
    if creation.operation not in OPERATIONS:
        return "Invalid operation UNKNOWN"
    if creation.permission_type not in (ALLOW, DENY):
        return "Invalid permissionType UNKNOWN"
    if not creation.resource_name:
        return "Invalid empty resource name"
    if creation.resource_type == CLUSTER and creation.resource_name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    return principal_error(creation.principal)


def _fields(creation):
    return (creation.resource_type, creation.resource_pattern_type, creation.operation, creation.permission_type)


@handles(ApiKey.CREATE_ACLS, versions=range(1, 4))
def create_acls(ctx, request):
    # What Kafka cannot turn into an ACL binding at all: UNKNOWN (0) closes the connection, as Kafka's request
    # parsing fails; ANY (or the MATCH pattern type) fails the whole request in its controller.
    if any(UNKNOWN in _fields(c) for c in request.creations):
        return Close("CreateAcls with an UNKNOWN field (0)")
    denied = refused(ctx, ALTER)
    if not denied and any(ANY in _fields(c) or c.resource_pattern_type == MATCH for c in request.creations):
        denied = errors.UNKNOWN_SERVER_ERROR, None
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
