"""Kafka protocol error codes.

Codes, names and retriability follow ``org.apache.kafka.common.protocol.Errors``
on Apache Kafka trunk (the 4.4 development line, which includes KIP-1331's
codes 134 and 135). ``retriable`` is True exactly when the Java exception class
for the code extends ``RetriableException`` (directly or through
``InvalidMetadataException`` / ``RefreshRetriableException``). The messages are
short summaries, not Kafka's wording.
"""

from __future__ import annotations

from operator import index
from typing import Any, Callable

__all__ = ["ALL", "ErrorCode", "by_code", "by_name"]


class ErrorCode:
    """One protocol error code; compares and hashes like its int16 ``code``."""

    __slots__ = ("code", "message", "name", "retriable")

    code: int
    name: str
    retriable: bool
    message: str

    def __init__(self, code: int, name: str, retriable: bool, message: str) -> None:
        init = object.__setattr__  # our own __setattr__ blocks writes
        init(self, "code", index(code))
        init(self, "name", name)
        init(self, "retriable", bool(retriable))
        init(self, "message", message)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("ErrorCode is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("ErrorCode is immutable")

    def __int__(self) -> int:
        return self.code

    def __index__(self) -> int:
        return self.code

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ErrorCode):
            return self.code == other.code
        if isinstance(other, int):
            return self.code == other
        return NotImplemented

    def __hash__(self) -> int:
        # Same hash as the bare int, so codes and ErrorCodes mix as dict keys.
        return hash(self.code)

    def __repr__(self) -> str:
        return f"ErrorCode({self.code}, {self.name!r})"

    def __reduce__(self) -> tuple[Callable[[int], ErrorCode], tuple[int]]:
        return by_code, (self.code,)


