"""The codec core and the public API, on both implementations."""

import os
import pickle
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

import kafkaproto
from kafkaproto import DecodeError, EncodeError, EncodeTypeError, FrameBuffer, UnsupportedVersionError, Uuid
from kafkaproto.messages import api

from impls import IMPLS, added_by_extensions, classes, core, impl_param


# ---- primitives ---------------------------------------------------------------

UVARINTS = [(0, "00"), (1, "01"), (127, "7f"), (128, "8001"), (300, "ac02"), (16383, "ff7f"),
            (16384, "808001"), (2**31 - 1, "ffffffff07"), (2**32 - 1, "ffffffff0f")]
ZIGZAG = [(0, "00"), (-1, "01"), (1, "02"), (-2, "03"), (63, "7e"), (-64, "7f"), (64, "8001"),
          (2**31 - 1, "feffffff0f"), (-(2**31), "ffffffff0f")]
ZIGZAG64 = [(2**63 - 1, "feffffffffffffffff01"), (-(2**63), "ffffffffffffffffff01"), (-1, "01")]


@impl_param
@pytest.mark.parametrize("value,hexed", UVARINTS)
def test_uvarint_vectors(impl, value, hexed):
    Reader, Writer = core(impl)
    w = Writer()
    w.uvarint(value)
    assert w.finish().hex() == hexed
    assert Reader(bytes.fromhex(hexed)).uvarint() == value


@impl_param
@pytest.mark.parametrize("value,hexed", ZIGZAG)
def test_varint_vectors(impl, value, hexed):
    Reader, Writer = core(impl)
    w = Writer()
    w.varint(value)
    assert w.finish().hex() == hexed
    assert Reader(bytes.fromhex(hexed)).varint() == value


@impl_param
@pytest.mark.parametrize("value,hexed", ZIGZAG64)
def test_varlong_vectors(impl, value, hexed):
    Reader, Writer = core(impl)
    w = Writer()
    w.varlong(value)
    assert w.finish().hex() == hexed
    assert Reader(bytes.fromhex(hexed)).varlong() == value


@impl_param
@pytest.mark.parametrize("hexed,reason", [
    ("ffffffff1f", "varint does not fit in 32 bits"),
    ("ffffffffff01", "varint does not fit in 32 bits"),
    ("ff", "varint runs past the end of the input"),
    ("", "varint runs past the end of the input"),
])
def test_bad_uvarint(impl, hexed, reason):
    Reader, _ = core(impl)
    with pytest.raises(DecodeError, match=reason):
        Reader(bytes.fromhex(hexed)).uvarint()


@impl_param
def test_overlong_varlong(impl):
    Reader, _ = core(impl)
    with pytest.raises(DecodeError, match="longer than 10 bytes"):
        Reader(b"\xff" * 11).varlong()


FIXED = [("int8", -128, "80"), ("int16", -2, "fffe"), ("uint16", 65535, "ffff"), ("int32", -(2**31), "80000000"),
         ("uint32", 2**32 - 1, "ffffffff"), ("int64", 2**63 - 1, "7fffffffffffffff"),
         ("float64", 1.5, "3ff8000000000000"), ("bool", True, "01")]


@impl_param
@pytest.mark.parametrize("kind,value,hexed", FIXED)
def test_fixed_width(impl, kind, value, hexed):
    Reader, Writer = core(impl)
    w = Writer()
    getattr(w, kind)(value)
    assert w.finish().hex() == hexed
    r = Reader(bytes.fromhex(hexed))
    assert getattr(r, kind)() == value
    assert r.remaining == 0


@impl_param
@pytest.mark.parametrize("kind,width", [("int16", 2), ("int32", 4), ("int64", 8), ("uuid", 16)])
def test_short_input_names_the_need(impl, kind, width):
    Reader, _ = core(impl)
    r = Reader(b"\x00" * (width - 1))
    with pytest.raises(DecodeError) as e:
        getattr(r, kind)()
    assert f"needs {width} bytes but only {width - 1} remain" in str(e.value)
    assert e.value.offset == 0


@impl_param
@pytest.mark.parametrize("compact,nullable,value,hexed", [
    (False, False, "hi", "00026869"),
    (True, False, "hi", "036869"),
    (False, True, None, "ffff"),
    (True, True, None, "00"),
    (True, False, "é", "03c3a9"),
])
def test_strings(impl, compact, nullable, value, hexed):
    Reader, Writer = core(impl)
    w = Writer()
    w.string(value, compact, nullable)
    assert w.finish().hex() == hexed
    assert Reader(bytes.fromhex(hexed)).string(compact, nullable) == value


