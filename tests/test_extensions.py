"""Extensions (kafkaproto-codegen extend): the rules that keep them compatible with kafkaproto's own specs,
the package the command builds, and what registering one changes; on the partition-deletion example."""

import json
import os
import re
import shlex
import subprocess
import sys
import types
from pathlib import Path

import pytest

from kafkaproto import registry
from kafkaproto._impl import IMPL
from kafkaproto.exceptions import DecodeError
from kafkaproto import decode_request, encode_request
from kafkaproto.messages import MetadataResponse, RequestHeader
from kafkaproto.metadata import PartitionRecord, decode_record, encode_record
from kafkaproto.uuid import Uuid
from kafkaproto_codegen.errors import SpecError
from kafkaproto_codegen.extend import BuiltinSpecs, load_extension

from extension_build import EXAMPLE

ROOT = Path(__file__).resolve().parents[1]
BUILTIN = BuiltinSpecs()
METADATA_RESPONSE = BUILTIN.files["MetadataResponse"]


def write(folder, data):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{data['name']}.json"
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


def refused(tmp_path, *specs):
    """The error of an extension made of these specs; it must name the extension's file."""
    paths = [write(tmp_path / "ext", s) for s in specs]
    with pytest.raises(SpecError) as info:
        load_extension([tmp_path / "ext"], BUILTIN)
    text = str(info.value)
    assert any(str(p) in text for p in paths), text
    return text


def partition_mode(**changes):
    field = {"name": "Mode", "type": "int8", "versions": "9+", "taggedVersions": "9+", "tag": 0, "default": "0",
             "about": "mode"}
    field.update(changes)
    return {"apiKey": 3, "type": "response", "name": "MetadataResponse", "fields": [
        {"name": "Topics", "fields": [{"name": "Partitions", "fields": [field]}]}]}


def new_api(name, key, fields=()):
    base = {"apiKey": key, "validVersions": "0", "flexibleVersions": "0+", "fields": list(fields)}
    return ({**base, "type": "request", "name": f"{name}Request"},
            {**base, "type": "response", "name": f"{name}Response"})


# ---- the rules, one test each ------------------------------------------------------------------

def test_the_example_is_accepted_and_amends_four_specs():
    ext = load_extension([EXAMPLE], BUILTIN)
    assert sorted(ext.amends) == ["MetadataRequest", "MetadataResponse", "PartitionRecord", "UpdateMetadataRequest"]
    assert {s.name for s in ext.specs} >= {"DeletePartitionsRequest", "DeleteTopicPartitionsRecord"}


def test_an_api_key_kafkaproto_uses_is_refused(tmp_path):
    text = refused(tmp_path, *new_api("Shrink", 3))
    assert "api key 3 is already kafkaproto's MetadataRequest" in text
    assert str(BUILTIN.files["MetadataRequest"]) in text


def test_a_metadata_record_type_kafkaproto_uses_is_refused(tmp_path):
    record = {"apiKey": 2, "type": "metadata", "name": "ShrinkRecord", "validVersions": "0",
              "flexibleVersions": "0+", "fields": []}
    text = refused(tmp_path, record)
    assert "record type 2 is already kafkaproto's TopicRecord" in text
    assert str(BUILTIN.files["TopicRecord"]) in text


def test_a_tag_used_twice_is_refused(tmp_path):
    record = {"apiKey": 3, "type": "metadata", "name": "PartitionRecord", "fields": [
        {"name": "Mode", "type": "int8", "versions": "0+", "taggedVersions": "0+", "tag": 1, "about": "mode"}]}
    text = refused(tmp_path, record)
    assert "tag 1 is already used by EligibleLeaderReplicas" in text
    assert str(BUILTIN.files["PartitionRecord"]) in text


