"""kafkaproto.replay on captures whose timestamps or strings are hostile: a connection stamped decades after the one
before, or an answer stamped decades after its request, waits at most max_gap (--max-gap) and says what it waits
for; the text report and the wait lines show a capture's escape sequences escaped, JSON lines keep them exactly.
"""

import io
import json
import re
import subprocess
import sys

import pytest

import capture_files as cf
from kafkaproto.capture import read_capture
from kafkaproto.capture.link import LINKTYPE_ETHERNET
from kafkaproto.messages import (ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, MetadataResponse,
                                 RequestHeader, ResponseHeader)
from kafkaproto.protocol import encode_request, encode_response
from kafkaproto.replay import Plan, Replayer
from kafkaproto.replay.session import MAX_GAP, NO_ANSWER, Pause
from test_capture import T0, Tcp, wire_frame
from test_capture_hostile import HOSTILE_CLIENT, HOSTILE_TOPIC, SHOWN, assert_inert
from test_replay import CAPTURES, OtherBroker, replay_offline

DECADES_NS = 2**32 * 10**9  # 136 years: as far as a classic pcap's seconds reach past 1970
WHOLE = 4_294_967_296.0  # the same gap in seconds, as a Pause carries it


def exchange(tcp, correlation_id, version, request, response, client_id):
    header = RequestHeader(request_api_key=request.api_key, request_api_version=version,
                           correlation_id=correlation_id, client_id=client_id)
    return (tcp.send(True, encode_request(header, request, version)),
            tcp.send(False, encode_response(ResponseHeader(correlation_id=correlation_id), response, version)))


def timed(segments, start_ns, step_ns=1000):
    return [(start_ns + i * step_ns, seg) for i, seg in enumerate(segments)]


def pcapng_of(timed_segments):
    """A pcapng file (nanosecond timestamps, 64 bits: decades away fit) of (time, segment) pairs."""
    return cf.pcapng([(0, at, *wire_frame(seg)) for at, seg in timed_segments], interfaces=((LINKTYPE_ETHERNET, 9),))


def metadata_naming(topic):
    return (MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)]),
            MetadataResponse(topics=[MetadataResponse.MetadataResponseTopic(
                name=topic, error_code=0, partitions=[MetadataResponse.MetadataResponsePartition(
                    partition_index=0, leader_id=1, replica_nodes=[1], isr_nodes=[1])])]))


def decades_apart(client_id="early", topic="orders", late_client_id="late"):
    """Two connections: ApiVersions and a Metadata answer naming topic at T0; a Metadata request on a second
    connection stamped 136 years later."""
    first, second = Tcp(client=("10.0.0.2", 40000)), Tcp(client=("10.0.0.3", 40001))
    segs = first.handshake()
    for part in exchange(first, 1, 3, ApiVersionsRequest(client_software_name="c", client_software_version="1"),
                         ApiVersionsResponse(api_keys=[]), client_id):
        segs += part
    for part in exchange(first, 2, 12, *metadata_naming(topic), client_id):
        segs += part
    segs += first.close()
    later = second.handshake()
    for part in exchange(second, 1, 12, MetadataRequest(topics=[]), MetadataResponse(), late_client_id):
        later += part
    later += second.close()
    return pcapng_of(timed(segs, T0) + timed(later, T0 + DECADES_NS))


def answered_decades_later():
    """One Metadata request whose answer is stamped 136 years after it."""
    tcp = Tcp()
    handshake = tcp.handshake()
    request, response = exchange(tcp, 1, 12, MetadataRequest(topics=[]), MetadataResponse(), "c")
    return pcapng_of(timed(handshake + request, T0) + timed(response + tcp.close(), T0 + DECADES_NS))


def drive(plan, broker, **options):
    """(the finished Replayer, [(time, Pause)] of the waits it announced), driven offline (test_replay's)."""
    pauses = []
    options.setdefault("speed", 1.0)  # the capture's pace, the Replayer's default
    return replay_offline(plan, broker, pauses=pauses, **options), pauses


