import pickle
import struct

import pytest

from kafkaproto import errors
from kafkaproto.errors import ALL, ErrorCode, by_code, by_name

# Codes whose Java exception extends RetriableException on Kafka trunk (checked class by
# class in clients/src/main/java/org/apache/kafka/common/errors).
# fmt: off
JAVA_RETRIABLE = {
    2, 3, 5, 6, 7, 9, 13, 14, 15, 16, 19, 20, 41, 51, 56, 70, 71, 72, 74, 75, 78,
    80, 83, 84, 88, 89, 100, 103, 106, 122, 123, 133,
}
# fmt: on
HIGHEST_CODE = 135  # STREAMS_TOPOLOGY_DESCRIPTION_UPDATE_FAILED (KIP-1331, Kafka 4.4)


def test_codes_and_names_unique():
    assert len({e.code for e in ALL}) == len(ALL)
    assert len({e.name for e in ALL}) == len(ALL)


def test_all_sorted_and_contiguous():
    # Kafka's Errors enum has no gaps from -1 up to its highest code.
    assert [e.code for e in ALL] == list(range(-1, HIGHEST_CODE + 1))


def test_module_constant_per_code():
    for e in ALL:
        assert getattr(errors, e.name) is e
        assert by_code(e.code) is e
        assert by_name(e.name) is e
        assert e.name in errors.__all__
        assert e.message and isinstance(e.message, str)


@pytest.mark.parametrize(
    "err, code, retriable",
    [
        (errors.UNKNOWN_SERVER_ERROR, -1, False),
        (errors.NONE, 0, False),
        (errors.CORRUPT_MESSAGE, 2, True),
        (errors.NOT_LEADER_OR_FOLLOWER, 6, True),
        (errors.UNSUPPORTED_VERSION, 35, False),
        (errors.CONCURRENT_TRANSACTIONS, 51, True),
        (errors.PRODUCER_FENCED, 90, False),
        (errors.UNKNOWN_TOPIC_ID, 100, True),
        (errors.INCONSISTENT_TOPIC_ID, 103, True),
        (errors.SHARE_SESSION_LIMIT_REACHED, 133, True),
        (errors.GROUP_DELETION_FAILED, 134, False),
    ],
)
def test_known_values(err, code, retriable):
    assert err.code == code
    assert err.retriable is retriable


def test_retriable_set_matches_java():
    assert {e.code for e in ALL if e.retriable} == JAVA_RETRIABLE


def test_error_code_is_int_like():
    e = errors.UNKNOWN_TOPIC_ID
    assert int(e) == 100
    assert struct.pack(">h", e) == struct.pack(">h", 100)  # usable where an int16 is wanted
    assert list(range(200))[e] == 100
    assert e == 100 and 100 == e and e != 101
    assert e == ErrorCode(100, "OTHER_NAME", False, "")
    assert hash(e) == hash(100)
    assert {100: "x"}[e] == "x" and {e: "y"}[100] == "y"
    assert e.__eq__("100") is NotImplemented
    assert repr(e) == "ErrorCode(100, 'UNKNOWN_TOPIC_ID')"


def test_error_code_immutable_and_picklable():
    e = errors.REQUEST_TIMED_OUT
    with pytest.raises(AttributeError):
        e.code = 8
    with pytest.raises(AttributeError):
        e.extra = 1
    assert pickle.loads(pickle.dumps(e)) is e
    unknown = by_code(4242)
    assert pickle.loads(pickle.dumps(unknown)) == unknown


@pytest.mark.parametrize("code", [HIGHEST_CODE + 1, 999, -2, 32767, -32768])
def test_unknown_code_does_not_raise(code):
    e = by_code(code)
    assert e.code == code == e
    assert e.name == f"UNKNOWN_CODE_{code}"
    assert e.retriable is False  # Java maps unknown codes to UNKNOWN_SERVER_ERROR
    assert str(code) in e.message


def test_by_code_accepts_error_code():
    assert by_code(errors.NONE) is errors.NONE


def test_by_name_unknown():
    with pytest.raises(KeyError, match="NOT_A_REAL_ERROR"):
        by_name("NOT_A_REAL_ERROR")


# --- cross-check against kafka-python ------------------------------------------

# kafka-python's `message` differs from Kafka's enum name for these codes (ours follow
# Errors.java; kafka-python kept older or shortened spellings).
KAFKA_PYTHON_NAMES = {
    -1: "UNKNOWN",  # Java: UNKNOWN_SERVER_ERROR (renamed in Kafka 1.1)
    0: "NO_ERROR",  # Java: NONE
    6: "NOT_LEADER_FOR_PARTITION",  # Java: NOT_LEADER_OR_FOLLOWER (renamed by KIP-392)
    10: "MESSAGE_SIZE_TOO_LARGE",  # Java: MESSAGE_TOO_LARGE
    17: "INVALID_TOPIC",  # Java: INVALID_TOPIC_EXCEPTION
    39: "INVALID_REPLICATION_ASSIGNMENT",  # Java: INVALID_REPLICA_ASSIGNMENT
}

# Codes where kafka-python's `retriable` flag disagrees with Java.
KAFKA_PYTHON_RETRIABLE = {
    # CorruptRecordException extends RetriableException in Java (so do Kafka's generated
    # protocol docs: "CORRUPT_MESSAGE 2 True"); kafka-python marks it not retriable.
    2: False,
}


def _kafka_python_errors():
    kerr = pytest.importorskip("kafka.errors", reason="kafka-python is not installed")
    # {errno: exception class}; the abstract base registers itself under None.
    return {c: cls for c, cls in kerr.kafka_errors.items() if c is not None}


def test_names_match_kafka_python():
    theirs = _kafka_python_errors()
    shared = sorted(set(theirs) & {e.code for e in ALL})
    assert len(shared) > 100
    diffs = {c: theirs[c].message for c in shared if theirs[c].message != by_code(c).name}
    assert diffs == KAFKA_PYTHON_NAMES


def test_retriable_matches_kafka_python():
    theirs = _kafka_python_errors()
    shared = sorted(set(theirs) & {e.code for e in ALL})
    diffs = {c: theirs[c].retriable for c in shared if theirs[c].retriable != by_code(c).retriable}
    assert diffs == KAFKA_PYTHON_RETRIABLE


def test_kafka_python_knows_no_codes_we_lack():
    theirs = _kafka_python_errors()
    assert set(theirs) <= {e.code for e in ALL}
