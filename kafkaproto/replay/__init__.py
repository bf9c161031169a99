"""Replaying a captured Kafka session against a live broker, with every answer compared.

    from kafkaproto.capture import read_capture
    from kafkaproto import replay

    plan = replay.Plan.of(read_capture("session.pcapng"))         # the client side of every connection
    target = asyncio.run(replay.replay(plan, "localhost:9092"))     # sent again, in the captured order
    report = replay.compare_with_capture(plan, target)
    report.divergences                                              # [Divergence(connection, step, api, ...)]

The parts, each usable alone:

- ``Plan`` (plan.py): a capture's exchanges as steps to send, the order they keep across connections, the topics
  to create first, and the connections that cannot be replayed with the reason (TLS, SCRAM or Kerberos, a capture
  that joined late, lost bytes, brokers talking among themselves).
- ``Values`` (rewrite.py): what a target made up where the capture has its own broker's values (producer ids and
  epochs, topic IDs, member ids and generations, fetch sessions, nodes, offsets), learned from the answers that
  introduced them; the capture's requests rewritten with them.
- ``Replayer`` (session.py): one replay against one broker, without I/O: what to send where and when, and the
  bytes that came back. ``replay`` and ``replay_both`` (network.py) drive it with asyncio sockets, once each target
  takes a connection (``Unreachable`` otherwise); a test harness can drive it with its own.
- ``compare_with_capture`` and ``compare_targets`` (report.py): the answers compared under kafkaproto.compare's
  rules and the replay's own (``RULES``), into a ``Report`` of ``Divergence`` rows.

Everything but network.py does no I/O.
"""

from .network import Unreachable, parse_address, replay, replay_both
from .plan import Plan, Step, TopicSetup
from .report import RULES, Divergence, Report, compare_targets, compare_with_capture
from .rewrite import Values
from .session import OUTCOMES, Replayer, StepResult

__all__ = ["Divergence", "OUTCOMES", "Plan", "RULES", "Replayer", "Report", "Step", "StepResult", "TopicSetup",
           "Unreachable", "Values", "compare_targets", "compare_with_capture", "parse_address", "replay",
           "replay_both"]