def test_a_connection_stamped_decades_later_waits_at_most_max_gap():
    """Without a limit the replayer would wait the 136 years the capture claims; by default the gap is 10 s, with
    max_gap=3 at twice the pace 1.5 s; each wait is announced once, naming the step, the capture's gap and that it
    was shortened."""
    plan = Plan.of(read_capture(io.BytesIO(decades_apart())))
    assert [s.exchange.api_name for s in plan.steps] == ["ApiVersions", "Metadata", "Metadata"]
    late = plan.steps[2]
    for options, waited in (({"max_gap": None}, WHOLE), ({}, MAX_GAP), ({"max_gap": 3, "speed": 2.0}, 1.5)):
        replayer, pauses = drive(plan, OtherBroker(plan), **options)
        result = replayer.results[late.index]
        assert result.status == "answered" and result.sent == pytest.approx(waited, abs=1e-3), options
        ((when, pause),) = pauses
        assert isinstance(pause, Pause) and pause.step is late and when == replayer.results[1].answered
        assert pause.seconds == pytest.approx(waited, abs=1e-3)
        assert pause.gap == pytest.approx(WHOLE, abs=1e-3) and pause.shortened == ("max_gap" not in options or
                                                                                   options["max_gap"] is not None)


def test_waits_the_capture_really_had_are_kept_and_announced_when_long():
    """A real capture's pauses (kafkajs waits 5 s before joining its group) are kept whole under the default
    max_gap, and announced, not shortened; one with none as long (kafka-python's) announces nothing."""
    plan = Plan.of(read_capture(CAPTURES[[p.stem for p in CAPTURES].index("kafkajs")]))
    _, pauses = drive(plan, OtherBroker(plan), speed=1.0)
    assert pauses and all(not p.shortened and 1.0 <= p.seconds <= p.gap + 1e-6 < MAX_GAP for _, p in pauses)
    assert max(p.gap for _, p in pauses) > 5
    quiet = Plan.of(read_capture(CAPTURES[[p.stem for p in CAPTURES].index("kafka-python")]))
    assert drive(quiet, OtherBroker(quiet), speed=1.0)[1] == []


def test_an_answer_stamped_decades_later_is_awaited_for_at_most_max_gap_more():
    """The captured latency sets how long an answer may take (plus answer_timeout); stamped 136 years late, it
    counts as max_gap, so a target that never answers is given up on in max_gap + answer_timeout. (The reader
    closes a connection idle for 10 minutes by default, which would leave the request unanswered: here it is told
    not to, as exchange rows from elsewhere may pair them.)"""
    plan = Plan.of(read_capture(io.BytesIO(answered_decades_later()), idle_ns=2 * DECADES_NS))
    (step,) = plan.steps
    assert step.exchange.latency_ns == DECADES_NS - 3000  # the request is the fourth packet, 1 µs apart
    silent = OtherBroker(plan, lambda step, attempt: None)
    replayer, pauses = drive(plan, silent, max_gap=4, answer_timeout=6)
    result = replayer.results[0]
    assert result.status == NO_ANSWER and result.answered - result.sent == pytest.approx(10, abs=1e-6)
    assert pauses == []
    unbounded, _ = drive(plan, OtherBroker(plan, lambda step, attempt: None), max_gap=None, answer_timeout=6)
    assert unbounded.results[0].answered - unbounded.results[0].sent == pytest.approx(WHOLE + 6, rel=1e-9)


@pytest.mark.parametrize("max_gap", [-1, float("inf"), float("nan")])
def test_max_gap_must_be_seconds(max_gap):
    with pytest.raises(ValueError, match="max_gap must be a number of seconds"):
        Replayer(Plan(), max_gap=max_gap)


# ---- the command line, against this project's broker ------------------------------------------------------------

@pytest.fixture(scope="module")
def broker():
    from kafkaproto.broker import Broker

    with Broker({"auto.create.topics.enable": "false"}) as running:
        yield running


