"""kafkaproto's broker with its segment writes skipped: a Produce sink for benchmarks/broker.py.

It answers every request as the broker does but stores no record bytes, so it costs the machine as little as a
broker can. What a producer manages against it is that producer's own ceiling on this machine: a case where
both real brokers reach it is set by the client, not by the broker. Fetch from it returns unwritten bytes, so
it is only ever produced to.

    python benchmarks/produce_sink.py --override listeners=PLAINTEXT://127.0.0.1:9092 ...
"""

import sys

from kafkaproto.broker.embedded import main
from kafkaproto.broker.state import log

log.Segment.write = lambda self, data, position: None

if __name__ == "__main__":
    sys.exit(main())