@impl_param
def test_string_errors(impl):
    Reader, _ = core(impl)
    with pytest.raises(DecodeError, match="null string in a non-nullable field"):
        Reader(b"\xff\xff").string(False, False)
    with pytest.raises(DecodeError, match="negative string length -2"):
        Reader(b"\xff\xfe").string(False, True)
    with pytest.raises(DecodeError, match="string needs 30000 bytes but only 3 remain"):
        Reader(b"\x75\x30abc").string(False, False)
    with pytest.raises(DecodeError, match="invalid UTF-8") as e:
        Reader(b"\x00\x03a\xffb").string(False, False)
    assert e.value.offset == 3


@impl_param
def test_bytes_and_records(impl):
    Reader, Writer = core(impl)
    w = Writer()
    w.bytes(b"abc", False, False)
    w.bytes(None, True, True)
    w.bytes(bytearray(b"xy"), True, False)
    data = w.finish()
    assert data.hex() == "00000003616263" + "00" + "037879"
    r = Reader(data)
    assert r.bytes(False, False) == b"abc"
    assert r.bytes(True, True) is None
    assert r.records(True, False) == b"xy"


@impl_param
def test_records_are_zero_copy_slices(impl):
    Reader, _ = core(impl)
    buf = bytearray(b"\x00\x00\x00\x03abc")
    rec = Reader(buf).records(False, False)
    assert isinstance(rec, memoryview) and rec.obj is buf
    buf[4] = ord("z")
    assert bytes(rec) == b"zbc"


@impl_param
def test_reader_takes_any_buffer(impl):
    Reader, _ = core(impl)
    for data in (b"\x00\x07", bytearray(b"\x00\x07"), memoryview(b"\xff\x00\x07")[1:]):
        assert Reader(data).int16() == 7


@impl_param
def test_uuid_primitive(impl):
    Reader, Writer = core(impl)
    u = Uuid.random()
    w = Writer()
    w.uuid(u)
    data = w.finish()
    assert data == u.bytes
    assert Reader(data).uuid() == u


@impl_param
def test_lying_array_length_fails_before_allocating(impl):
    Reader, _ = core(impl)
    with pytest.raises(DecodeError, match="array of 2147483647 items needs at least"):
        Reader(b"\x7f\xff\xff\xff\x00\x00").array_len(False, 4)
    with pytest.raises(DecodeError, match="negative array length -5"):
        Reader(b"\xff\xff\xff\xfb").array_len(False, 1)


@given(st.lists(st.tuples(st.sampled_from(["int8", "int16", "int32", "int64", "uvarint", "varint", "varlong"]),
                          st.integers(-(2**63), 2**64 - 1))))
def test_primitive_streams_agree_across_implementations(items):
    from kafkaproto._generic import INT_RANGES
    ranges = dict(INT_RANGES, uvarint=(0, 2**32 - 1), varint=INT_RANGES["int32"], varlong=INT_RANGES["int64"])
    items = [(k, v) for k, v in items if ranges[k][0] <= v <= ranges[k][1]]
    outputs = []
    for impl in IMPLS:
        Reader, Writer = core(impl)
        w = Writer()
        for kind, v in items:
            getattr(w, kind)(v)
        data = w.finish()
        r = Reader(data)
        assert [getattr(r, kind)() for kind, _ in items] == [v for _, v in items]
        outputs.append(data)
    assert len(set(outputs)) == 1


# ---- messages -----------------------------------------------------------------

@impl_param
def test_known_bytes_metadata_request_v0(impl):
    MetadataRequest = classes(impl)["MetadataRequest"]
    req = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="a")])
    assert req.encode(0).hex() == "00000001" "0001" "61"
    # v9 is flexible: compact array (1 item -> 02), compact name, the topic's empty tag section,
    # allow_auto_topic_creation (default true), the two authorized-operations flags, empty tags.
    assert req.encode(9).hex() == "02" "0261" "00" "01" "00" "00" "00"
    assert MetadataRequest.decode(bytes.fromhex("ffffffff01"), 4).topics is None


