"""What the three ACL requests share: without an authorizer they are SECURITY_DISABLED, as in Kafka, and each
needs the right on the cluster (ALTER to change ACLs, DESCRIBE to list them)."""

from ... import errors
from ..state.acls import CLUSTER, CLUSTER_NAME


def refused(ctx, operation):
    """(error, message) that refuses the request, or None."""
    if not ctx.state.cluster.acls.enabled:
        return errors.SECURITY_DISABLED, "No Authorizer is configured."
    if not ctx.allowed(operation, CLUSTER, CLUSTER_NAME):
        return errors.CLUSTER_AUTHORIZATION_FAILED, None
    return None