def test_an_untagged_field_at_a_known_version_is_refused(tmp_path):
    spec = partition_mode(taggedVersions=None, tag=None)
    field = spec["fields"][0]["fields"][0]["fields"][0]
    del field["taggedVersions"], field["tag"]
    text = refused(tmp_path, spec)
    assert "MetadataResponse.Topics.Partitions.Mode: new field is in versions 9-13" in text
    assert str(METADATA_RESPONSE) in text


def test_another_type_for_a_known_field_is_refused(tmp_path):
    spec = {"apiKey": 3, "type": "response", "name": "MetadataResponse", "fields": [
        {"name": "ThrottleTimeMs", "type": "int64", "versions": "3+", "about": "x"}]}
    text = refused(tmp_path, spec)
    assert "ThrottleTimeMs.type: type is 'int64' here but 'int32'" in text and str(METADATA_RESPONSE) in text


def test_known_versions_of_a_field_cannot_change(tmp_path):
    spec = {"apiKey": 3, "type": "response", "name": "MetadataResponse", "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "5+", "ignorable": True, "about": "x"}]}
    text = refused(tmp_path, spec)
    assert "versions cover 5-13 of kafkaproto's versions 0-13 here but 3-13" in text


def test_fields_cannot_be_reordered(tmp_path):
    spec = {"apiKey": 3, "type": "response", "name": "MetadataResponse",
            "fields": [{"name": "ClusterId"}, {"name": "Brokers"}]}
    assert "fields are in another order than in kafkaproto's spec" in refused(tmp_path, spec)


def test_versions_cannot_shrink_and_flexible_versions_cannot_change(tmp_path):
    shrink = {"apiKey": 3, "type": "response", "name": "MetadataResponse", "validVersions": "0-12"}
    assert "may only add versions above them" in refused(tmp_path / "a", shrink)
    flexible = {"apiKey": 3, "type": "response", "name": "MetadataResponse", "flexibleVersions": "10+"}
    assert "flexibleVersions is '10+' here but '9+'" in refused(tmp_path / "b", flexible)


def test_a_new_version_needs_both_request_and_response(tmp_path):
    spec = {"apiKey": 3, "type": "response", "name": "MetadataResponse", "validVersions": "0-14"}
    text = refused(tmp_path, spec)
    assert "validVersions 0-14 differ from MetadataRequest's 0-13" in text


def test_a_new_field_needs_a_type(tmp_path):
    spec = {"apiKey": 3, "type": "response", "name": "MetadataResponse", "fields": [{"name": "Moods"}]}
    assert "has no field Moods here; a new field needs a type" in refused(tmp_path, spec)


def test_a_refused_request_is_the_only_error(tmp_path):
    """Its response is not also reported as lacking a request."""
    request, response = new_api("Shrink", 20001)
    request["fields"] = [{"name": "A", "type": "int33", "versions": "0+", "about": "a"}]
    text = refused(tmp_path / "new", request, response)
    assert "ShrinkRequest.A: unknown type 'int33'" in text and "\n" not in text, text
    # An amended request refused, its response amended with it: not "amend both" on top.
    request = {"apiKey": 3, "type": "request", "name": "MetadataRequest", "validVersions": "0-14",
               "flexibleVersions": "10+"}
    response = {"apiKey": 3, "type": "response", "name": "MetadataResponse", "validVersions": "0-14"}
    text = refused(tmp_path / "amended", request, response)
    assert "flexibleVersions is '10+' here but '9+'" in text and "\n" not in text, text


def test_a_refused_response_is_the_only_error(tmp_path):
    request, response = new_api("Shrink", 20001)
    response["fields"] = [{"name": "A", "type": "int33", "versions": "0+", "about": "a"}]
    text = refused(tmp_path, request, response)
    assert "ShrinkResponse.A: unknown type 'int33'" in text and "\n" not in text, text


def test_every_broken_rule_is_reported_in_one_run(tmp_path, capsys):
    from kafkaproto_codegen.__main__ import main

    write(tmp_path / "ext", new_api("Shrink", 3)[0])
    write(tmp_path / "ext", new_api("Shrink", 3)[1])
    write(tmp_path / "ext", partition_mode(tag=None, taggedVersions=None) | {"fields": [
        {"name": "Topics", "fields": [{"name": "Partitions", "fields": [
            {"name": "Mode", "type": "int8", "versions": "9+", "about": "m"}]}]}]})
    assert main(["extend", str(tmp_path / "ext"), "--name", "bad", "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert err.count("kafkaproto-codegen: error:") == 3, err
    assert not (tmp_path / "out").exists()


def test_the_command_writes_only_into_a_folder_it_owns(tmp_path, capsys):
    from kafkaproto_codegen.__main__ import main

    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep")
    assert main(["extend", str(EXAMPLE), "--name", "pd", "--out", str(tmp_path / "mine"), "--no-wheel"]) == 1
    assert "was not written by kafkaproto-codegen extend" in capsys.readouterr().err
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep"
    assert main(["extend", str(EXAMPLE), "--name", "Bad-Name", "--out", str(tmp_path / "new"), "--no-wheel"]) == 1
    assert "must be a new lower-case Python package name" in capsys.readouterr().err


# ---- the built package -------------------------------------------------------------------------

def test_building_compiles_only_the_extension(built_example):
    import zipfile

    names = zipfile.ZipFile(built_example.wheel).namelist()
    compiled = [n for n in names if n.endswith((".so", ".pyd"))]
    assert len([n for n in names if n.endswith(".py") and "/_py_" in n]) == 4  # four modules, not kafkaproto's 40
    assert len(compiled) == (4 if IMPL == "compiled" else 0), names
    assert "partition_deletion/specs/DeletePartitionsRequest.json" in names
    assert ("compiled:" if IMPL == "compiled" else "built, not compiled (KAFKAPROTO_PURE_BUILD=1):") \
        in built_example.output
    # A few seconds for seven specs, not the minutes of kafkaproto's own build.
    assert built_example.seconds < 240


def test_an_installed_extension_is_loaded_by_name(built_example):
    script = (
        "from kafkaproto import registry\n"
        "from kafkaproto.messages import api\n"
        "info = api(10000)\n"
        "print(info.name, list(info.valid_versions), registry.extension_of('DeletePartitionsRequest'),\n"
        "      registry.extension_of('MetadataResponse'), registry.extension_of('FetchRequest'),\n"
        "      type(api('Metadata').response.MetadataResponsePartition()).__module__)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(built_example.site), "KAFKAPROTO_EXTENSIONS": "partition_deletion"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=ROOT.parent)
    assert done.returncode == 0, done.stderr
    prefix = "_c_" if IMPL == "compiled" else "_py_"
    assert done.stdout.split() == ["DeletePartitions", "[0]", "partition_deletion", "partition_deletion", "None",
                                   f"partition_deletion.{prefix}api_0_7"]
    # Importing it while KAFKAPROTO_EXTENSIONS names it too (kafkaproto, loaded by the import, loads it back).
    done = subprocess.run([sys.executable, "-c", "import partition_deletion; from kafkaproto import registry; "
                           "print(len(registry.extensions()))"], capture_output=True, text=True, env=env,
                          cwd=ROOT.parent)
    assert done.returncode == 0 and done.stdout.split() == ["1"], done.stderr
    env["KAFKAPROTO_EXTENSIONS"] = "no_such_extension"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=ROOT.parent)
    assert done.returncode != 0 and "no kafkaproto extension 'no_such_extension'" in done.stderr
    assert "installed extensions: partition_deletion" in done.stderr


def metadata_with_mode(cls, mode):
    partition = cls.MetadataResponsePartition(partition_index=3, leader_id=1, leader_epoch=0, replica_nodes=[1],
                                              isr_nodes=[1], offline_replicas=[])
    if mode is not None:
        partition.mode = mode
    topic = cls.MetadataResponseTopic(name="orders", topic_id=Uuid(1, 2), partitions=[partition])
    return cls(brokers=[], cluster_id="c", controller_id=1, topics=[topic])


def test_a_new_api_round_trips_through_the_frame_functions(extension):
    request = extension.load(IMPL)["DeletePartitionsRequest"]
    body = request(delete_partitions_delay_ms=5000,
                   topics=[request.DeletePartitionsTopic(name="orders", partitions=[4, 5])])
    header = RequestHeader(request_api_key=10000, request_api_version=0, correlation_id=7, client_id="admin")
    frame = encode_request(header, body, 0)
    decoded = decode_request(frame[4:])
    assert decoded.body == body and decoded.header.correlation_id == 7
    assert registry.api("DeletePartitions").api_key == 10000


def test_the_mode_is_a_tag_clients_without_the_extension_skip_and_keep(extension):
    extended = registry.api("Metadata").response
    assert extended is not MetadataResponse  # the name this module imported before the extension was loaded
    for version in (9, 12, 13):
        with_mode = metadata_with_mode(extended, 1).encode(version)
        plain = metadata_with_mode(MetadataResponse, None)
        # Without the extension the mode is an unknown tag, kept byte for byte.
        old = MetadataResponse.decode(with_mode, version)
        assert old.topics[0].partitions[0].unknown_tagged_fields == {0: b"\x01"}
        assert old.encode(version) == with_mode
        assert old.topics[0].partitions[0].partition_index == plain.topics[0].partitions[0].partition_index
        # With it, the mode is a field; ReadWrite (the default) is not written, so such a reply is
        # byte for byte what a broker without the extension sends.
        assert extended.decode(with_mode, version).topics[0].partitions[0].mode == 1
        assert metadata_with_mode(extended, 0).encode(version) == plain.encode(version)
    assert metadata_with_mode(extended, 0).encode(8) == metadata_with_mode(MetadataResponse, None).encode(8)
    # Equal to kafkaproto's own class when the new field is at its default, and only then.
    assert metadata_with_mode(extended, 0) == metadata_with_mode(MetadataResponse, None)
    assert metadata_with_mode(MetadataResponse, None) == metadata_with_mode(extended, 0)
    assert metadata_with_mode(extended, 1) != metadata_with_mode(MetadataResponse, None)


@pytest.fixture
def own_classes(without_extensions):
    """kafkaproto's own MetadataResponse and PartitionRecord, as its modules hold them before an extension loads."""
    import kafkaproto.messages
    import kafkaproto.metadata

    assert not hasattr(kafkaproto.messages, "DeletePartitionsRequest")
    return kafkaproto.messages.MetadataResponse, kafkaproto.metadata.PartitionRecord


def test_module_attributes_follow_the_registry(own_classes, extension):
    """kafkaproto.messages and kafkaproto.metadata hold the registry's classes: an extension's amended and new
    classes once it is imported, kafkaproto's own again once it is unregistered."""
    import kafkaproto.messages
    import kafkaproto.metadata
    from kafkaproto.metadata import record_class

    assert kafkaproto.messages.MetadataResponse is registry.api("Metadata").response is not own_classes[0]
    assert kafkaproto.metadata.PartitionRecord is record_class(3) is not own_classes[1]
    assert kafkaproto.messages.DeletePartitionsRequest is registry.api(10000).request
    assert "DeletePartitionsRequest" in kafkaproto.messages.__all__
    assert "DeleteTopicPartitionsRecord" in kafkaproto.metadata.__all__
    from kafkaproto.messages import MetadataResponse as imported_now
    assert "mode" in {f.attr for f in imported_now.MetadataResponsePartition._fields}

    registry.unregister(extension)
    assert (kafkaproto.messages.MetadataResponse, kafkaproto.metadata.PartitionRecord) == own_classes
    assert not hasattr(kafkaproto.messages, "DeletePartitionsRequest")
    assert "DeletePartitionsRequest" not in kafkaproto.messages.__all__
    assert "ApiKey" in kafkaproto.messages.__all__ and "encode_record" in kafkaproto.metadata.__all__


def test_metadata_records_with_and_without_the_extension(extension):
    classes = extension.load(IMPL)
    record = classes["PartitionRecord"](partition_id=4, topic_id=Uuid(1, 2), replicas=[1], isr=[1], leader=1,
                                        mode=1)
    value = encode_record(record)
    assert decode_record(value)[0].mode == 1
    delete = classes["DeleteTopicPartitionsRecord"](topic_id=Uuid(1, 2), delete_partitions=4,
                                                   delete_partitions_delay_timestamp=1_700_000_060_000,
                                                   create_timestamp=1_700_000_000_000)
    delete_value = encode_record(delete)
    assert decode_record(delete_value) == (delete, 0)
    registry.unregister(extension)  # now as a reader without the extension
    old, version = decode_record(value)
    assert type(old) is PartitionRecord and old.unknown_tagged_fields == {3: b"\x01"}
    assert encode_record(old, version) == value
    with pytest.raises(DecodeError, match="unknown metadata record type 10000"):
        decode_record(delete_value)


def test_the_registry_refuses_a_second_amendment_and_a_stale_one(extension):
    other = types.ModuleType("other_extension")
    other.SPECS, other.load = {"MetadataResponse": extension.SPECS["MetadataResponse"]}, extension.load
    other.AMENDS = {"MetadataResponse": extension.AMENDS["MetadataResponse"]}
    with pytest.raises(registry.RegistryError, match="other_extension amends MetadataResponse, which "
                                                     "partition_deletion amends too"):
        registry.register(other)
    registry.register(extension)  # again: nothing happens
    assert registry.extensions() == [extension]


def test_an_extension_built_on_another_kafkaproto_is_refused(without_extensions):
    stale = types.ModuleType("stale_extension")
    stale.SPECS = {"MetadataResponse": registry.spec("MetadataResponse")}
    stale.AMENDS = {"MetadataResponse": "0" * 16}
    stale.load = lambda impl: {"MetadataResponse": registry.message_class("MetadataResponse")}
    with pytest.raises(registry.RegistryError, match="built on another version of kafkaproto's MetadataResponse"):
        registry.register(stale)
    assert stale not in registry.extensions()


def test_the_readme_walks_through_this(built_example, extension):
    from test_readme import EXTENDING, sections

    text = sections()[EXTENDING]
    # The commands the README gives are the ones the built_example fixture runs.
    assert ("kafkaproto-codegen extend examples/partition-deletion/specs --name partition_deletion "
            "--out build/partition-deletion") in text
    assert "pip install build/partition-deletion/dist/partition_deletion-0.1.0-*.whl" in text
    assert built_example.wheel.name.startswith("partition_deletion-0.1.0-")
    (block,) = re.findall(r"```python\n(.*?)```", text, re.S)
    exec(compile(block, "README.md", "exec"), {})


def test_the_command_runs_again_over_its_own_project(tmp_path, capsys):
    from kafkaproto_codegen.__main__ import main

    out = tmp_path / "project"
    for _ in range(2):
        assert main(["extend", str(EXAMPLE), "--name", "pd", "--out", str(out), "--no-wheel"]) == 0
    assert sorted(p.name for p in (out / "pd" / "specs").iterdir()) == sorted(p.name for p in EXAMPLE.iterdir())
    (out / "pd" / "notes.txt").write_text("mine")
    assert main(["extend", str(EXAMPLE), "--name", "pd", "--out", str(out), "--no-wheel"]) == 1
    assert "notes.txt, which kafkaproto-codegen did not write" in capsys.readouterr().err


def test_an_out_folder_named_like_a_pypi_project_builds_the_extension(tmp_path):
    """--out build: pip is handed the folder as a path, not the word "build" (a project on PyPI), and the wheel
    reported is the extension's."""
    write(tmp_path / "ext", new_api("Tiny", 20000)[0])
    write(tmp_path / "ext", new_api("Tiny", 20000)[1])
    command = [str(Path(sys.executable).parent / "kafkaproto-codegen"), "extend", "ext", "--name", "tiny_ext",
               "--out", "build"]
    done = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path,
                          env={**os.environ, "KAFKAPROTO_PURE_BUILD": "1"})
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,) = (tmp_path / "build" / "dist").iterdir()
    assert wheel.name.startswith("tiny_ext-0.1.0-"), wheel.name
    assert f"built, not compiled (KAFKAPROTO_PURE_BUILD=1): {wheel}" in done.stdout


# ---- what the command needs: said in one line, before anything is written --------------------------------------

CODEGEN = "pip install 'kafkaproto[codegen]' (from a checkout: pip install '.[codegen]')"


def extend_without(hidden, *args, cwd, env=()):
    """kafkaproto-codegen extend ARGS in a Python where the hidden modules are not installed."""
    code = (f"import sys\nfor name in {list(hidden)!r}:\n    sys.modules[name] = None\n"
            "from kafkaproto_codegen.__main__ import main\nsys.exit(main(sys.argv[1:]))\n")
    return subprocess.run([sys.executable, "-c", code, "extend", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env={**os.environ, "KAFKAPROTO_PURE_BUILD": "0", **dict(env)}, timeout=600)


@pytest.mark.parametrize("hidden, options, says", [
    ("jinja2", ["--no-wheel"], f"the generator needs jinja2: {CODEGEN}"),
    ("jinja2", [], f"the generator needs jinja2: {CODEGEN}"),
    ("Cython", [], f"compiling the extension needs Cython: {CODEGEN}; or give --no-wheel to write the project only"),
    ("setuptools", [], f"compiling the extension needs setuptools: {CODEGEN}; or give --no-wheel to write the "
                       "project only"),
])
def test_a_missing_dependency_is_named_with_its_extra(tmp_path, hidden, options, says):
    done = extend_without([hidden], EXAMPLE, "--name", "pd", "--out", tmp_path / "out", *options, cwd=tmp_path)
    assert (done.returncode, done.stderr) == (2, f"kafkaproto-codegen: error: {says}\n"), done.stderr
    assert not (tmp_path / "out").exists() and not done.stdout


def test_writing_the_project_needs_no_compiler(tmp_path):
    done = extend_without(["Cython"], EXAMPLE, "--name", "pd", "--out", tmp_path / "out", "--no-wheel",
                          cwd=tmp_path)
    assert done.returncode == 0 and (tmp_path / "out" / "pd" / "specs").is_dir(), done.stderr
    pure = extend_without(["Cython"], EXAMPLE, "--name", "pd", "--out", tmp_path / "out", "--no-wheel",
                          cwd=tmp_path, env={"KAFKAPROTO_PURE_BUILD": "1"})
    assert pure.returncode == 0, pure.stderr


def test_a_failed_compile_is_one_line_with_the_log_and_the_command(tmp_path):
    """The compiler fails (CC=false): the error names the log and the command that builds the wheel again, which
    then works with a compiler."""
    write(tmp_path / "ext", new_api("Tiny", 20000)[0])
    write(tmp_path / "ext", new_api("Tiny", 20000)[1])
    out = tmp_path / "project"
    done = extend_without([], "ext", "--name", "tiny_ext", "--out", out, cwd=tmp_path, env={"CC": "false"})
    assert done.returncode == 1, done.stdout + done.stderr
    line = done.stderr.strip()
    assert "\n" not in line and "Traceback" not in line, done.stderr
    log = out / "build.log"
    assert line.startswith(f"kafkaproto-codegen: error: compiling {out} failed: pip's output is in {log}; "), line
    assert "Failed building wheel for tiny-ext" in log.read_text(), log.read_text()[-2000:]
    command = line.split("build the wheel with: ", 1)[1]
    assert "--wheel-dir" in command and str(out) in shlex.split(command), command
    if IMPL == "python":
        return  # compiling again takes a while; the compiled pass does it
    again = subprocess.run(["bash", "-c", command], capture_output=True, text=True, cwd=tmp_path, timeout=600,
                           env={k: v for k, v in os.environ.items() if k != "CC"})
    assert again.returncode == 0, again.stdout + again.stderr
    (wheel,) = (out / "dist").glob("*.whl")
    assert wheel.name.startswith("tiny_ext-0.1.0-") and not wheel.name.endswith("-none-any.whl"), wheel.name


def test_every_amended_request_keeps_its_new_tag_without_the_extension(extension):
    """MetadataRequest's include_partition_modes and UpdateMetadataRequest's partition mode, at every version
    that carries them: the extension reads them; kafkaproto's own classes keep them as unknown tags, byte for byte."""
    from kafkaproto.messages import load_implementation

    own = load_implementation()
    MetadataRequest, UpdateMetadataRequest = own["MetadataRequest"], own["UpdateMetadataRequest"]
    extended = registry.api("Metadata").request
    for version in range(9, 14):
        wire = extended(topics=None, include_partition_modes=True).encode(version)
        assert extended.decode(wire, version).include_partition_modes is True
        old = MetadataRequest.decode(wire, version)
        assert old.unknown_tagged_fields == {0: b"\x01"} and old.encode(version) == wire
    update = registry.api("UpdateMetadata").request
    for version in range(6, 9):
        state = update.UpdateMetadataPartitionState(partition_index=1, leader=1, isr=[1], replicas=[1], mode=-1)
        body = update(controller_id=1, topic_states=[update.UpdateMetadataTopicState(
            topic_name="t", topic_id=Uuid(1, 2) if version >= 7 else Uuid.ZERO, partition_states=[state])])
        wire = body.encode(version)
        assert extended is not MetadataRequest and update is not UpdateMetadataRequest
        assert update.decode(wire, version) == body
        old = UpdateMetadataRequest.decode(wire, version)
        assert old.topic_states[0].partition_states[0].unknown_tagged_fields == {0: b"\xff"}
        assert old.encode(version) == wire


def test_a_new_version_of_a_known_message(tmp_path):
    """Metadata v14 with a new field: the versions kafkaproto knows keep their bytes, the new one carries it."""
    from kafkaproto.messages import MetadataResponse
    from kafkaproto_codegen.render import render, write_package

    request = {"apiKey": 3, "type": "request", "name": "MetadataRequest", "validVersions": "0-14"}
    response = {"apiKey": 3, "type": "response", "name": "MetadataResponse", "validVersions": "0-14", "fields": [
        {"name": "ThrottleTimeMs"},
        {"name": "Region", "type": "string", "versions": "14+", "default": "", "about": "Where the cluster is."},
        {"name": "Brokers"}]}
    for spec in (request, response):
        write(tmp_path / "ext", spec)
    # The amended specs rendered as a plain package, so that importing it registers nothing.
    write_package(render(load_extension([tmp_path / "ext"], BUILTIN).specs), tmp_path / "out" / "v14")
    sys.path.insert(0, str(tmp_path / "out"))
    try:
        import v14
        classes = v14.load("python")
    finally:
        sys.path.remove(str(tmp_path / "out"))
        sys.modules.pop("v14", None)
    extended = classes["MetadataResponse"]
    assert list(extended.valid_versions) == list(range(15))
    # Placed where the extension put it: after ThrottleTimeMs, before Brokers.
    assert [f.name for f in extended._fields][:3] == ["ThrottleTimeMs", "Region", "Brokers"]
    body = dict(brokers=[], cluster_id="c", controller_id=1, topics=[])
    for version in range(14):
        assert extended(**body).encode(version) == MetadataResponse(**body).encode(version)
    wire = extended(region="eu", **body).encode(14)
    assert extended.decode(wire, 14).region == "eu"
    assert wire[4:7] == b"\x03eu"  # right after the throttle time: a compact string of 2 bytes
