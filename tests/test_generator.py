"""The code generator (codegen/): validation rules, upstream specs, CLI output, determinism,
and a generated package used end to end."""

import hashlib
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kafkaproto_codegen.__main__ import main
from kafkaproto_codegen.errors import SpecError
from kafkaproto_codegen.model import RESERVED_ATTRS, build_spec, load_model
from kafkaproto_codegen.render import render
from kafkaproto._pycore import Struct
from kafkaproto.exceptions import EncodeTypeError, UnsupportedVersionError
from kafkaproto.uuid import Uuid

ROOT = Path(__file__).resolve().parents[1]
UPSTREAM = ROOT.parent / "shared" / "kafka-protocol"


# ---- helpers ---------------------------------------------------------------------------------

def fld(name, type_, versions="0+", **kw):
    return {"name": name, "type": type_, "versions": versions, **kw}


def spec(name, fields, type_="request", api_key=500, valid="0-3", flexible="2+", **kw):
    return {"apiKey": api_key, "type": type_, "name": name, "validVersions": valid,
            "flexibleVersions": flexible, "fields": fields, **kw}


def write(directory, filename, data):
    """Write a spec (a dict, or raw text) and return its path."""
    path = Path(directory) / filename
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=2), encoding="utf-8")
    return path


def rejected(tmp_path, fields, where, rule, **spec_kw):
    """Load FooRequest with these fields; it must fail naming the file, the field path and the rule."""
    path = write(tmp_path, "FooRequest.json", spec("FooRequest", fields, **spec_kw))
    with pytest.raises(SpecError) as info:
        load_model([path])
    e = info.value
    assert (e.file, e.where) == (str(path), where)
    assert rule in e.rule
    assert str(path) in str(e) and where in str(e)
    return e


def items(*inner, versions="0+"):
    """An array-of-structs field FooRequest.Items with the given inner fields."""
    return fld("Items", "[]Item", versions, fields=list(inner))


# ---- 1. one test per validation rule ---------------------------------------------------------

@pytest.mark.parametrize("type_, rule", [
    ("int33", "unknown type 'int33'"),
    ("[]strin", "unknown type '[]strin'"),
    ("Missing", "no struct named Missing is defined"),
    ("[]Missing", "no struct named Missing is defined"),
])
def test_unknown_type(tmp_path, type_, rule):
    rejected(tmp_path, [fld("Thing", type_)], "FooRequest.Thing", rule)


@pytest.mark.parametrize("versions", ["5+", "0-9", "3-4"])
def test_field_versions_outside_valid_versions(tmp_path, versions):
    rejected(tmp_path, [fld("Count", "int32", versions)], "FooRequest.Count",
             f"versions {versions} lie outside validVersions 0-3")


def test_nested_field_versions_outside_parent(tmp_path):
    # Partitions exist in 0-1 only, so Index cannot reach version 2; the path names every level.
    topics = fld("Topics", "[]Topic", fields=[
        fld("Partitions", "[]Partition", "0-1", fields=[fld("Index", "int32", "0-2")])])
    rejected(tmp_path, [topics], "FooRequest.Topics.Partitions.Index", "lie outside validVersions 0-1")


def test_tag_reused_in_struct(tmp_path):
    a = fld("A", "int32", "2+", tag=0, taggedVersions="2+")
    b = fld("B", "int32", "2+", tag=0, taggedVersions="2+")
    rejected(tmp_path, [items(a, b)], "FooRequest.Items.B", "tag 0 is already used by A")
    # The same tag in different structs is fine.
    path = write(tmp_path, "ok/FooRequest.json", spec("FooRequest", [a, items(b)]))
    write(tmp_path, "ok/FooResponse.json", spec("FooResponse", [], "response"))
    assert len(load_model([path.parent])) == 2


def test_tagged_field_outside_flexible_versions(tmp_path):
    rejected(tmp_path, [fld("A", "int32", tag=0, taggedVersions="1+")], "FooRequest.A",
             "tagged field outside flexibleVersions")
    rejected(tmp_path, [fld("A", "int32", tag=0, taggedVersions="0+")], "FooRequest.A",
             "tagged field outside flexibleVersions", flexible="none")


