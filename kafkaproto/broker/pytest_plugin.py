"""pytest fixtures for testing against a kafkaproto broker (installed as a pytest plugin).

    def test_roundtrip(kafkaproto_broker):
        producer = KafkaProducer(bootstrap_servers=kafkaproto_broker.bootstrap_servers)

``kafkaproto_broker`` is one broker for the whole test session, in this process,
on a free port of 127.0.0.1 with its data in a temporary directory.
``kafkaproto_faults`` is the same broker for one test: the faults and controls
the test installs on it are removed when the test ends.

    def test_producer_retries(kafkaproto_faults):
        fault = kafkaproto_faults.add_fault(errors.NOT_LEADER_OR_FOLLOWER, api_keys=[ApiKey.PRODUCE], budget=2)
        ...
        assert fault.fired == 2
"""

import pytest


@pytest.fixture(scope="session")
def kafkaproto_broker():
    from kafkaproto.broker import Broker

    with Broker() as broker:
        yield broker


@pytest.fixture
def kafkaproto_faults(kafkaproto_broker):
    yield kafkaproto_broker
    kafkaproto_broker.clear_faults()
