"""RemoveRaftVoter (kafka-metadata-quorum remove-controller): with a static quorum of one (kraft.version 0) there is
no voter to remove; answered UNSUPPORTED_VERSION as Kafka answers then."""

from ... import errors
from ...messages import ApiKey, RemoveRaftVoterResponse
from ..dispatch import handles
from ..state.acls import ALTER, CLUSTER, CLUSTER_NAME


@handles(ApiKey.REMOVE_RAFT_VOTER, versions=range(0, 1))
def remove_raft_voter(ctx, request):
    if not ctx.allowed(ALTER, CLUSTER, CLUSTER_NAME):
        return RemoveRaftVoterResponse(throttle_time_ms=0, error_code=errors.CLUSTER_AUTHORIZATION_FAILED.code,
                                       error_message=None)
    return RemoveRaftVoterResponse(throttle_time_ms=0, error_code=errors.UNSUPPORTED_VERSION.code,
                                   error_message="Cluster doesn't support removing voter because the kraft.version "
                                                 "feature is 0")