@pytest.mark.parametrize("type_", ["int32", "bool", "uuid", "float64", "int8", "int64"])
def test_nullable_versions_on_non_nullable_type(tmp_path, type_):
    rejected(tmp_path, [fld("A", type_, nullableVersions="1+")], "FooRequest.A",
             f"nullableVersions set on type {type_}, which cannot be null")


def test_map_key_outside_array_of_structs(tmp_path):
    key = fld("Key", "int32", mapKey=True)
    rejected(tmp_path, [key], "FooRequest.Key", "mapKey outside an array of structs")
    rejected(tmp_path, [fld("Single", "Inner", fields=[key])], "FooRequest.Single.Key",
             "mapKey outside an array of structs")
    # Inside an array of structs it is accepted.
    build_spec("x.json", spec("FooRequest", [items(key)]))


def test_struct_defined_twice(tmp_path):
    first = items(fld("Index", "int32"))
    again = fld("More", "[]Item", fields=[fld("Index", "int64")])
    rejected(tmp_path, [first, again], "FooRequest.More", "struct type Item defined twice differently")
    # Identically (prose aside) is accepted, and both fields share one struct.
    same = fld("More", "[]Item", fields=[fld("Index", "int32", about="other words")])
    s = build_spec("x.json", spec("FooRequest", [first, same]))
    assert s.root.fields[0].struct is s.root.fields[1].struct


def test_api_key_and_type_used_twice(tmp_path):
    write(tmp_path, "a/FooRequest.json", spec("FooRequest", []))
    second = write(tmp_path, "b/BarRequest.json", spec("BarRequest", []))
    with pytest.raises(SpecError) as info:
        load_model([tmp_path / "a", tmp_path / "b"])
    e = info.value
    assert (e.file, e.where) == (str(second), "BarRequest.apiKey")
    assert "apiKey 500 with type request is already used by FooRequest" in e.rule
    assert str(tmp_path / "a" / "FooRequest.json") in e.rule  # names the other file too


def test_group_coordinator_records_are_numbered_by_record_type(tmp_path):
    """A coordinator-key and a coordinator-value spec need an apiKey (the record type, which a key and its value
    share), unique within their type, and land in the module of its range, apart from the APIs'."""
    with pytest.raises(SpecError, match="needs an integer apiKey"):
        build_spec("x.json", spec("FooKey", [fld("Group", "string", "0")], "coordinator-key", api_key=None,
                                  valid="0", flexible="none"))
    write(tmp_path, "FooKey.json", spec("FooKey", [fld("Group", "string", "0")], "coordinator-key", api_key=9,
                                        valid="0", flexible="none"))
    write(tmp_path, "FooValue.json", spec("FooValue", [fld("Epoch", "int32")], "coordinator-value", api_key=9,
                                          valid="0", flexible="0+"))
    files = render(load_model([tmp_path]))
    assert {"_c_coordinator_8_15.pyx", "_py_coordinator_8_15.py", "coordinator_records.pyi"} <= set(files)
    assert "group coordinator record value FooValue, record type 9" in files["_py_coordinator_8_15.py"]
    write(tmp_path, "BarValue.json", spec("BarValue", [fld("Epoch", "int32")], "coordinator-value", api_key=9,
                                          valid="0", flexible="0+"))
    with pytest.raises(SpecError, match="apiKey 9 with type coordinator-value is already used by BarValue"):
        load_model([tmp_path])


def test_malformed_json_reports_line_and_column(tmp_path):
    text = (
        '{\n'
        '  // a comment with "quotes" and // slashes keeps positions\n'
        '  "about": "see http://kafka.apache.org",\n'
        '  "name": "FooRequest"\n'
        '  "type": "request"\n'  # line 5: the missing comma is noticed at column 3
        '}\n'
    )
    path = write(tmp_path, "FooRequest.json", text)
    with pytest.raises(SpecError) as info:
        load_model([tmp_path])
    e = info.value
    assert (e.file, e.where) == (str(path), "line 5, column 3")
    assert "malformed JSON" in e.rule and "','" in e.rule


