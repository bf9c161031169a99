"""AddRaftVoter (kafka-metadata-quorum add-controller): add a controller to the metadata quorum. This broker is the
quorum's one voter, with a static quorum (kraft.version 0), so it answers as Kafka does then: UNSUPPORTED_VERSION,
saying why."""

from ... import errors
from ...messages import AddRaftVoterResponse, ApiKey
from ..dispatch import handles
from ..state.acls import ALTER, CLUSTER, CLUSTER_NAME


@handles(ApiKey.ADD_RAFT_VOTER, versions=range(0, 2))
def add_raft_voter(ctx, request):
    if not ctx.allowed(ALTER, CLUSTER, CLUSTER_NAME):
        return AddRaftVoterResponse(throttle_time_ms=0, error_code=errors.CLUSTER_AUTHORIZATION_FAILED.code,
                                    error_message=None)
    return AddRaftVoterResponse(throttle_time_ms=0, error_code=errors.UNSUPPORTED_VERSION.code,
                                error_message="Cluster doesn't support adding voter because the kraft.version "
                                              "feature is 0")
