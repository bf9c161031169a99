"""pytest fixtures for testing against a kafkaproto broker (installed as a pytest plugin).

    def test_roundtrip(kafkaproto_broker):
        producer = KafkaProducer(bootstrap_servers=kafkaproto_broker.bootstrap_servers)

``kafkaproto_broker`` is one broker for the whole test session, in this process,
on a free port of 127.0.0.1 with its data in a temporary directory.
"""

import pytest


@pytest.fixture(scope="session")
def kafkaproto_broker():
    from kafkaproto.broker import Broker

    with Broker() as broker:
        yield broker
