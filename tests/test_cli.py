"""The kafkaproto command: decode frames given every way a person debugging traffic has them."""

import base64
import io
import json
import subprocess
import sys

import pytest

import kafkaproto
from kafkaproto import encode_request, encode_response, records
from kafkaproto.__main__ import main
from kafkaproto.messages import (
    ApiVersionsRequest,
    MetadataResponse,
    ProduceRequest,
    RequestHeader,
    ResponseHeader,
)

HEADER = RequestHeader(request_api_key=18, request_api_version=3, correlation_id=7, client_id="cli-test")
FRAME = encode_request(HEADER, ApiVersionsRequest(client_software_name="x", client_software_version="1"), 3)


def run(capsys, *argv, stdin=None, monkeypatch=None):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


class Stdin:
    """Standard input holding these bytes, a pipe or a terminal."""

    def __init__(self, data=b"", tty=False):
        self.buffer = io.BytesIO(data)
        self.tty = tty

    def isatty(self):
        return self.tty


# A frame as a capture or a socket hands it out: bytes of every value, 0x80 and above included.
BINARY = encode_request(RequestHeader(request_api_key=18, request_api_version=3, correlation_id=0xC0FFEE,
                                      client_id="cli-\u00e9"),
                        ApiVersionsRequest(client_software_name="x", client_software_version="1"), 3)


@pytest.mark.parametrize("text", [FRAME.hex(), FRAME[4:].hex(), " ".join(f"{b:02x}" for b in FRAME),
                                  base64.b64encode(FRAME).decode(), "0x" + FRAME.hex()])
def test_decode_a_request_written_any_way(capsys, text):
    code, out, _ = run(capsys, "decode", text)
    assert code == 0
    got = json.loads(out)
    assert (got["api"], got["version"], got["header"]["correlation_id"]) == ("ApiVersions", 3, 7)
    assert got["request"]["client_software_name"] == "x"


def test_decode_from_a_file_and_stdin(capsys, tmp_path, monkeypatch):
    binary = tmp_path / "frame.bin"
    binary.write_bytes(FRAME)
    assert json.loads(run(capsys, "decode", str(binary))[1])["api"] == "ApiVersions"
    monkeypatch.setattr(sys, "stdin", type("In", (), {"buffer": __import__("io").BytesIO(FRAME.hex().encode())}))
    assert json.loads(run(capsys, "decode", "--compact")[1])["header"]["client_id"] == "cli-test"


def test_decode_a_response_by_api_name_or_key_with_records_spelled_out(capsys):
    body = MetadataResponse(topics=[MetadataResponse.MetadataResponseTopic(name="t", topic_id=kafkaproto.Uuid(1, 2))])
    frame = encode_response(ResponseHeader(correlation_id=3), body, 12)
    for api in ("Metadata", "MetadataResponse", "3"):
        code, out, _ = run(capsys, "decode", "--response", api, "12", frame.hex())
        got = json.loads(out)
        assert code == 0 and got["response"]["topics"][0]["topic_id"] == str(kafkaproto.Uuid(1, 2))

    builder = records.RecordBatchBuilder(compression="gzip")
    builder.append(b"k", b"value", headers=[("h", b"1")], timestamp=5)
    produce = ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
        name="t", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=builder.build())])])
    header = RequestHeader(request_api_key=0, request_api_version=9, correlation_id=1, client_id=None)
    code, out, _ = run(capsys, "decode", encode_request(header, produce, 9).hex())
    (batch,) = json.loads(out)["request"]["topic_data"][0]["partition_data"][0]["records"]
    assert batch["compression"] == "gzip"
    assert batch["records"][0]["value"] == base64.b64encode(b"value").decode()
    assert batch["records"][0]["headers"] == [{"key": "h", "value": base64.b64encode(b"1").decode()}]