@pytest.mark.parametrize("present, missing", [("request", "response"), ("response", "request")])
def test_message_without_its_pair(tmp_path, present, missing):
    name = f"Foo{present.title()}"
    path = write(tmp_path, f"{name}.json", spec(name, [], present))
    with pytest.raises(SpecError) as info:
        load_model([tmp_path])
    e = info.value
    assert (e.file, e.where) == (str(path), name)
    assert f"apiKey 500 has a {present} but no {missing}" in e.rule


@pytest.mark.parametrize("refused", ["request", "response"])
@pytest.mark.parametrize("broken", ["a field", "the JSON"])
def test_a_refused_message_is_not_also_missing_for_its_pair(tmp_path, refused, broken):
    """Only the refused spec's own error: its partner is not reported as lacking it."""
    name = f"Foo{refused.title()}"
    partner = "FooResponse" if refused == "request" else "FooRequest"
    bad = spec(name, [fld("A", "int33")], refused) if broken == "a field" else '{"name": "' + name + '",'
    path = write(tmp_path, f"{name}.json", bad)
    write(tmp_path, f"{partner}.json", spec(partner, [], "response" if refused == "request" else "request"))
    with pytest.raises(SpecError) as info:
        load_model([tmp_path])
    errors = getattr(info.value, "errors", [info.value])
    assert [e.file for e in errors] == [str(path)], [str(e) for e in errors]
    assert main([str(tmp_path), "--check"]) == 1


def test_unknown_key_in_field(tmp_path):
    rejected(tmp_path, [fld("Name", "string", nullableVersion="0+")], "FooRequest.Name",
             "unknown key 'nullableVersion'")


@pytest.mark.parametrize("field, rule", [
    (fld("A", "int8", default=300), "default 300 is out of range for int8"),
    (fld("A", "int8", default="-129"), "default '-129' is out of range for int8"),
    (fld("A", "int32", default="ten"), "default 'ten' is not an integer"),
    (fld("A", "bool", default="yes"), "default 'yes' is not a boolean"),
    (fld("A", "[]int32", default="[]"), "an array field can only default to null"),
    (fld("A", "string", nullableVersions="1+", default="null"),
     "default null needs the field nullable in all its versions"),
    (fld("A", "[]int32", nullableVersions="2+", default="null"),
     "default null needs the field nullable in all its versions"),
], ids=["int8-300", "int8-neg", "int-text", "bool-yes", "array-list", "string-null", "array-null"])
def test_bad_default(tmp_path, field, rule):
    rejected(tmp_path, [field], "FooRequest.A", rule)


def test_tag_and_tagged_versions_go_together(tmp_path):
    rejected(tmp_path, [fld("A", "int32", tag=0)], "FooRequest.A", "tag and taggedVersions go together")
    rejected(tmp_path, [fld("A", "int32", taggedVersions="2+")], "FooRequest.A",
             "tag and taggedVersions go together")


def test_tagged_versions_must_be_open_ended(tmp_path):
    rejected(tmp_path, [fld("A", "int32", tag=0, taggedVersions="2-3")], "FooRequest.A",
             "taggedVersions 2-3 must be open-ended")


@pytest.mark.parametrize("name, attr", [("Encode", "encode"), ("ToDict", "to_dict"),
                                        ("UnknownTaggedFields", "unknown_tagged_fields"),
                                        ("WriteTo", "write_to"), ("ReadFrom", "read_from")])
def test_field_name_clashes_with_generated_attribute(tmp_path, name, attr):
    rejected(tmp_path, [fld(name, "int32")], f"FooRequest.{name}",
             f"clashes with the generated attribute {attr!r}")


def test_nested_field_name_clashes_with_generated_method(tmp_path):
    # Nested classes are Structs too (Item.decode, item.encode); only api_key is root-only.
    rejected(tmp_path, [items(fld("Decode", "int32"))], "FooRequest.Items.Decode",
             "clashes with the generated attribute 'decode'")
    build_spec("x.json", spec("FooRequest", [items(fld("ApiKey", "int16"))]))  # as upstream has