@impl_param
def test_encode_error_names_field_path(impl):
    FetchRequest = classes(impl)["FetchRequest"]
    bad = FetchRequest(topics=[FetchRequest.FetchTopic(
        topic="t", partitions=[FetchRequest.FetchPartition(partition=2**40)])])
    with pytest.raises(EncodeError) as e:
        bad.encode(12)
    assert isinstance(e.value, ValueError)
    assert "FetchRequest.topics[0].partitions[0].partition" in str(e.value)
    assert "out of range for int32" in str(e.value)
    bad.topics[0].partitions[0].partition = "7"
    with pytest.raises(EncodeTypeError, match=r"topics\[0\].partitions\[0\].partition: expected an integer"):
        bad.encode(12)
    bad.topics[0].partitions[0].partition = 7
    bad.topics[0].topic = None
    with pytest.raises(TypeError, match=r"FetchRequest.topics\[0\].topic: field Topic is not nullable in version 12"):
        bad.encode(12)


@impl_param
def test_absent_field_with_value_is_unsupported(impl):
    cls = classes(impl)
    with pytest.raises(UnsupportedVersionError, match="ProduceRequest.transactional_id.*version 2"):
        cls["ProduceRequest"](transactional_id="tx").encode(2)
    with pytest.raises(UnsupportedVersionError, match="allow_auto_topic_creation"):
        cls["MetadataRequest"](topics=None, allow_auto_topic_creation=False).encode(3)
    # Ignorable fields are dropped silently, as Kafka does.
    assert cls["ApiVersionsRequest"](client_software_name="x").encode(0) == b""


@impl_param
def test_unknown_version(impl):
    cls = classes(impl)["MetadataRequest"]
    with pytest.raises(UnsupportedVersionError, match="MetadataRequest has no version 99"):
        cls().encode(99)
    with pytest.raises(UnsupportedVersionError):
        cls.decode(b"", 99)


@impl_param
def test_decode_error_has_path_and_offset(impl):
    cls = classes(impl)["MetadataResponse"]
    msg = cls(topics=[cls.MetadataResponseTopic(name="t", partitions=[
        cls.MetadataResponsePartition(replica_nodes=[1, 2, 3])])])
    data = msg.encode(1)
    with pytest.raises(DecodeError) as e:
        cls.decode(data[:-10], 1)
    assert e.value.path.startswith("topics[0].partitions[0].")
    assert str(e.value).startswith("MetadataResponse v1 topics[0].partitions[0].")
    assert 0 < e.value.offset <= len(data) - 10
    with pytest.raises(DecodeError, match="3 bytes left over"):
        cls.decode(data + b"abc", 1)


@impl_param
def test_tagged_fields_written_only_when_not_default(impl):
    cls = classes(impl)["ApiVersionsResponse"]
    plain = cls(error_code=0).encode(3)
    assert plain.hex() == "0000" "01" "00000000" "00"
    tagged = cls(error_code=0, zk_migration_ready=True).encode(3)
    # tag section: 1 field, tag 3, 1 byte, true
    assert tagged.hex() == "0000" "01" "00000000" "01" "03" "01" "01"
    assert cls.decode(tagged, 3).zk_migration_ready is True


@impl_param
def test_unknown_tags_kept_and_reemitted_in_order(impl):
    cls = classes(impl)["ApiVersionsResponse"]
    # Tags 0-3 are known (3 is zk_migration_ready); 5 and 7 are not.
    data = bytes.fromhex("0000" "01" "00000000" "03" "03" "0101" "05" "0101" "07" "02" "abcd")
    msg = cls.decode(data, 3)
    assert msg.unknown_tagged_fields == {5: b"\x01", 7: b"\xab\xcd"}
    assert msg.zk_migration_ready is True
    assert msg.encode(3) == data
    with pytest.raises(DecodeError, match="out of order"):
        cls.decode(bytes.fromhex("0000" "01" "00000000" "02" "07" "00" "01" "00"), 3)


@impl_param
def test_dicts_repr_eq_pickle(impl):
    cls = classes(impl)["DeleteTopicsRequest"]
    u = Uuid.random()
    msg = cls(topics=[cls.DeleteTopicState(name=None, topic_id=u)], timeout_ms=5)
    d = msg.to_dict()
    assert d == {"topics": [{"name": None, "topic_id": u}], "topic_names": [], "timeout_ms": 5}
    assert cls.from_dict(d) == msg
    assert cls.from_dict({"topics": [{"topic_id": str(u)}]}).topics[0].topic_id == u
    assert repr(msg).startswith("DeleteTopicsRequest(topics=[DeleteTopicsRequest.DeleteTopicState(name=None")
    assert pickle.loads(pickle.dumps(msg)) == msg
    assert msg != cls(timeout_ms=5)
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        cls(bogus=1)