def test_errors_are_one_line_not_tracebacks(capsys):
    # Exit status 2: the command could not run (bad input, a missing file, an unknown name).
    code, out, err = run(capsys, "decode", "zz-not-a-frame")
    assert code == 2 and err.startswith("kafkaproto: error: ") and "Traceback" not in err
    assert err.count("\n") == 1 and out == ""
    code, _, err = run(capsys, "decode", "--response", "NoSuchApi", "1", FRAME.hex())
    assert code == 2 and "NoSuchApi" in err
    code, _, err = run(capsys, "decode", "--size-prefix", "yes", FRAME[4:].hex())
    assert code == 2 and "size" in err
    code, _, err = run(capsys, "decode", "--response", "Fetch", "x", FRAME.hex())
    assert (code, err) == (2, "kafkaproto: error: --response takes an API and a version number, not 'x'\n")
    # what the user or a file gave is shown inert: a terminal's escape sequence in it is written as an escape
    code, _, err = run(capsys, "decode", "zz\x1b[2J\u202e")
    assert code == 2 and err.endswith("zz\\x1b[2J\\u202e\n") and "\x1b" not in err


def test_version_flag(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out.strip() == f"kafkaproto {kafkaproto.__version__}"


def test_a_closed_pipe_is_not_an_error(tmp_path):
    # Run outside the checkout: `python -m` puts the working directory first on sys.path.
    proc = subprocess.run(f"{sys.executable} -m kafkaproto apis | head -1", shell=True, capture_output=True,
                          text=True, check=True, cwd=tmp_path)
    assert proc.stdout.startswith(" key") and proc.stderr == ""


@pytest.mark.parametrize("frame", [BINARY, BINARY[4:]], ids=["size-prefixed", "bare"])
def test_decode_a_binary_file_or_standard_input(capsys, tmp_path, monkeypatch, frame):
    assert any(b >= 0x80 for b in frame)
    path = tmp_path / "frame.bin"
    path.write_bytes(frame)
    code, out, err = run(capsys, "decode", str(path), "--compact")
    assert (code, err) == (0, "") and out.count("\n") == 1
    assert json.loads(out)["header"] == {"request_api_key": 18, "request_api_version": 3,
                                         "correlation_id": 0xC0FFEE, "client_id": "cli-\u00e9"}
    for argv in (["decode"], ["decode", "-"]):
        monkeypatch.setattr(sys, "stdin", Stdin(frame))
        code, out, _ = run(capsys, *argv)
        assert code == 0 and json.loads(out)["header"]["correlation_id"] == 0xC0FFEE


def test_a_file_of_hex_or_base64_text_is_read_as_text(capsys, tmp_path):
    wrapped = "\n".join(BINARY.hex()[i:i + 32] for i in range(0, 2 * len(BINARY), 32)) + "\n"
    encoded = base64.encodebytes(BINARY).decode()  # lines of 76 characters
    for name, text in (("frame.hex", wrapped), ("frame.b64", encoded)):
        (tmp_path / name).write_text(text)
        code, out, err = run(capsys, "decode", str(tmp_path / name))
        assert (code, err) == (0, "") and json.loads(out)["header"]["correlation_id"] == 0xC0FFEE
    code, _, err = run(capsys, "decode", "--encoding", "hex", str(tmp_path / "frame.b64"))
    assert code == 2 and err == f"kafkaproto: error: {tmp_path / 'frame.b64'} is not hex text\n"
    notes = tmp_path / "notes.txt"  # text, but not a frame's: said so, not read as a frame's own bytes
    notes.write_text(f"the frame: {BINARY.hex()}, caf\u00e9\n")
    code, _, err = run(capsys, "decode", str(notes))
    assert (code, err) == (2, f"kafkaproto: error: {notes} holds text that is neither hex nor base64\n")


def test_an_argument_that_is_not_a_file_is_hex_or_base64_text(capsys):
    code, out, err = run(capsys, "decode", "zz-not-a-frame")
    assert (code, out) == (2, "")
    assert err == "kafkaproto: error: no such file, and not hex or base64 text: zz-not-a-frame\n"


@pytest.mark.parametrize("name", ["frame.bin", "captures/frame", "../frame", "ab/cd/AAAAAA"])
def test_a_missing_file_is_named(capsys, tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ab" / "cd").mkdir(parents=True)  # a path that is also base64 text, in a folder that exists
    code, out, err = run(capsys, "decode", name, "--compact")
    assert (code, out, err) == (2, "", f"kafkaproto: error: no such file: {name}\n")


def test_a_folder_is_not_a_frame(capsys, tmp_path):
    code, _, err = run(capsys, "decode", str(tmp_path))
    assert code == 2 and err == f"kafkaproto: error: {tmp_path} is a folder, not a file\n"


def test_decode_from_a_terminal_says_what_to_give(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", Stdin(tty=True))
    code, out, err = run(capsys, "decode")
    assert (code, out) == (2, "") and "give a frame" in err and err.count("\n") == 1


def test_an_empty_input_says_so(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", Stdin(b"\n"))
    assert run(capsys, "decode") == (2, "", "kafkaproto: error: standard input is empty\n")


def test_a_frame_shorter_than_its_size_prefix_says_so(capsys):
    # The README's frame, cut short: read without a size prefix it would be Produce v32, which does not exist.
    code, out, err = run(capsys, "decode", "0000002000120003000000")
    assert (code, out) == (2, "")
    assert err == "kafkaproto: error: the frame's size prefix says 32 bytes but 7 follow\n"
    # A size-prefixed frame cut short, in binary, hex and base64.
    for text in (FRAME[:-3].hex(), base64.b64encode(FRAME[:-3]).decode()):
        code, _, err = run(capsys, "decode", text)
        assert code == 2 and err == (f"kafkaproto: error: the frame's size prefix says {len(FRAME) - 4} bytes "
                                     f"but {len(FRAME) - 7} follow\n")
    # Frames that follow the first: the size prefix says where the first ends.
    code, _, err = run(capsys, "decode", (FRAME + FRAME).hex())
    assert code == 2 and f"the frame's size prefix says {len(FRAME) - 4} bytes but {2 * len(FRAME) - 4}" in err
    # A response cut short.
    response = encode_response(ResponseHeader(correlation_id=3), MetadataResponse(throttle_time_ms=5), 12)
    code, _, err = run(capsys, "decode", "--response", "Metadata", "12", response[:-2].hex())
    assert code == 2 and f"the frame's size prefix says {len(response) - 4} bytes but {len(response) - 6}" in err


def test_a_bare_frame_cut_short_keeps_its_own_error(capsys):
    # Read without a size prefix this is ApiVersions v3 running out of bytes: that error is not lost.
    code, _, err = run(capsys, "decode", FRAME[4:-2].hex())
    assert code == 2 and "ApiVersionsRequest v3" in err and "byte offset" in err
    code, out, _ = run(capsys, "decode", "--size-prefix", "no", FRAME[4:].hex())
    assert code == 0 and json.loads(out)["api"] == "ApiVersions"


def test_an_unknown_api_is_named_plainly_with_the_nearest_name(capsys):
    code, _, err = run(capsys, "decode", "--response", "Fetchh", "16", FRAME.hex())
    assert (code, err) == (2, "kafkaproto: error: no Kafka API 'Fetchh' (did you mean Fetch?)\n")
    code, _, err = run(capsys, "decode", "--response", "Zzzzzz", "1", FRAME.hex())
    assert (code, err) == (2, "kafkaproto: error: no Kafka API 'Zzzzzz'\n")


@pytest.mark.parametrize("argv, prog, bad", [
    (["decode", "--bogus", "x"], "kafkaproto decode", "--bogus"),
    (["decode", "x", "y"], "kafkaproto decode", "y"),
    (["capture", "f.pcap", "--nope"], "kafkaproto capture", "--nope"),
    (["replay", "f.pcap", "--bootstrap-server", "h:1", "--nope"], "kafkaproto replay", "--nope"),
    (["admin", "partitions", "--bootstrap-server", "h:1", "--topic", "t", "--zz"], "kafkaproto admin partitions",
     "--zz"),
    (["--bogus"], "kafkaproto", "--bogus"),
])
def test_a_wrong_option_gets_its_subcommand_usage(capsys, argv, prog, bad):
    with pytest.raises(SystemExit) as done:
        main(argv)
    out, err = capsys.readouterr()
    assert done.value.code == 2 and out == ""
    assert err.startswith(f"usage: {prog} ") and err.endswith(f"\n{prog}: error: unrecognized arguments: {bad}\n")


def test_help_states_the_exit_status(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    out = capsys.readouterr().out
    assert done.value.code == 0
    status = out[out.index("exit status:"):]
    assert "\n  0 " in status and "\n  1 " in status and "\n  2 " in status


def test_admin_that_cannot_reach_its_broker_could_not_run(capsys):
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code, out, err = run(capsys, "admin", "partitions", "--bootstrap-server", f"127.0.0.1:{port}", "--topic", "t")
    assert code == 2 and out == "", (code, out, err)
    assert err.startswith("kafkaproto: error: ") and err.count("\n") == 1 and str(port) in err, err