def test_reserved_attrs_cover_the_generated_api():
    public = {n for n in dir(Struct) if not n.startswith("_")} | {"api_key", "flexible_versions"}
    assert public <= RESERVED_ATTRS


def test_two_names_map_to_one_attribute(tmp_path):
    rejected(tmp_path, [fld("TopicId", "uuid"), fld("TopicID", "uuid")], "FooRequest.TopicID",
             "maps to attribute 'topic_id', as TopicId does")


# ---- 2. upstream specs load unchanged --------------------------------------------------------

@pytest.mark.skipif(not UPSTREAM.is_dir(), reason=f"upstream Kafka specs not found at {UPSTREAM}")
@pytest.mark.parametrize("subdir, count", [
    ("3.9.2/message", 178), ("3.9.2/metadata", 25), ("trunk/message", 192), ("trunk/metadata", 27)])
def test_upstream_specs_load(subdir, count):
    assert len(load_model([UPSTREAM / subdir])) == count


# ---- 3. the CLI writes whole generations or nothing ------------------------------------------

# A tiny request/response pair; also the package of the end-to-end test below.
# FooRequest: versions 0-2, flexible from 2.
FOO_REQUEST = spec("FooRequest", [
    fld("Name", "string", nullableVersions="1+"),                 # nullable from v1
    fld("TopicId", "uuid", "1+"),                                 # from v1
    items(fld("Index", "int32"), fld("Label", "string")),         # array of structs
    fld("Priority", "int32", "2+", tag=0, taggedVersions="2+"),   # tagged, v2+
], valid="0-2")
FOO_RESPONSE = spec("FooResponse", [fld("ErrorCode", "int16")], "response", valid="0-2")


FOO_FILES = {"__init__.py", "__init__.pyi", "messages.pyi", "metadata.pyi", "coordinator_records.pyi",
             "_c_api_496_503.pyx", "_py_api_496_503.py"}


def foo_schemas(directory):
    write(directory, "FooRequest.json", FOO_REQUEST)
    write(directory, "FooResponse.json", FOO_RESPONSE)
    return directory


def snapshot(directory):
    return {p.name: p.read_bytes() for p in sorted(Path(directory).iterdir())}


def test_cli_good_run_writes_package(tmp_path, capsys):
    out = tmp_path / "out"
    assert main([str(foo_schemas(tmp_path / "schemas")), "--out", str(out)]) == 0
    # Both specs live in the module of their api-key range, as Cython and as pure Python, with typing stubs.
    assert set(snapshot(out)) == FOO_FILES
    assert "2 specs, 6 spec versions" in capsys.readouterr().out


def test_cli_bad_spec_leaves_output_untouched(tmp_path, capsys):
    schemas, out = foo_schemas(tmp_path / "schemas"), tmp_path / "out"
    assert main([str(schemas), "--out", str(out)]) == 0
    before = snapshot(out)
    bad = write(schemas, "BarRequest.json", spec("BarRequest", [fld("A", "int33")], api_key=501))
    capsys.readouterr()
    for extra in ([], ["--check"]):
        assert main([str(schemas), "--out", str(out), *extra]) == 1
        err = capsys.readouterr().err
        assert err.startswith("kafkaproto-codegen: error: ")
        assert str(bad) in err and "BarRequest.A" in err and "unknown type 'int33'" in err
        assert snapshot(out) == before  # same files, same bytes, no temporaries left


def test_cli_check_writes_nothing(tmp_path):
    out = tmp_path / "out"
    assert main([str(foo_schemas(tmp_path / "schemas")), "--out", str(out), "--check"]) == 0
    assert not out.exists()


def test_cli_removes_modules_a_smaller_generation_no_longer_makes(tmp_path):
    schemas, out = foo_schemas(tmp_path / "schemas"), tmp_path / "out"
    write(schemas, "BarData.json", spec("BarData", [fld("A", "int32")], "data", api_key=None))
    assert main([str(schemas), "--out", str(out)]) == 0
    assert {"_c_common.pyx", "_py_common.py"} <= set(snapshot(out))
    (schemas / "BarData.json").unlink()
    assert main([str(schemas), "--out", str(out)]) == 0
    assert set(snapshot(out)) == FOO_FILES


