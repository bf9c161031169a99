import os
import sys

import pytest
from hypothesis import HealthCheck, settings

from kafka_jvm import KAFKA_VERSIONS, KafkaBroker, KafkaUnavailable, Oracle, kafka_lib, unavailable

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


@pytest.fixture(scope="session", params=KAFKA_VERSIONS, ids=lambda v: f"kafka-{v}")
def kafka_oracle(request):
    """Apache Kafka's codec (tests/kafka/Oracle.java) running on the pinned version's jars."""
    try:
        oracle = Oracle(request.param)
    except KafkaUnavailable as exc:
        unavailable(str(exc))
    yield oracle
    oracle.close()


@pytest.fixture(scope="session", params=KAFKA_VERSIONS, ids=lambda v: f"kafka-{v}")
def kafka_broker(request, tmp_path_factory):
    """A live single-node KRaft broker of each pinned version (see kafka_jvm.KafkaBroker)."""
    try:
        kafka_lib(request.param)
    except KafkaUnavailable as exc:
        unavailable(str(exc))
    broker = KafkaBroker(request.param, tmp_path_factory.mktemp(f"kafka-{request.param}"))
    yield broker
    broker.stop()
