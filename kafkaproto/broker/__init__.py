"""A single-node Apache Kafka broker on kafkaproto's codecs, for tests and protocol experiments.

    from kafkaproto.broker import Broker
    with Broker() as broker:                       # a free port, a temporary data directory
        use(broker.bootstrap_servers)              # "127.0.0.1:54321"

    kafkaproto broker [server.properties] [--override key=value ...]

Protocol logic lives in ``handlers/`` (one module per API, no I/O), state in
``state/`` (metadata log, partition logs, producers), sockets in ``server.py``.
"""

from .config import BrokerConfig, ConfigError
from .embedded import Broker, serve

__all__ = ["Broker", "BrokerConfig", "ConfigError", "serve"]