# ---- registry, headers and frames ------------------------------------------------

def test_api_registry():
    fetch = api(1)
    assert fetch.name == "Fetch" and api("FetchRequest") is fetch and api("fetch") is fetch
    assert fetch.request.__name__ == "FetchRequest" and fetch.response.api_key == 1
    assert fetch.valid_versions == range(0, 19)
    assert list(api("Produce").removed_versions) == [0, 1, 2]
    assert 6 in api("InitProducerId").unstable_versions and 6 not in api("InitProducerId").stable_versions
    assert list(api("LeaderAndIsr").removed_versions) == list(range(8))
    own = [a for a in kafkaproto.messages.apis() if a.request.__name__ not in added_by_extensions()]
    assert len(own) == 95
    with pytest.raises(KeyError):
        api(999)


@pytest.mark.parametrize("key,version,req,resp", [
    (18, 3, 2, 0), (18, 0, 1, 0), (3, 8, 1, 0), (3, 9, 2, 1), (7, 0, 0, 0), (7, 1, 1, 0), (7, 3, 2, 1), (0, 9, 2, 1)])
def test_header_versions(key, version, req, resp):
    assert kafkaproto.protocol.request_header_version(key, version) == req
    assert kafkaproto.protocol.response_header_version(key, version) == resp


def test_request_frames_round_trip():
    from kafkaproto.messages import ApiVersionsRequest, RequestHeader
    header = RequestHeader(request_api_key=18, request_api_version=3, correlation_id=7, client_id="c")
    body = ApiVersionsRequest(client_software_name="k", client_software_version="1")
    frame = kafkaproto.encode_request(header, body, 3)
    assert frame.hex() == "00000011" "0012" "0003" "00000007" "000163" "00" "026b" "0231" "00"
    (payload,) = kafkaproto.split_frames(frame)
    req = kafkaproto.decode_request(payload)
    assert req.header == header and req.body.client_software_name == "k"
    with pytest.raises(ValueError, match="header names API 18 v3 but the body is ApiVersions v2"):
        kafkaproto.encode_request(header, ApiVersionsRequest(), 2)


def test_api_versions_response_falls_back_to_v0():
    from kafkaproto.messages import ApiVersionsResponse, ResponseHeader
    body = ApiVersionsResponse(error_code=35, api_keys=[ApiVersionsResponse.ApiVersion(api_key=18, max_version=3)])
    frame = kafkaproto.encode_response(ResponseHeader(correlation_id=1), body, 0)
    resp = kafkaproto.decode_response(kafkaproto.split_frames(frame)[0], 18, 4)
    assert resp.version == 0 and resp.body.error_code == 35 and resp.body.api_keys[0].max_version == 3


SIZE_PREFIX_NOTE = "the bytes start with their own size"


@impl_param
def test_a_response_that_reads_at_neither_version_reports_the_first_error(impl):
    """The fallback to v0 is a second try: when it fails too, the error of the version asked is the one reported,
    and a frame that still has its size prefix says so."""
    from kafkaproto.messages import ApiVersionsResponse, ResponseHeader
    from kafkaproto.protocol import frame_functions

    frames = frame_functions(impl)
    body = ApiVersionsResponse(api_keys=[ApiVersionsResponse.ApiVersion(api_key=0, max_version=9)])
    frame = kafkaproto.encode_response(ResponseHeader(correlation_id=1), body, 3)
    with pytest.raises(DecodeError) as info:
        frames.decode_response(frame, kafkaproto.ApiKey.API_VERSIONS, 3)
    assert str(info.value).startswith("ApiVersionsResponse v3") and "65536" not in str(info.value)
    assert SIZE_PREFIX_NOTE in str(info.value)
    assert frames.decode_response(frame[4:], kafkaproto.ApiKey.API_VERSIONS, 3).body == body
    # Damaged, not prefixed: v3's error, no note.
    with pytest.raises(DecodeError) as info:
        frames.decode_response(frame[4:-1], kafkaproto.ApiKey.API_VERSIONS, 3)
    assert str(info.value).startswith("ApiVersionsResponse v3") and SIZE_PREFIX_NOTE not in str(info.value)
    # A version kafkaproto does not have: only v0 was tried, and its error is the one.
    with pytest.raises(DecodeError, match="ApiVersionsResponse v0"):
        frames.decode_response(frame[4:-1], kafkaproto.ApiKey.API_VERSIONS, 99)


