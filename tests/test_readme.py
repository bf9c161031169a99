"""The README's examples and commands run as written, from a directory outside the checkout, as a new user runs them.

Each Python block runs in its own interpreter and each command in a shell, with the working directory a temporary
folder holding the files they name (tests/data/captures/, traffic.pcapng, frame.bin, ...), so what they import is the
installed kafkaproto, never the checkout's sources. The blocks of "Extending kafkaproto" run in
tests/test_extensions.py, which builds the extension they import. A command that cannot run here (a placeholder host
or interface, a server that runs until stopped) is listed in NOT_RUN with the reason; every other command runs.
"""

import json
import os
import re
import shlex
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from capture_files import pcapng

pytestmark = pytest.mark.above_the_codecs

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
CAPTURES = ROOT / "tests" / "data" / "captures"
EXTENDING = "Extending kafkaproto"
COMMAND_SECTIONS = ("The command line", "Captures")

# Commands that cannot run verbatim here, each with why; tests elsewhere run them with real values.
NOT_RUN = {
    "HOST:PORT": "a placeholder for the user's broker (tests/test_replay.py replays against real brokers)",
    "kafka:9092": "a placeholder host (tests/test_capture_names.py asks a live broker for names)",
    "kafkaproto broker": "runs until stopped (tests/test_broker_config.py and the broker tests start it)",
    "admin partitions --bootstrap-server 127.0.0.1:9092": "needs a broker on 9092 (tests/test_partition_deletion.py)",
    "--extension NAME": "NAME is a placeholder (tests/test_extensions.py loads a built extension)",
    "eth0": "a placeholder interface, and capturing needs privileges (tests/test_cli_capture.py runs --interface)",
    "/var/captures/ring/": "a placeholder folder (tests/test_capture_follow.py follows rings)",
    "--channel 127.0.0.1:9999": "needs a running cluster's control channel there (tests/test_broker_control_channel.py "
                                "runs these commands against one)",
}

