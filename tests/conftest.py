import os
import sys

import pytest
from hypothesis import HealthCheck, settings

from extension_build import built_example, extension, without_extensions  # noqa: F401 - fixtures

from kafka_jvm import (
    GOLDEN,
    GOLDEN_UNSTABLE,
    KAFKA_VERSIONS,
    KafkaBroker,
    KafkaUnavailable,
    Oracle,
    unavailable,
)

# CI runs a fixed, repeatable set of examples; locally, hypothesis explores.
settings.register_profile(
    "ci", derandomize=True, database=None, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile(
    "dev", deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile("ci" if os.environ.get("CI") else os.environ.get("HYPOTHESIS_PROFILE", "dev"))

# Hypothesis's pytest plugin wraps a parametrized test's settings once per parameter, and
# reading a setting walks that chain: several hundred parameters need a deeper stack.
sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))


_oracles = {}


def _oracle(version):
    """One Oracle.java process per pinned version for the whole run."""
    if version not in _oracles or not _oracles[version].alive:
        try:
            _oracles[version] = Oracle(version)
        except KafkaUnavailable as exc:
            unavailable(str(exc))
    return _oracles[version]


# Function-scoped so that a test after one whose oracle died gets a fresh one.
@pytest.fixture(params=KAFKA_VERSIONS, ids=lambda v: f"kafka-{v}")
def kafka_oracle(request):
    """Apache Kafka's codec (tests/kafka/Oracle.java) running on one pinned version's jars."""
    return _oracle(request.param)


@pytest.fixture
def kafka_oracles():
    """Kafka's codec on every pinned version."""
    return [_oracle(v) for v in KAFKA_VERSIONS]


def pytest_unconfigure(config):
    for oracle in _oracles.values():
        oracle.close()


def pytest_terminal_summary(terminalreporter):
    """How many (message, version) pairs each Kafka jar confirmed, and which it does not define."""
    if not any(GOLDEN.values()):
        return
    from test_kafka_messages import PAIRS

    write = terminalreporter.write_line
    terminalreporter.section("golden vectors from Apache Kafka")
    for version, checked in GOLDEN.items():
        oracle = _oracles.get(version)
        if oracle is None or not oracle.alive:
            continue
        absent = [f"{c.__name__} v{v}" for c, v in PAIRS if v not in oracle.versions(c.__name__)[0]]
        unstable = GOLDEN_UNSTABLE[version]
        agree = sorted(f"{n} v{v}" for (n, v), problem in unstable.items() if problem is None)
        differ = sorted(f"{n} v{v} ({problem})" for (n, v), problem in unstable.items() if problem)
        write(f"Kafka {version}: {len(checked)} (message, version) pairs verified.")
        write(f"  Unstable in this release, reported only: {len(agree)} agree; differ: {'; '.join(differ) or 'none'}")
        write(f"  Not in this release: {', '.join(absent) or 'none'}")


@pytest.fixture(scope="session", params=KAFKA_VERSIONS, ids=lambda v: f"kafka-{v}")
def kafka_broker(request, tmp_path_factory):
    """A live single-node KRaft broker of each pinned version (see kafka_jvm.KafkaBroker)."""
    try:
        broker = KafkaBroker(request.param, tmp_path_factory.mktemp(f"kafka-{request.param}"))
    except KafkaUnavailable as exc:
        unavailable(str(exc))
    yield broker
    broker.stop()
