"""Requests that wait (dispatch.Wait): asked again when what they wait on changes, and answered once their time is
up however often they are woken (server.Server._answer)."""

import asyncio
import time

import pytest

from kafkaproto.broker import server as server_module
from kafkaproto.broker.config import BrokerConfig
from kafkaproto.broker.outcomes import Wait
from kafkaproto.broker.state import BrokerState

pytestmark = pytest.mark.above_the_codecs


class _Context:
    final = False
    regions = None


class _Event:
    body = None
    version = 0


class _Stream:
    def __init__(self):
        self.lost = asyncio.get_running_loop().create_future()

    def send_held(self):
        pass


def test_a_request_woken_at_every_turn_is_answered_once_its_time_is_up(tmp_path, monkeypatch):
    """On a busy broker something changes the state at every turn of the event loop (heartbeats, commits,
    acknowledgements), and each change wakes the requests waiting on nothing in particular. A 200 ms wait is still
    answered, as final, soon after its 200 ms."""
    asked = []

    def dispatch(ctx, body):
        asked.append(ctx.final)
        return "the answer" if ctx.final else Wait(200)
    monkeypatch.setattr(server_module, "dispatch", dispatch)
    state = BrokerState(BrokerConfig({"log.dirs": str(tmp_path)}))
    try:
        async def run():
            server = server_module.Server(state)
            loop = asyncio.get_running_loop()
            busy = True

            def change():  # a change of the state at every turn of the loop
                server._waiting.changed()
                if busy:
                    loop.call_soon(change)
            loop.call_soon(change)
            started = time.monotonic()
            try:
                answer = await asyncio.wait_for(server._answer(_Context(), _Event(), "test", _Stream()), 10)
            finally:
                busy = False
            return answer, time.monotonic() - started

        answer, took = asyncio.run(run())
    finally:
        state.close()
    assert answer == "the answer" and asked[-1] is True
    assert took < 5, f"a 200 ms wait answered after {took:.1f} s"
