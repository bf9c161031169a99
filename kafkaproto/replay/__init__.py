"""Replaying captured Kafka sessions against a live broker, and comparing every answer."""

from .network import replay, replay_both
from .plan import Plan
from .session import Replayer, StepResult

__all__ = ["Plan", "Replayer", "StepResult", "replay", "replay_both"]
