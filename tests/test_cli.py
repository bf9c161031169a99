"""The kafkaproto command: decode frames given every way a person debugging traffic has them."""

import base64
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
    code, out, err = run(capsys, "decode", "zz-not-a-frame")
    assert code == 1 and err.startswith("kafkaproto: error: ") and "Traceback" not in err
    code, _, err = run(capsys, "decode", "--response", "NoSuchApi", "1", FRAME.hex())
    assert code == 1 and "NoSuchApi" in err
    code, _, err = run(capsys, "decode", "--size-prefix", "yes", FRAME[4:].hex())
    assert code == 1 and "size" in err


def test_version_flag(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out.strip() == f"kafkaproto {kafkaproto.__version__}"


def test_a_closed_pipe_is_not_an_error(tmp_path):
    # Run outside the checkout: `python -m` puts the working directory first on sys.path.
    proc = subprocess.run(f"{sys.executable} -m kafkaproto apis | head -1", shell=True, capture_output=True,
                          text=True, check=True, cwd=tmp_path)
    assert proc.stdout.startswith(" key") and proc.stderr == ""