def replay_command(*args, cwd, timeout=120):
    """The console command; timeout bounds what "promptly" means (a replay that waited for the capture's 136 years
    fails here)."""
    return subprocess.run([sys.executable, "-m", "kafkaproto", "replay", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, timeout=timeout)


def wait_line(client_id="late"):
    """What the one wait of the decades-apart capture is said as: the seconds waited, the pace, the limit."""
    return re.compile(r"replay: waiting (\d+\.\d) s to send request 2 \(Metadata v12 on connection 1, client id "
                      rf"\"{re.escape(client_id)}\"\)(.*): the capture sent it 4,294,967,296 s \(136 years\) after "
                      r"the request before, shortened to (\S+) s \(--max-gap\)")


@pytest.mark.parametrize("options, pace, limit", [(["--speed", "4"], " at 4 times the capture's pace", "10"),
                                                  (["--max-gap", "2"], "", "2")],
                         ids=["default-max-gap", "max-gap-2"])
def test_the_command_line_waits_at_most_max_gap_and_says_what_for(broker, tmp_path, options, pace, limit):
    """The decades-apart capture replays within the timeout, and standard error holds one line for the one wait of
    a second or more: what it waits for, how long, the capture's gap and the limit it was shortened to."""
    path = tmp_path / "decades.pcapng"
    path.write_bytes(decades_apart())
    run = replay_command(path, "--bootstrap-server", broker.bootstrap_servers, "--no-setup", *options, cwd=tmp_path)
    assert run.returncode in (0, 1), run.stderr  # the capture's made-up answers may well differ from the broker's
    assert "3 requests on 2 connections; 3 answers compared" in run.stdout
    (line,) = run.stderr.splitlines()
    found = wait_line().fullmatch(line)
    assert found, line
    waited = float(found.group(1))
    assert 1.0 <= waited <= float(limit) / (4 if pace else 1) and found.group(2) == pace and found.group(3) == limit


def test_bad_max_gaps_are_refused(tmp_path):
    path = tmp_path / "decades.pcapng"
    path.write_bytes(decades_apart())
    for value in ("-1", "soon", "inf"):
        run = replay_command(path, "--bootstrap-server", "127.0.0.1:9", "--max-gap", value, cwd=tmp_path)
        assert run.returncode == 2 and f"--max-gap: {value!r} is not a number of seconds (0 or more)" in run.stderr


def test_the_text_report_and_wait_lines_escape_what_the_capture_says(broker, tmp_path):
    """A client id and a topic holding escape sequences: the topic the setup could not create is noted escaped,
    the wait line names the client escaped, nothing raw reaches either stream; JSON lines keep the topic exactly."""
    path = tmp_path / "hostile.pcapng"
    path.write_bytes(decades_apart(topic=HOSTILE_TOPIC, late_client_id=HOSTILE_CLIENT))
    run = replay_command(path, "--bootstrap-server", broker.bootstrap_servers, "--max-gap", "1.5", cwd=tmp_path)
    assert run.returncode in (0, 1), run.stderr
    assert_inert(run.stdout, "the text report")
    assert_inert(run.stderr, "standard error")
    (line,) = run.stderr.splitlines()
    assert wait_line(SHOWN[HOSTILE_CLIENT]).fullmatch(line), line
    note = next(line for line in run.stdout.splitlines() if line.startswith("note: "))
    assert note.startswith(f"note: {broker.bootstrap_servers}: could not create {SHOWN[HOSTILE_TOPIC]}: "), note
    jsonl = replay_command(path, "--bootstrap-server", broker.bootstrap_servers, "--speed", "max", "--format",
                           "jsonl", cwd=tmp_path)
    summary = json.loads(jsonl.stdout.splitlines()[-1])
    assert any(note.startswith(f"{broker.bootstrap_servers}: could not create {HOSTILE_TOPIC}: ")
               for note in summary["notes"]), summary["notes"]