@impl_param
def test_frames_with_their_size_prefix_left_on_say_so(impl):
    from kafkaproto.messages import MetadataRequest, MetadataResponse, RequestHeader, ResponseHeader
    from kafkaproto.protocol import frame_functions

    frames = frame_functions(impl)
    response = kafkaproto.encode_response(ResponseHeader(correlation_id=1), MetadataResponse(), 12)
    with pytest.raises(DecodeError, match=f"MetadataResponse v12 .*{SIZE_PREFIX_NOTE}"):
        frames.decode_response(response, kafkaproto.ApiKey.METADATA, 12)
    header = RequestHeader(request_api_key=3, request_api_version=12, correlation_id=1, client_id="c")
    request = kafkaproto.encode_request(header, MetadataRequest(topics=None), 12)
    with pytest.raises(kafkaproto.KafkaProtoError, match=SIZE_PREFIX_NOTE):  # read as Produce v<size>
        frames.decode_request(request)
    big = kafkaproto.encode_request(header, MetadataRequest(topics=[
        MetadataRequest.MetadataRequestTopic(name="t" * 100) for _ in range(700)]), 12)
    with pytest.raises(kafkaproto.KafkaProtoError, match=f"FetchRequest has no version .*{SIZE_PREFIX_NOTE}"):
        frames.decode_request(big)  # over 64 KiB: the size reads as api key 1 and its version
    with pytest.raises(DecodeError) as info:
        frames.decode_request(request[4:-1])
    assert SIZE_PREFIX_NOTE not in str(info.value)


def test_frame_buffer_handles_chunks_and_bad_sizes():
    buf = kafkaproto.FrameBuffer(max_frame=1000)
    stream = b"\x00\x00\x00\x02ab" + b"\x00\x00\x00\x00" + b"\x00\x00\x00\x03xyz"
    got = []
    for i in range(len(stream)):
        got += buf.feed(stream[i:i + 1])
    assert got == [b"ab", b"", b"xyz"] and buf.pending == 0
    with pytest.raises(kafkaproto.FrameError, match="frame size 2147483647 at stream offset 0"):
        kafkaproto.FrameBuffer(max_frame=1000).feed(b"\x7f\xff\xff\xff")
    with pytest.raises(kafkaproto.FrameError, match="frame size -1"):
        kafkaproto.FrameBuffer().feed(b"\xff\xff\xff\xff")
    with pytest.raises(kafkaproto.FrameError, match="do not make a whole frame"):
        kafkaproto.split_frames(b"\x00\x00\x00\x05ab")


def _receive(buf, stream, chunks):
    """Frames from stream received through get_buffer/buffer_updated, chunks[i] bytes at a time (cycled)."""
    got, pos, i = [], 0, 0
    while pos < len(stream):
        view = buf.get_buffer(-1)
        n = min(len(view), chunks[i % len(chunks)], len(stream) - pos)
        view[:n] = stream[pos:pos + n]
        del view
        got += buf.buffer_updated(n)
        pos, i = pos + n, i + 1
    return got


@pytest.mark.parametrize("chunks", [[1], [3, 1000, 7], [1 << 16], [1 << 20]])
def test_frame_buffer_receives_in_place_as_feed_splits(chunks):
    rng = random.Random(len(chunks))
    sizes = [0, 5, FrameBuffer.LARGE_FRAME - 1, FrameBuffer.LARGE_FRAME, 100_000, 3, FrameBuffer.GROW_STEP * 2 + 17,
             FrameBuffer.SCRATCH_SIZE - 4, 1]
    frames = [rng.randbytes(n) for n in sizes]
    stream = b"".join(len(f).to_bytes(4, "big") + f for f in frames)
    buf = FrameBuffer(max_frame=1 << 23)
    got = _receive(buf, stream, chunks)
    assert got == frames and buf.pending == 0
    # Every frame is a bytearray of its own (writable, for patching offsets in place); a large one the one it was
    # received into.
    assert all(type(f) is bytearray for f in got) and len({id(f) for f in got}) == len(got)