# ---- 4. determinism --------------------------------------------------------------------------

SCHEMA_DIRS = [ROOT / "schemas" / "message", ROOT / "schemas" / "metadata"]


def test_render_is_deterministic():
    message, metadata = SCHEMA_DIRS
    first = render(load_model([message, metadata]))
    assert render(load_model([message, metadata])) == first
    assert render(load_model([metadata, message])) == first  # directory order does not matter


def test_render_does_not_depend_on_hash_seed():
    code = ("import hashlib; from kafkaproto_codegen.model import load_model; "
            f"from kafkaproto_codegen.render import render; f = render(load_model({[str(d) for d in SCHEMA_DIRS]!r})); "
            "print(hashlib.sha256(repr(sorted(f.items())).encode()).hexdigest())")
    digests = {
        subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True, text=True,
                       env={**os.environ, "PYTHONHASHSEED": seed}).stdout
        for seed in ("1", "2")
    }
    here = hashlib.sha256(repr(sorted(render(load_model(SCHEMA_DIRS)).items())).encode()).hexdigest()
    assert digests == {here + "\n"}


# ---- 5. a generated package, end to end ------------------------------------------------------

@pytest.fixture
def foo(tmp_path, monkeypatch):
    """The classes of FooRequest/FooResponse, generated by the CLI into tmp_path/foopkg."""
    assert main([str(foo_schemas(tmp_path / "schemas")), "--out", str(tmp_path / "foopkg")]) == 0
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m == "foopkg" or m.startswith("foopkg.")]:
        monkeypatch.delitem(sys.modules, name)
    classes = importlib.import_module("foopkg").load("python")
    assert set(classes) == {"FooRequest", "FooResponse"}
    return classes


def test_generated_classes(foo):
    req, resp = foo["FooRequest"], foo["FooResponse"]
    assert (req.api_key, resp.api_key) == (500, 500)
    assert list(req.valid_versions) == [0, 1, 2] and list(req.flexible_versions) == [2]
    assert repr(req.Item(index=1)).startswith("FooRequest.Item(")  # nested class, reachable from the root


def test_generated_roundtrip_every_version(foo):
    req, resp = foo["FooRequest"], foo["FooResponse"]
    for v in req.valid_versions:
        m = req(name="ab", topic_id=Uuid(1, 2) if v >= 1 else Uuid.ZERO,
                items=[req.Item(index=7, label="x"), req.Item(index=-1, label="")],
                priority=5 if v >= 2 else 0)
        assert req.decode(m.encode(v), v) == m
        r = resp(error_code=-3)
        assert resp.decode(r.encode(v), v) == r
    nulled = req(name=None)
    assert req.decode(nulled.encode(1), 1).name is None


def test_generated_exact_bytes(foo):
    req = foo["FooRequest"]
    m = req(name="ab", topic_id=Uuid(1, 2), items=[req.Item(index=7, label="x")], priority=5)
    v2 = bytes.fromhex(
        "03 6162"                                 # Name: compact string, uvarint(2 + 1), "ab"
        "0000000000000001 0000000000000002"       # TopicId: 16 bytes, high half then low half
        "02"                                      # Items: compact array, uvarint(1 + 1)
        "00000007"                                #   Item.Index: int32 7
        "02 78"                                   #   Item.Label: compact string, uvarint(1 + 1), "x"
        "00"                                      #   Item: no tagged fields
        "01"                                      # one tagged field:
        "00 04 00000005"                          #   tag 0, size 4, Priority int32 5
    )
    assert m.encode(2) == v2
    assert req.decode(v2, 2) == m

    v0 = bytes.fromhex(
        "0002 6162"                               # Name: int16 length 2, "ab"
        "00000001"                                # Items: int32 count 1 (no TopicId before v1)
        "00000007"                                #   Item.Index
        "0001 78"                                 #   Item.Label: int16 length 1, "x"
    )                                             # no tagged-field section before v2
    plain = req(name="ab", items=[req.Item(index=7, label="x")])
    assert plain.encode(0) == v0 and req.decode(v0, 0) == plain

    # Null Name at v1: int16 length -1; all else default (zero uuid, empty array).
    assert req(name=None).encode(1) == bytes.fromhex("ffff" + "00" * 16 + "00000000")


