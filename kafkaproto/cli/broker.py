"""kafkaproto broker: run the single-node broker (kafkaproto.broker) from the command line."""

from ..broker.embedded import DESCRIPTION, add_arguments, run

__all__ = ["DESCRIPTION", "add_arguments", "run"]