def test_frame_buffer_in_place_sizes_checked_and_lies_cheap():
    buf = FrameBuffer(max_frame=1 << 30)
    # A size prefix alone allocates no more than GROW_STEP, whatever it claims.
    assert _receive(buf, (1 << 30).to_bytes(4, "big") + b"x" * 10, [14]) == []
    assert buf.pending == 14 and len(buf.get_buffer(-1)) == FrameBuffer.GROW_STEP - 10
    buf = FrameBuffer(max_frame=1000)
    stream = b"\x00\x00\x00\x02ab" + b"\x00\x00\x03\xe9" + b"more"
    assert _receive(buf, stream, [len(stream)]) == [b"ab"]
    with pytest.raises(kafkaproto.FrameError, match="frame size 1001 at stream offset 6 is outside 0..1000"):
        buf.get_buffer(-1)
    with pytest.raises(kafkaproto.FrameError, match="frame size -1 at stream offset 0"):
        _receive(FrameBuffer(), b"\xff\xff\xff\xff", [4])


def test_compiled_flag_matches_build():
    import os
    if os.environ.get("KAFKAPROTO_PURE") == "1":
        assert not kafkaproto.compiled()
    else:
        # The installed package must carry the compiled codecs unless built without them.
        assert kafkaproto.compiled() or os.environ.get("KAFKAPROTO_PURE_BUILD") == "1"


@impl_param
def test_decoded_objects_hold_no_extra_references(impl):
    """A leaked reference keeps every decoded message alive forever; count them."""
    import sys
    cls = classes(impl)["MetadataRequest"]
    data = cls(topics=[cls.MetadataRequestTopic(name="a")]).encode(12)
    msg = cls.decode(data, 12)
    # Counted outside assert statements: pytest's assert rewriting holds extra references.
    counts = [sys.getrefcount(msg), sys.getrefcount(msg.topics[0])]
    assert counts == [2, 2]  # the name (or list slot) and the call's argument
    if impl != ("compiled" if kafkaproto.compiled() else "python"):
        return  # the frame functions work on the default implementation's classes
    from kafkaproto.messages import RequestHeader
    frame = kafkaproto.encode_request(RequestHeader(request_api_key=3, request_api_version=12), msg, 12)
    req = kafkaproto.decode_request(frame[4:])
    counts = [sys.getrefcount(req.body), sys.getrefcount(req.header), sys.getrefcount(req)]
    assert counts == [2, 2, 2]


@impl_param
def test_collector_state_survives_large_decodes(impl):
    """Decoding big messages may pause the cyclic collector; it must come back as it was."""
    import gc
    cls = classes(impl)["MetadataResponse"]
    big = cls(topics=[cls.MetadataResponseTopic(name="t" * 100, partitions=[
        cls.MetadataResponsePartition(replica_nodes=list(range(50)))] * 20)] * 10).encode(12)
    assert len(big) > 20000
    assert gc.isenabled()
    cls.decode(big, 12)
    assert gc.isenabled()
    with pytest.raises(DecodeError):
        cls.decode(big[:-1], 12)
    assert gc.isenabled()
    gc.disable()
    try:
        cls.decode(big, 12)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_importing_from_an_unbuilt_source_checkout_says_so(tmp_path):
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    if not (root / "setup.py").is_file() or any((root / "kafkaproto").glob("_core*.so")):
        pytest.skip("needs a source checkout whose codecs are not compiled in place")
    # With an installed build in reach, a checkout hands over to it (tests/test_readme.py); here the
    # installed packages are reached without kafkaproto, as where it was never installed.
    import site
    packages = tmp_path / "site-packages"
    packages.mkdir()
    for folder in map(Path, site.getsitepackages()):
        for item in folder.iterdir() if folder.is_dir() else ():
            if not item.name.startswith(("kafkaproto", "__editable__")) and not (packages / item.name).exists():
                (packages / item.name).symlink_to(item)
    env = {k: v for k, v in os.environ.items() if k != "KAFKAPROTO_PURE"}
    env["PYTHONPATH"] = str(packages)
    proc = subprocess.run([sys.executable, "-S", "-c", "import kafkaproto; print(kafkaproto.compiled())"], cwd=root,
                          capture_output=True, text=True, env=env)
    if (root / "kafkaproto" / "_generated").is_dir():  # generated by an install, but not compiled here
        assert proc.stdout.strip() == "False" and "source checkout" in proc.stderr
        assert proc.stderr.count("source checkout") == 1
    else:
        assert proc.returncode != 0 and "never built" in proc.stderr and "circular" not in proc.stderr