def sections():
    """{heading: text} of the README's "## " and "### " sections."""
    parts = re.split(r"^#{2,3} (.+)$", README.read_text(encoding="utf-8"), flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def blocks(text, language):
    return re.findall(rf"```{language}\n(.*?)```", text, re.S)


def commands(text):
    """The command lines of a section's sh blocks, comments stripped."""
    found = []
    for block in blocks(text, "sh"):
        for line in block.splitlines():
            line = re.sub(r"\s+#.*$", "", line).strip()
            if line and not line.startswith("#"):
                found.append(line)
    return found


def pcap_to_pcapng(source, target):
    """The same packets in a pcapng file (the README's traffic.pcapng)."""
    data = source.read_bytes()
    magic = data[:4]
    order = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    nanos = magic in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
    link = struct.unpack(order + "I", data[20:24])[0] & 0xFFFF
    packets, at = [], 24
    while at + 16 <= len(data):
        seconds, fraction, captured, original = struct.unpack(order + "IIII", data[at:at + 16])
        frame = data[at + 16:at + 16 + captured]
        packets.append((0, seconds * 10**9 + fraction * (1 if nanos else 1000), frame, original))
        at += 16 + captured
    target.write_bytes(pcapng(packets, interfaces=((link, 9),)))


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A folder outside the checkout with the files the README's examples name."""
    work = tmp_path_factory.mktemp("readme")
    shutil.copytree(CAPTURES, work / "tests" / "data" / "captures")
    pcap_to_pcapng(CAPTURES / "kafkajs.pcap", work / "traffic.pcapng")
    for name in ("traffic.pcap", "big.pcap", "session.pcap"):
        shutil.copy(CAPTURES / "java-4.3.1.pcap", work / name)
    from kafkaproto import ApiKey, encode_request
    from kafkaproto.messages import FetchRequest, RequestHeader

    fetch = FetchRequest(max_wait_ms=500, min_bytes=1, max_bytes=0xFFFFFF, session_epoch=-1, topics=[
        FetchRequest.FetchTopic(topic_id=__import__("kafkaproto").Uuid(0x8899AABBCCDDEEFF, 0x0123456789ABCDEF),
                                partitions=[FetchRequest.FetchPartition(partition=0, fetch_offset=0x90)])])
    frame = encode_request(RequestHeader(request_api_key=ApiKey.FETCH, request_api_version=16, correlation_id=0xC0,
                                         client_id="readme"), fetch, 16)
    assert any(b >= 0x80 for b in frame)  # a real binary file, not text
    (work / "frame.bin").write_bytes(frame)
    (work / "names.json").write_text(json.dumps({"AAAAAAAAAAAAAAAAAAAAAQ": "orders"}))
    return work


def environment():
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env["PYTHONWARNINGS"] = "error::RuntimeWarning"  # kafkaproto warns when it runs uncompiled from a checkout
    return env


def python_blocks():
    return [(heading, b) for heading, text in sections().items() if heading != EXTENDING
            and not heading.startswith("The partition-deletion") for b in blocks(text, "python")]


@pytest.mark.parametrize("heading, block", python_blocks(), ids=lambda value: value[:30])
def test_readme_python_block_runs(workdir, heading, block):
    result = subprocess.run([sys.executable, "-c", block], cwd=workdir, env=environment(), capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, f"README section {heading!r}:\n{block}\n{result.stderr[-4000:]}"


def readme_commands():
    return [(heading, line) for heading in COMMAND_SECTIONS for line in commands(sections()[heading])]


def stdin_for(line):
    """What a command reading standard input is given."""
    if "--response Fetch 16 -" in line:
        from kafkaproto import encode_response
        from kafkaproto.messages import FetchResponse, ResponseHeader

        return encode_response(ResponseHeader(correlation_id=7), FetchResponse(throttle_time_ms=3), 16)
    return b""


@pytest.mark.parametrize("heading, line", readme_commands(), ids=lambda value: value[:40])
def test_readme_command_runs(workdir, heading, line):
    reason = next((why for needle, why in NOT_RUN.items() if needle in line), None)
    if reason:
        pytest.skip(f"not run verbatim: {reason}")
    assert "..." not in line, f"README section {heading!r} abbreviates a command: {line}"
    assert shlex.split(line)[0] in ("kafkaproto", "kafkaproto-codegen"), line
    result = subprocess.run(["bash", "-c", line], cwd=workdir, env=environment(), input=stdin_for(line),
                            capture_output=True, timeout=600)
    stderr = result.stderr.decode(errors="replace")
    expected = 1 if "--check" in line else 0  # the capture holds errors: --check answers no
    assert result.returncode == expected, \
        f"README section {heading!r}: {line}\nexit {result.returncode}\n{stderr[-4000:]}"
    assert "Traceback" not in stderr, stderr
    assert result.stdout or any(p.stat().st_mtime for p in workdir.iterdir()), line


def test_not_run_entries_are_used():
    """Every NOT_RUN entry still names a README command, so the list cannot keep excuses for lines that are gone."""
    lines = [line for _, line in readme_commands()]
    for needle in NOT_RUN:
        assert any(needle in line for line in lines), f"NOT_RUN names {needle!r}, which no README command has"


def test_source_checkout_defers_to_the_installed_build(tmp_path):
    """`python -c` in a checkout's root imports the installed, compiled build, not the checkout's sources."""
    import kafkaproto

    if not kafkaproto.compiled():
        pytest.skip("the installed build is not compiled")
    checkout = tmp_path / "checkout"
    (checkout / "schemas").mkdir(parents=True)
    (checkout / "setup.py").write_text("")
    shutil.copytree(ROOT / "kafkaproto", checkout / "kafkaproto",
                    ignore=shutil.ignore_patterns("*.so", "*.pyd", "*.c", "__pycache__", "_generated"))
    probe = "import kafkaproto, kafkaproto.messages as m; print(kafkaproto.compiled(), m.__file__)"
    result = subprocess.run([sys.executable, "-c", probe], cwd=checkout, env=environment(), capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    compiled, messages_file = result.stdout.split()
    assert compiled == "True" and not Path(messages_file).is_relative_to(checkout), result.stdout
    module = subprocess.run([sys.executable, "-m", "kafkaproto"], cwd=checkout, env=environment(),
                            capture_output=True, text=True, timeout=120)
    assert module.returncode == 0 and "compiled (Cython)" in module.stdout, module.stdout + module.stderr
