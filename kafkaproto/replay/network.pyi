# What editors and type checkers see of kafkaproto.replay.network.
import ssl as _ssl
from typing import Callable

from .plan import Plan
from .session import Pause, Replayer

class Unreachable(ConnectionError):
    """A target that does not take a connection (refused, unknown host, no answer, a TLS handshake that fails):
    nothing was replayed."""

def parse_address(text: str) -> tuple[str, int]:
    """(host, port) of "host:port" ("[::1]:9092" for IPv6)."""
async def check_reachable(target: str, *, ssl: _ssl.SSLContext | None = None, timeout: float = ...) -> None:
    """Open a connection to target ("host:port") and close it again; Unreachable, naming it, if that fails."""
async def replay(plan: Plan, bootstrap: str, *, ssl: _ssl.SSLContext | None = None,
                 watch: Callable[[Replayer, str], object] | None = None,
                 on_wait: Callable[[str, Pause], object] | None = None, check: bool = True,
                 speed: float | None = ..., max_gap: float | None = ..., answer_timeout: float = ...,
                 settle_timeout: float = ..., setup: bool = ...) -> Replayer:
    """Replay plan against the broker at bootstrap ("host:port"); options as for Replayer. Returns the finished
    Replayer (its results, values and setup). Raises Unreachable, having sent nothing, when the broker does not
    take a connection (check=False: try anyway, each connection's failure a result). watch: called with the
    Replayer and bootstrap before it starts (to follow its progress). on_wait: called with bootstrap and a
    session.Pause as each long wait for the capture's pace begins."""
async def replay_both(plan: Plan, first: str, second: str, *, ssl: _ssl.SSLContext | None = None,
                      watch: Callable[[Replayer, str], object] | None = None,
                      on_wait: Callable[[str, Pause], object] | None = None, check: bool = True,
                      speed: float | None = ..., max_gap: float | None = ..., answer_timeout: float = ...,
                      settle_timeout: float = ..., setup: bool = ...) -> list[Replayer]:
    """The same plan against two brokers at once (each with its own Replayer), once both take a connection."""
async def drive(replayer: Replayer, bootstrap: tuple[str, int], *, ssl: _ssl.SSLContext | None = None,
                on_wait: Callable[[Pause], object] | None = None) -> None:
    """Carry out a Replayer's actions until it is finished; bootstrap is (host, port). on_wait: called with the
    session.Pause of each long wait the replayer announces."""