# One constant per Kafka error, in code order: ErrorCode(code, name, retriable, message).
UNKNOWN_SERVER_ERROR = ErrorCode(
    -1, "UNKNOWN_SERVER_ERROR", False, "The broker hit an unexpected error while handling the request."
)
NONE = ErrorCode(0, "NONE", False, "No error.")
OFFSET_OUT_OF_RANGE = ErrorCode(
    1, "OFFSET_OUT_OF_RANGE", False, "The requested offset is outside the range the broker holds for the partition."
)
CORRUPT_MESSAGE = ErrorCode(
    2,
    "CORRUPT_MESSAGE",
    True,
    "A record failed its CRC check, is oversized, has a null key on a compacted topic, or is otherwise malformed.",
)
UNKNOWN_TOPIC_OR_PARTITION = ErrorCode(
    3, "UNKNOWN_TOPIC_OR_PARTITION", True, "This broker does not host the requested topic-partition."
)
INVALID_FETCH_SIZE = ErrorCode(4, "INVALID_FETCH_SIZE", False, "The fetch size in the request is not valid.")
LEADER_NOT_AVAILABLE = ErrorCode(
    5, "LEADER_NOT_AVAILABLE", True, "The partition has no leader right now, e.g. during a leader election."
)
NOT_LEADER_OR_FOLLOWER = ErrorCode(
    6, "NOT_LEADER_OR_FOLLOWER", True, "The broker is not the leader, or not a replica, for the partition."
)
REQUEST_TIMED_OUT = ErrorCode(7, "REQUEST_TIMED_OUT", True, "The request did not complete in time.")
BROKER_NOT_AVAILABLE = ErrorCode(8, "BROKER_NOT_AVAILABLE", False, "The broker is not available.")
REPLICA_NOT_AVAILABLE = ErrorCode(
    9, "REPLICA_NOT_AVAILABLE", True, "The replica for the requested partition is not available."
)
MESSAGE_TOO_LARGE = ErrorCode(10, "MESSAGE_TOO_LARGE", False, "A record is larger than the broker accepts.")
STALE_CONTROLLER_EPOCH = ErrorCode(
    11, "STALE_CONTROLLER_EPOCH", False, "The request carried an outdated controller epoch."
)
OFFSET_METADATA_TOO_LARGE = ErrorCode(
    12, "OFFSET_METADATA_TOO_LARGE", False, "The metadata attached to the committed offset is too large."
)
NETWORK_EXCEPTION = ErrorCode(13, "NETWORK_EXCEPTION", True, "The connection closed before a response arrived.")
COORDINATOR_LOAD_IN_PROGRESS = ErrorCode(
    14, "COORDINATOR_LOAD_IN_PROGRESS", True, "The coordinator is still loading its state."
)
COORDINATOR_NOT_AVAILABLE = ErrorCode(15, "COORDINATOR_NOT_AVAILABLE", True, "The coordinator is not available.")
NOT_COORDINATOR = ErrorCode(16, "NOT_COORDINATOR", True, "This broker is not the coordinator for the requested key.")
INVALID_TOPIC_EXCEPTION = ErrorCode(
    17, "INVALID_TOPIC_EXCEPTION", False, "The topic is invalid or the operation is not allowed on it."
)
RECORD_LIST_TOO_LARGE = ErrorCode(
    18, "RECORD_LIST_TOO_LARGE", False, "A record batch is larger than the broker's segment size."
)
NOT_ENOUGH_REPLICAS = ErrorCode(
    19, "NOT_ENOUGH_REPLICAS", True, "Rejected: fewer in-sync replicas than min.insync.replicas."
)
NOT_ENOUGH_REPLICAS_AFTER_APPEND = ErrorCode(
    20,
    "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
    True,
    "Appended to the leader, but fewer in-sync replicas than required acknowledged it.",
)
INVALID_REQUIRED_ACKS = ErrorCode(
    21, "INVALID_REQUIRED_ACKS", False, "The acks value of the produce request is not valid."
)
ILLEGAL_GENERATION = ErrorCode(22, "ILLEGAL_GENERATION", False, "The group generation id is not current.")
INCONSISTENT_GROUP_PROTOCOL = ErrorCode(
    23, "INCONSISTENT_GROUP_PROTOCOL", False, "The member's protocol type or protocols do not fit the group."
)
INVALID_GROUP_ID = ErrorCode(24, "INVALID_GROUP_ID", False, "The group id is not valid.")
UNKNOWN_MEMBER_ID = ErrorCode(25, "UNKNOWN_MEMBER_ID", False, "The coordinator does not know this member id.")
INVALID_SESSION_TIMEOUT = ErrorCode(
    26, "INVALID_SESSION_TIMEOUT", False, "The session timeout is outside the range the broker allows."
)
REBALANCE_IN_PROGRESS = ErrorCode(
    27, "REBALANCE_IN_PROGRESS", False, "The group is rebalancing; the member must rejoin."
)
INVALID_COMMIT_OFFSET_SIZE = ErrorCode(
    28, "INVALID_COMMIT_OFFSET_SIZE", False, "The size of the offset commit data is not valid."
)
TOPIC_AUTHORIZATION_FAILED = ErrorCode(29, "TOPIC_AUTHORIZATION_FAILED", False, "Not authorized to access the topic.")
GROUP_AUTHORIZATION_FAILED = ErrorCode(30, "GROUP_AUTHORIZATION_FAILED", False, "Not authorized to access the group.")
CLUSTER_AUTHORIZATION_FAILED = ErrorCode(
    31, "CLUSTER_AUTHORIZATION_FAILED", False, "Not authorized for the cluster operation."
)
INVALID_TIMESTAMP = ErrorCode(32, "INVALID_TIMESTAMP", False, "A record timestamp is outside the accepted range.")
UNSUPPORTED_SASL_MECHANISM = ErrorCode(
    33, "UNSUPPORTED_SASL_MECHANISM", False, "The broker does not enable the requested SASL mechanism."
)
ILLEGAL_SASL_STATE = ErrorCode(34, "ILLEGAL_SASL_STATE", False, "The request is not allowed in the current SASL state.")
UNSUPPORTED_VERSION = ErrorCode(35, "UNSUPPORTED_VERSION", False, "The broker does not support this API version.")
TOPIC_ALREADY_EXISTS = ErrorCode(36, "TOPIC_ALREADY_EXISTS", False, "A topic with this name already exists.")
INVALID_PARTITIONS = ErrorCode(37, "INVALID_PARTITIONS", False, "The requested partition count is not valid.")
INVALID_REPLICATION_FACTOR = ErrorCode(
    38,
    "INVALID_REPLICATION_FACTOR",
    False,
    "The replication factor is below 1 or above the number of available brokers.",
)
INVALID_REPLICA_ASSIGNMENT = ErrorCode(39, "INVALID_REPLICA_ASSIGNMENT", False, "The replica assignment is not valid.")
INVALID_CONFIG = ErrorCode(40, "INVALID_CONFIG", False, "The configuration is not valid.")
NOT_CONTROLLER = ErrorCode(41, "NOT_CONTROLLER", True, "This node is not the active controller.")
INVALID_REQUEST = ErrorCode(
    42, "INVALID_REQUEST", False, "The request is malformed or not understood by this broker; see the broker log."
)
UNSUPPORTED_FOR_MESSAGE_FORMAT = ErrorCode(
    43, "UNSUPPORTED_FOR_MESSAGE_FORMAT", False, "The message format in use does not support this request."
)
POLICY_VIOLATION = ErrorCode(44, "POLICY_VIOLATION", False, "The request breaks a configured policy.")
OUT_OF_ORDER_SEQUENCE_NUMBER = ErrorCode(
    45, "OUT_OF_ORDER_SEQUENCE_NUMBER", False, "The broker got a producer sequence number out of order."
)
DUPLICATE_SEQUENCE_NUMBER = ErrorCode(
    46, "DUPLICATE_SEQUENCE_NUMBER", False, "The broker got a duplicate producer sequence number."
)
INVALID_PRODUCER_EPOCH = ErrorCode(47, "INVALID_PRODUCER_EPOCH", False, "The producer epoch is outdated.")
INVALID_TXN_STATE = ErrorCode(
    48, "INVALID_TXN_STATE", False, "The operation is not valid in the transaction's current state."
)
INVALID_PRODUCER_ID_MAPPING = ErrorCode(
    49, "INVALID_PRODUCER_ID_MAPPING", False, "The producer id is not currently assigned to this transactional id."
)
INVALID_TRANSACTION_TIMEOUT = ErrorCode(
    50, "INVALID_TRANSACTION_TIMEOUT", False, "The transaction timeout exceeds transaction.max.timeout.ms."
)
CONCURRENT_TRANSACTIONS = ErrorCode(
    51, "CONCURRENT_TRANSACTIONS", True, "Another operation on the same transaction is still in progress."
)
TRANSACTION_COORDINATOR_FENCED = ErrorCode(
    52, "TRANSACTION_COORDINATOR_FENCED", False, "The sending transaction coordinator has been superseded."
)
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = ErrorCode(
    53, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", False, "Not authorized to use the transactional id."
)
SECURITY_DISABLED = ErrorCode(54, "SECURITY_DISABLED", False, "Security features are turned off on the broker.")
OPERATION_NOT_ATTEMPTED = ErrorCode(
    55, "OPERATION_NOT_ATTEMPTED", False, "Skipped because another operation in the batch failed."
)
KAFKA_STORAGE_ERROR = ErrorCode(56, "KAFKA_STORAGE_ERROR", True, "A disk error occurred while accessing the log.")
LOG_DIR_NOT_FOUND = ErrorCode(57, "LOG_DIR_NOT_FOUND", False, "The log directory is not configured on the broker.")
SASL_AUTHENTICATION_FAILED = ErrorCode(58, "SASL_AUTHENTICATION_FAILED", False, "SASL authentication failed.")
UNKNOWN_PRODUCER_ID = ErrorCode(
    59, "UNKNOWN_PRODUCER_ID", False, "The broker has no state for this producer id, e.g. its records expired."
)
REASSIGNMENT_IN_PROGRESS = ErrorCode(60, "REASSIGNMENT_IN_PROGRESS", False, "A partition reassignment is in progress.")
DELEGATION_TOKEN_AUTH_DISABLED = ErrorCode(
    61, "DELEGATION_TOKEN_AUTH_DISABLED", False, "Delegation tokens are not enabled."
)
DELEGATION_TOKEN_NOT_FOUND = ErrorCode(62, "DELEGATION_TOKEN_NOT_FOUND", False, "The delegation token does not exist.")
DELEGATION_TOKEN_OWNER_MISMATCH = ErrorCode(
    63, "DELEGATION_TOKEN_OWNER_MISMATCH", False, "The principal is neither owner nor renewer of the token."
)
DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = ErrorCode(
    64,
    "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED",
    False,
    "Delegation token requests are not allowed on this kind of connection.",
)
DELEGATION_TOKEN_AUTHORIZATION_FAILED = ErrorCode(
    65, "DELEGATION_TOKEN_AUTHORIZATION_FAILED", False, "Not authorized for the delegation token operation."
)
DELEGATION_TOKEN_EXPIRED = ErrorCode(66, "DELEGATION_TOKEN_EXPIRED", False, "The delegation token has expired.")
INVALID_PRINCIPAL_TYPE = ErrorCode(67, "INVALID_PRINCIPAL_TYPE", False, "The principal type is not supported.")
NON_EMPTY_GROUP = ErrorCode(68, "NON_EMPTY_GROUP", False, "The group still has members.")
GROUP_ID_NOT_FOUND = ErrorCode(69, "GROUP_ID_NOT_FOUND", False, "The group does not exist.")
FETCH_SESSION_ID_NOT_FOUND = ErrorCode(70, "FETCH_SESSION_ID_NOT_FOUND", True, "The fetch session id is unknown.")
INVALID_FETCH_SESSION_EPOCH = ErrorCode(
    71, "INVALID_FETCH_SESSION_EPOCH", True, "The fetch session epoch is not valid."
)
LISTENER_NOT_FOUND = ErrorCode(
    72, "LISTENER_NOT_FOUND", True, "The leader has no endpoint for the listener the metadata request came in on."
)
TOPIC_DELETION_DISABLED = ErrorCode(73, "TOPIC_DELETION_DISABLED", False, "Topic deletion is turned off.")
FENCED_LEADER_EPOCH = ErrorCode(
    74, "FENCED_LEADER_EPOCH", True, "The request's leader epoch is older than the broker's."
)
UNKNOWN_LEADER_EPOCH = ErrorCode(
    75, "UNKNOWN_LEADER_EPOCH", True, "The request's leader epoch is newer than the broker's."
)
UNSUPPORTED_COMPRESSION_TYPE = ErrorCode(
    76, "UNSUPPORTED_COMPRESSION_TYPE", False, "The client does not support the partition's compression type."
)
STALE_BROKER_EPOCH = ErrorCode(77, "STALE_BROKER_EPOCH", False, "The broker epoch is outdated.")
OFFSET_NOT_AVAILABLE = ErrorCode(
    78,
    "OFFSET_NOT_AVAILABLE",
    True,
    "The new leader's high watermark has not caught up, so offsets are not yet reliable.",
)
MEMBER_ID_REQUIRED = ErrorCode(
    79, "MEMBER_ID_REQUIRED", False, "The member needs a member id before it can join the group."
)
PREFERRED_LEADER_NOT_AVAILABLE = ErrorCode(
    80, "PREFERRED_LEADER_NOT_AVAILABLE", True, "The preferred leader is not available."
)
GROUP_MAX_SIZE_REACHED = ErrorCode(81, "GROUP_MAX_SIZE_REACHED", False, "The group is at its maximum size.")
FENCED_INSTANCE_ID = ErrorCode(
    82, "FENCED_INSTANCE_ID", False, "Another member with the same group.instance.id has taken over."
)
ELIGIBLE_LEADERS_NOT_AVAILABLE = ErrorCode(
    83, "ELIGIBLE_LEADERS_NOT_AVAILABLE", True, "No eligible leader is available for the partition."
)
ELECTION_NOT_NEEDED = ErrorCode(84, "ELECTION_NOT_NEEDED", True, "The partition does not need a leader election.")
NO_REASSIGNMENT_IN_PROGRESS = ErrorCode(
    85, "NO_REASSIGNMENT_IN_PROGRESS", False, "No partition reassignment is in progress."
)
GROUP_SUBSCRIBED_TO_TOPIC = ErrorCode(
    86, "GROUP_SUBSCRIBED_TO_TOPIC", False, "Offsets of a topic the group is subscribed to cannot be deleted."
)
INVALID_RECORD = ErrorCode(87, "INVALID_RECORD", False, "The broker rejected a record that failed validation.")
UNSTABLE_OFFSET_COMMIT = ErrorCode(
    88, "UNSTABLE_OFFSET_COMMIT", True, "Pending transactional offsets must settle first."
)
THROTTLING_QUOTA_EXCEEDED = ErrorCode(89, "THROTTLING_QUOTA_EXCEEDED", True, "The throttling quota was exceeded.")
PRODUCER_FENCED = ErrorCode(
    90, "PRODUCER_FENCED", False, "A newer producer with the same transactional id has fenced this one."
)
RESOURCE_NOT_FOUND = ErrorCode(91, "RESOURCE_NOT_FOUND", False, "The request refers to a resource that does not exist.")
DUPLICATE_RESOURCE = ErrorCode(
    92, "DUPLICATE_RESOURCE", False, "The request refers to the same resource more than once."
)
UNACCEPTABLE_CREDENTIAL = ErrorCode(
    93, "UNACCEPTABLE_CREDENTIAL", False, "The credential does not meet the acceptance criteria."
)
INCONSISTENT_VOTER_SET = ErrorCode(
    94, "INCONSISTENT_VOTER_SET", False, "The sender or receiver of a voter-only request is not an expected voter."
)
INVALID_UPDATE_VERSION = ErrorCode(95, "INVALID_UPDATE_VERSION", False, "The update version is not valid.")
FEATURE_UPDATE_FAILED = ErrorCode(
    96, "FEATURE_UPDATE_FAILED", False, "Updating the finalized features failed unexpectedly."
)
PRINCIPAL_DESERIALIZATION_FAILURE = ErrorCode(
    97, "PRINCIPAL_DESERIALIZATION_FAILURE", False, "The forwarded request principal could not be deserialized."
)
SNAPSHOT_NOT_FOUND = ErrorCode(98, "SNAPSHOT_NOT_FOUND", False, "The requested snapshot does not exist.")
POSITION_OUT_OF_RANGE = ErrorCode(
    99, "POSITION_OUT_OF_RANGE", False, "The requested position is negative or past the end of the snapshot."
)
UNKNOWN_TOPIC_ID = ErrorCode(100, "UNKNOWN_TOPIC_ID", True, "This broker does not host a topic with this id.")
DUPLICATE_BROKER_REGISTRATION = ErrorCode(
    101, "DUPLICATE_BROKER_REGISTRATION", False, "The broker id is already registered."
)
BROKER_ID_NOT_REGISTERED = ErrorCode(102, "BROKER_ID_NOT_REGISTERED", False, "The broker id is not registered.")
INCONSISTENT_TOPIC_ID = ErrorCode(
    103, "INCONSISTENT_TOPIC_ID", True, "The topic id in the request does not match the log's."
)
INCONSISTENT_CLUSTER_ID = ErrorCode(
    104, "INCONSISTENT_CLUSTER_ID", False, "The cluster id in the request does not match the server's."
)
TRANSACTIONAL_ID_NOT_FOUND = ErrorCode(105, "TRANSACTIONAL_ID_NOT_FOUND", False, "The transactional id does not exist.")
FETCH_SESSION_TOPIC_ID_ERROR = ErrorCode(
    106, "FETCH_SESSION_TOPIC_ID_ERROR", True, "The fetch session used topic ids inconsistently."
)
INELIGIBLE_REPLICA = ErrorCode(107, "INELIGIBLE_REPLICA", False, "The proposed ISR contains an ineligible replica.")
NEW_LEADER_ELECTED = ErrorCode(
    108, "NEW_LEADER_ELECTED", False, "The partition state was updated, but the leader has since changed."
)
OFFSET_MOVED_TO_TIERED_STORAGE = ErrorCode(
    109, "OFFSET_MOVED_TO_TIERED_STORAGE", False, "The requested offset is now only in tiered storage."
)
FENCED_MEMBER_EPOCH = ErrorCode(
    110, "FENCED_MEMBER_EPOCH", False, "The member epoch is fenced; the member must drop its partitions and rejoin."
)
UNRELEASED_INSTANCE_ID = ErrorCode(
    111, "UNRELEASED_INSTANCE_ID", False, "The instance id is still held by another member, which must leave first."
)
UNSUPPORTED_ASSIGNOR = ErrorCode(
    112, "UNSUPPORTED_ASSIGNOR", False, "The group does not support the assignor or its version range."
)
STALE_MEMBER_EPOCH = ErrorCode(
    113, "STALE_MEMBER_EPOCH", False, "The member epoch is stale; retry once the heartbeat returns the current one."
)
MISMATCHED_ENDPOINT_TYPE = ErrorCode(
    114, "MISMATCHED_ENDPOINT_TYPE", False, "The request went to the wrong kind of endpoint."
)
UNSUPPORTED_ENDPOINT_TYPE = ErrorCode(115, "UNSUPPORTED_ENDPOINT_TYPE", False, "The endpoint type is not supported.")
UNKNOWN_CONTROLLER_ID = ErrorCode(116, "UNKNOWN_CONTROLLER_ID", False, "The controller id is unknown.")
UNKNOWN_SUBSCRIPTION_ID = ErrorCode(
    117, "UNKNOWN_SUBSCRIPTION_ID", False, "The telemetry subscription id is unknown or outdated."
)
TELEMETRY_TOO_LARGE = ErrorCode(
    118, "TELEMETRY_TOO_LARGE", False, "The telemetry push exceeds the broker's size limit."
)
INVALID_REGISTRATION = ErrorCode(
    119, "INVALID_REGISTRATION", False, "The controller considers the broker registration invalid."
)
TRANSACTION_ABORTABLE = ErrorCode(
    120, "TRANSACTION_ABORTABLE", False, "The transaction failed; abort it to keep using the transactional id."
)
INVALID_RECORD_STATE = ErrorCode(
    121, "INVALID_RECORD_STATE", False, "The record's delivery state does not allow this acknowledgement."
)
SHARE_SESSION_NOT_FOUND = ErrorCode(122, "SHARE_SESSION_NOT_FOUND", True, "The share session does not exist.")
INVALID_SHARE_SESSION_EPOCH = ErrorCode(
    123, "INVALID_SHARE_SESSION_EPOCH", True, "The share session epoch is not valid."
)
FENCED_STATE_EPOCH = ErrorCode(124, "FENCED_STATE_EPOCH", False, "The share-group state epoch does not match.")
INVALID_VOTER_KEY = ErrorCode(125, "INVALID_VOTER_KEY", False, "The voter key does not match the receiving replica.")
DUPLICATE_VOTER = ErrorCode(126, "DUPLICATE_VOTER", False, "The voter is already in the voter set.")
VOTER_NOT_FOUND = ErrorCode(127, "VOTER_NOT_FOUND", False, "The voter is not in the voter set.")
INVALID_REGULAR_EXPRESSION = ErrorCode(128, "INVALID_REGULAR_EXPRESSION", False, "The regular expression is not valid.")
REBOOTSTRAP_REQUIRED = ErrorCode(
    129, "REBOOTSTRAP_REQUIRED", False, "The client's metadata is stale; it should rebootstrap."
)
STREAMS_INVALID_TOPOLOGY = ErrorCode(130, "STREAMS_INVALID_TOPOLOGY", False, "The streams topology is not valid.")
STREAMS_INVALID_TOPOLOGY_EPOCH = ErrorCode(
    131, "STREAMS_INVALID_TOPOLOGY_EPOCH", False, "The streams topology epoch is not valid."
)
STREAMS_TOPOLOGY_FENCED = ErrorCode(132, "STREAMS_TOPOLOGY_FENCED", False, "The streams topology epoch is outdated.")
SHARE_SESSION_LIMIT_REACHED = ErrorCode(
    133, "SHARE_SESSION_LIMIT_REACHED", True, "No more share sessions can be opened right now."
)
GROUP_DELETION_FAILED = ErrorCode(
    134, "GROUP_DELETION_FAILED", False, "DeleteGroups could not finish for the group; see its error message."
)
STREAMS_TOPOLOGY_DESCRIPTION_UPDATE_FAILED = ErrorCode(
    135,
    "STREAMS_TOPOLOGY_DESCRIPTION_UPDATE_FAILED",
    False,
    "The broker could not store the streams topology description.",
)

ALL: tuple[ErrorCode, ...] = tuple(
    sorted((v for v in list(globals().values()) if isinstance(v, ErrorCode)), key=lambda e: e.code)
)
_BY_CODE = {e.code: e for e in ALL}
_BY_NAME = {e.name: e for e in ALL}
__all__ += [e.name for e in ALL]


def by_code(code: int) -> ErrorCode:
    """The ErrorCode for ``code``; an unknown code (e.g. from a newer broker) gets a
    placeholder named ``UNKNOWN_CODE_<n>`` instead of raising."""
    code = index(code)
    known = _BY_CODE.get(code)
    if known is not None:
        return known
    # Java falls back to UNKNOWN_SERVER_ERROR here, which is not retriable either.
    return ErrorCode(code, f"UNKNOWN_CODE_{code}", False, f"Error code {code} is not known to this client.")


def by_name(name: str) -> ErrorCode:
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"no Kafka error code is named {name!r}") from None