def test_generated_rejects_what_a_version_cannot_carry(foo):
    req = foo["FooRequest"]
    with pytest.raises(UnsupportedVersionError):
        req(priority=5).encode(1)  # tagged field exists from v2
    with pytest.raises(UnsupportedVersionError):
        req(topic_id=Uuid(1, 2)).encode(0)  # TopicId exists from v1
    with pytest.raises(EncodeTypeError):
        req(name=None).encode(0)  # Name is nullable from v1


# ---- 6. rules Kafka's own generator enforces, and every error in one run -------------------------------------

@pytest.mark.parametrize("field, rule", [
    (fld("Owner", "int32", entityType="topicName"), "entityType topicName needs type string"),
    (fld("Owners", "[]int64", entityType="brokerId"), "entityType brokerId needs type int32"),
    (fld("Owner", "string", entityType="topicname"), "unknown entityType 'topicname'"),
    (fld("Blob", "int32", zeroCopy=True), "zeroCopy is only for bytes fields"),
    (fld("Blob", "string", zeroCopy=True), "zeroCopy is only for bytes fields"),
    (fld("Names", "[]string", flexibleVersions="1+"), "only string and bytes fields may override it"),
    (fld("Name", "string", flexibleVersions="7+"), "flexibleVersions 7+ start above the versions 0-3"),
    (fld("Id", "uuid", default="not-a-uuid"), "default 'not-a-uuid' is not a uuid in URL-safe base64"),
])
def test_field_rules_kafka_enforces(tmp_path, field, rule):
    rejected(tmp_path, [field], f"FooRequest.{field['name']}", rule)


def test_entity_types_accept_their_types(tmp_path):
    build_spec("x.json", spec("FooRequest", [fld("A", "string", entityType="topicName"),
                                             fld("B", "[]int32", entityType="brokerId"),
                                             fld("C", "int64", entityType="producerId"),
                                             fld("D", "int8", entityType="unknown")]))


def test_tags_run_from_zero_without_gaps(tmp_path):
    rejected(tmp_path, [fld("A", "int32", tag=0, taggedVersions="2+"), fld("B", "int32", tag=2, taggedVersions="2+")],
             "FooRequest", "tag 1 is unused but 2 is")


def test_a_tagged_map_key_is_refused(tmp_path):
    rejected(tmp_path, [items(fld("Key", "int32", "2+", mapKey=True, tag=0, taggedVersions="2+"))],
             "FooRequest.Items.Key", "a tagged field cannot be a mapKey")


def test_a_partly_nullable_tagged_field_is_refused(tmp_path):
    rejected(tmp_path, [fld("A", "string", "2+", tag=0, taggedVersions="2+", nullableVersions="3+")], "FooRequest.A",
             "cover only part of taggedVersions")


def test_spec_rules_kafka_enforces(tmp_path):
    rejected(tmp_path, [], "FooRequest.flexibleVersions", "start above validVersions", flexible="9+")
    path = write(tmp_path, "BarResponse.json", spec("BarResponse", [], "response", listeners=["broker"]))
    with pytest.raises(SpecError, match="listeners is only for requests"):
        load_model([path])
    raw = spec("FooRequest", [])
    del raw["flexibleVersions"]
    with pytest.raises(SpecError, match="flexibleVersions is missing"):
        build_spec("x.json", raw)


def test_a_uuid_default_in_kafkas_form_is_accepted(foo_with_uuid_default):
    cls = foo_with_uuid_default
    assert cls().topic_id == Uuid(1, 2)
    assert cls.decode(cls().encode(2), 2).topic_id == Uuid(1, 2)


