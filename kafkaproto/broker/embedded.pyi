# What editors and type checkers see of kafkaproto.broker.embedded.
import argparse
import asyncio
import logging
import os
import re
import subprocess as _subprocess
from types import TracebackType
from typing import Any, Callable, Mapping

from typing_extensions import Self

from .config import BrokerConfig
from .faults import Control, Fault
from .. import errors as _errors
from .state.telemetry import Pushed
from ..uuid import Uuid

log: logging.Logger
STARTED: re.Pattern[str]
CHANNEL: re.Pattern[str]
DESCRIPTION: str

async def serve(config: BrokerConfig, ready: Callable[[Any], object] | None = None,
                stop: asyncio.Event | None = None) -> None:
    """Serve until stop (an asyncio.Event) is set; ready(server) is called once listening."""

class Broker:
    """A broker on a free port of 127.0.0.1 with its data in a temporary directory (or log_dir), for tests.

        with Broker() as broker:
            KafkaProducer(bootstrap_servers=broker.bootstrap_servers)

    subprocess=True runs it as ``python -m kafkaproto.broker`` (so it can be killed);
    otherwise it runs on an event loop in a thread of this process.
    """

    overrides: dict[str, str]
    log_dir: str
    subprocess: bool
    host: str | None
    port: int | None
    ports: dict[str, int]  # listener name -> port (the in-process broker; the first listener's is self.port)
    process: _subprocess.Popen[str] | None
    nodes: dict[int, tuple[str, int]]  # node id -> (host, port) of each broker of the cluster (in-process)
    control_address: str | None  # "host:port" of its control channel, when it has one
    def __init__(self, overrides: Mapping[str, str] | None = None, *, log_dir: str | os.PathLike[str] | None = None,
                 subprocess: bool = False, nodes: int | None = None) -> None: ...
    def leader(self, topic: str | Uuid, partition: int = 0) -> tuple[int, int]:
        """(leader node id, leader epoch) of a partition; -1 when none runs."""
    def move_leader(self, topic: str | Uuid, partition: int, node: int) -> None:
        """Make node lead the partition (a new leader epoch)."""
    def coordinator(self, kind: str, key: str | None = None) -> int:
        """The broker coordinating key: a group id ("group"), a transactional id ("transaction") or a share
        partition's ``group:topic id:partition`` ("share"); no key when the internal topic has one partition."""
    def move_coordinator(self, kind: str, node: int, key: str | None = None) -> None:
        """Move key's coordinator, and every key of its internal topic's partition, to node."""
    def stop_node(self, node: int) -> None:
        """Stop a broker of the cluster as if its process died."""
    def start_node(self, node: int) -> None:
        """Start a stopped broker again, on the addresses it had."""
    @property
    def bootstrap_servers(self) -> str:
        """"host:port" of its first listener, for a client's bootstrap.servers."""
    def start(self, timeout: float = 30) -> Self: ...
    def add_fault(self, error: _errors.ErrorCode, *, api_keys: list[int] | None = None, node: int | None = None,
                  topic: str | Uuid | None = None, partition: int | None = None, budget: int | None = None,
                  delay_ms: int = 0) -> Fault:
        """Answer error to matching requests until removed or budget requests were answered (faults.py)."""
    def control(self, function: Callable[[Any], object], *, api_keys: list[int] | None = None,
                times: int | None = None) -> Control:
        """Have function(request) see each request first: answer it, delay it, drop it, or let it go on."""
    def clear_faults(self) -> None: ...
    def pushed_telemetry(self, client_instance_id: Uuid | None = None, timeout: float = 10) -> list[Pushed]:
        """The client metrics this broker kept (kafkaproto.client.telemetry.enable=true), oldest first: of one
        client instance, or of every one; each one's data decompressed (an OpenTelemetry MetricsData message).
        In-process brokers only, running or stopped."""
    def kill(self) -> None:
        """SIGKILL the subprocess (no clean shutdown), as a crash would."""
    def stop(self) -> None: ...
    def cleanup(self) -> None: ...
    def __enter__(self) -> Self: ...
    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None: ...

def add_arguments(parser: argparse.ArgumentParser) -> None: ...
def run(args: argparse.Namespace) -> int:
    """Serve until SIGINT or SIGTERM; the exit status: 0 after a clean stop, 2 when the settings are wrong or a
    listener cannot be opened (nothing was served), 1 for any other failure."""
def main(argv: list[str] | None = None) -> int: ...