@pytest.fixture
def foo_with_uuid_default(tmp_path, monkeypatch):
    schemas = tmp_path / "schemas"
    write(schemas, "BazRequest.json", spec("BazRequest", [fld("TopicId", "uuid", default=str(Uuid(1, 2)))],
                                           api_key=600, valid="0-2"))
    write(schemas, "BazResponse.json", spec("BazResponse", [], "response", api_key=600, valid="0-2"))
    assert main([str(schemas), "--out", str(tmp_path / "bazpkg")]) == 0
    monkeypatch.syspath_prepend(str(tmp_path))
    return importlib.import_module("bazpkg").load("python")["BazRequest"]


@pytest.mark.parametrize("header_versions, rule", [
    ({"0": "1", "2+": "2"}, "should start at 1"),
    ({"1+": "1"}, "should start at 0"),
    ({"0-1": "1", "2-3": "2"}, "must be open-ended"),
    ({"0+": "x"}, "is not a non-negative integer"),
])
def test_header_versions_must_cover_every_version(tmp_path, header_versions, rule):
    rejected(tmp_path, [], "FooRequest.headerVersions", rule, headerVersions=header_versions)


def test_header_versions_from_the_spec_are_used(tmp_path):
    from kafkaproto_codegen.render import spec_rows
    (s,) = [build_spec("x.json", spec("FooRequest", [], headerVersions={"0-2": "1", "3+": "2"}))]
    assert spec_rows([s])[0]["header"] == (1, 1, 1, 2)  # flexibleVersions (2+) alone would say 2 at v2
    with pytest.raises(SpecError, match="ApiVersions responses use header version 0"):
        build_spec("x.json", spec("ApiVersionsResponse", [], "response", api_key=18, headerVersions={"0+": "1"}))


def test_every_error_of_a_spec_set_in_one_run(tmp_path, capsys):
    schemas = tmp_path / "schemas"
    write(schemas, "FooRequest.json", spec("FooRequest", [fld("A", "int33"), fld("B", "int32", entityType="x"),
                                                          fld("C", "string")]))
    write(schemas, "FooResponse.json", spec("FooResponse", [fld("D", "strin")], "response"))
    write(schemas, "BarRequest.json", spec("BarRequest", [], api_key=501))  # no response
    with pytest.raises(SpecError) as info:
        load_model([schemas])
    found = {(Path(e.file).name, e.where) for e in info.value.errors}
    assert found == {("FooRequest.json", "FooRequest.A"), ("FooRequest.json", "FooRequest.B"),
                     ("FooResponse.json", "FooResponse.D"), ("BarRequest.json", "BarRequest")}
    assert main([str(schemas), "--check"]) == 1
    assert capsys.readouterr().err.count("kafkaproto-codegen: error: ") == 4


def test_the_cli_writes_only_into_a_folder_it_owns(tmp_path, capsys):
    schemas, out = foo_schemas(tmp_path / "schemas"), tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    assert main([str(schemas), "--out", str(out)]) == 1
    assert "notes.txt, which kafkaproto-codegen did not write" in capsys.readouterr().err
    assert (out / "notes.txt").read_text() == "mine" and not (out / "__init__.py").exists()
    fresh = tmp_path / "fresh"
    assert main([str(schemas), "--out", str(fresh)]) == 0
    assert main([str(schemas), "--out", str(fresh)]) == 0  # its own output it may rewrite
    assert all(oct(p.stat().st_mode & 0o777) == oct(0o666 & ~current_umask()) for p in fresh.iterdir()
               if p.is_file())


def current_umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_cli_without_out_or_check_says_so(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main([str(foo_schemas(tmp_path / "schemas"))])
    assert "--out DIR is needed" in capsys.readouterr().err


def test_without_jinja2_the_cli_says_what_to_install(tmp_path):
    code = ("import sys; sys.modules['jinja2'] = None; from kafkaproto_codegen.__main__ import main; "
            f"sys.exit(main([{str(foo_schemas(tmp_path / 'schemas'))!r}, '--check']))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "pip install 'kafkaproto[codegen]'" in proc.stderr and "Traceback" not in proc.stderr
