import json
import os
import sys

import pytest
from hypothesis import HealthCheck, settings

from extension_build import built_example, extension, without_extensions  # noqa: F401 - fixtures

from kafka_jvm import (
    GOLDEN,
    GOLDEN_UNSTABLE,
    KAFKA_VERSIONS,
    ORACLE_VERSIONS,
    KafkaBroker,
    KafkaUnavailable,
    Oracle,
    unavailable,
)

# CI runs a fixed, repeatable set of examples; locally, hypothesis explores.
settings.register_profile(
    "ci", derandomize=True, database=None, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile(
    "dev", deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile("ci" if os.environ.get("CI") else os.environ.get("HYPOTHESIS_PROFILE", "dev"))

# Hypothesis's pytest plugin wraps a parametrized test's settings once per parameter, and
# reading a setting walks that chain: several hundred parameters need a deeper stack.
sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))


# ---- the pure-Python pass -----------------------------------------------------------------------------------
# The codecs have twins: compiled modules (kafkaproto._core, the generated _c_* classes, records._crecords,
# _cfields, _cjsonview, the capture's _cpcap, _cpackets, _crecordrows and _carrowcols) and pure-Python ones that
# must behave the same.
# KAFKAPROTO_PURE=1 makes the pure twins the ones in use. Run after the compiled pass on the same build (as .ci/run
# and tox do), it repeats only what can differ between them:
# - a test parametrized over the implementations ("impl") ran its python case in the compiled pass already;
# - a module marked above_the_codecs tests code that sits on top of the twins and is the same code whichever runs
#   (the broker, Spark, packaging, the import contracts): the twins' equality is tested below it, case by case.
# Everything else reaches the twins through the implementation in use, and runs in both passes.


def _check_groups_hold(config):
    """Under pytest -n, tests marked xdist_group must run on one worker (one Kafka broker, one Spark session for
    the run). pytest-xdist's loadgroup tells its controller a test's group by adding it to the test's node id
    (Item._nodeid), which pytest 9.2 no longer reads: stop at once rather than start every shared service on
    every worker."""
    import inspect

    from _pytest.nodes import Node

    if config.getoption("dist", None) != "loadgroup" or hasattr(config, "workerinput"):
        return
    if "_nodeid" not in inspect.getsource(Node.nodeid.fget):
        raise pytest.UsageError(f"pytest {pytest.__version__} does not let pytest-xdist keep tests of one "
                                "xdist_group on one worker: install the test extra (pip install '.[test]'), which "
                                "pins a pytest that does")


def pytest_configure(config):
    _check_groups_hold(config)
    config.addinivalue_line("markers", "above_the_codecs: tests code that runs the same over either codec "
                                       "implementation; the pure-Python pass after a compiled one leaves it out")


def _after_a_compiled_pass():
    import importlib.util

    return os.environ.get("KAFKAPROTO_PURE") == "1" and importlib.util.find_spec("kafkaproto._core") is not None


def pytest_collection_modifyitems(config, items):
    if not _after_a_compiled_pass():
        return
    done = [item for item in items if item.get_closest_marker("above_the_codecs")
            or "impl" in getattr(getattr(item, "callspec", None), "params", {})]
    if done:
        config.hook.pytest_deselected(items=done)
        chosen = set(map(id, done))
        items[:] = [item for item in items if id(item) not in chosen]


_oracles = {}


def _oracle(version):
    """One Oracle.java process per pinned version for the whole run."""
    if version not in _oracles or not _oracles[version].alive:
        try:
            _oracles[version] = Oracle(version)
        except KafkaUnavailable as exc:
            unavailable(str(exc))
    return _oracles[version]


# Function-scoped so that a test after one whose oracle died gets a fresh one.
@pytest.fixture(params=ORACLE_VERSIONS, ids=lambda v: f"kafka-{v}")
def kafka_oracle(request):
    """Apache Kafka's codec (tests/kafka/Oracle.java) running on one pinned version's jars."""
    return _oracle(request.param)


@pytest.fixture
def kafka_oracles():
    """Kafka's codec on every pinned version."""
    return [_oracle(v) for v in ORACLE_VERSIONS]


def pytest_unconfigure(config):
    for oracle in _oracles.values():
        oracle.close()
    for broker in _kafka_brokers.values():
        broker.stop()


# ---- the reports printed at the end of the run -------------------------------------------------------------
# Under pytest -n each worker tallies its own tests; it sends its tallies to the process that prints them.

_worker_reports = []


def _reports():
    """This process's tallies as plain values: golden vectors per Kafka jar, and the comparisons with tshark."""
    import tshark

    golden = {}
    if any(GOLDEN.values()):
        from test_kafka_messages import PAIRS

        for version, checked in GOLDEN.items():
            oracle = _oracles.get(version)
            if oracle is None or not oracle.alive:
                continue
            golden[version] = {
                "checked": sorted(f"{n} v{v}" for n, v in checked),
                "absent": [f"{c.__name__} v{v}" for c, v in PAIRS if v not in oracle.versions(c.__name__)[0]],
                "unstable": {f"{n} v{v}": problem for (n, v), problem in GOLDEN_UNSTABLE[version].items()}}
    return {"golden": golden, "tshark": tshark.tallies()}


def pytest_sessionfinish(session):
    if hasattr(session.config, "workeroutput"):  # a pytest -n worker
        session.config.workeroutput["reports"] = json.dumps(_reports())


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    if "reports" in getattr(node, "workeroutput", {}):
        _worker_reports.append(json.loads(node.workeroutput["reports"]))


def pytest_terminal_summary(terminalreporter):
    import tshark

    reports = [_reports()] + _worker_reports
    write = terminalreporter.write_line
    golden = {}
    for report in reports:
        for version, part in report["golden"].items():
            mine = golden.setdefault(version, {"checked": set(), "absent": part["absent"], "unstable": {}})
            mine["checked"].update(part["checked"])
            for pair, problem in part["unstable"].items():
                if problem or pair not in mine["unstable"]:
                    mine["unstable"][pair] = problem
    if golden:
        terminalreporter.section("golden vectors from Apache Kafka")
    # How many (message, version) pairs each Kafka jar confirmed, and which it does not define.
    for version, part in sorted(golden.items()):
        agree = sorted(pair for pair, problem in part["unstable"].items() if problem is None)
        differ = sorted(f"{pair} ({problem})" for pair, problem in part["unstable"].items() if problem)
        write(f"Kafka {version}: {len(part['checked'])} (message, version) pairs verified.")
        write(f"  Unstable in this release, reported only: {len(agree)} agree; differ: {'; '.join(differ) or 'none'}")
        write(f"  Not in this release: {', '.join(part['absent']) or 'none'}")
    lines = tshark.summary_lines([report["tshark"] for report in reports])
    if lines:
        terminalreporter.section(f"kafkaproto against tshark {tshark.tshark_version()}")
        for line in lines:
            write(line)


_kafka_brokers = {}


def _kafka_broker(version, tmp_path_factory):
    """One live broker per pinned version for the whole run, shared by every test that asks for it (stopped when
    the run ends)."""
    broker = _kafka_brokers.get(version)
    if broker is None:
        try:
            broker = _kafka_brokers[version] = KafkaBroker(version, tmp_path_factory.mktemp(f"kafka-{version}"))
        except KafkaUnavailable as exc:
            unavailable(str(exc))
    return broker


@pytest.fixture(scope="session", params=KAFKA_VERSIONS, ids=lambda v: f"kafka-{v}")
def kafka_broker(request, tmp_path_factory):
    """A live single-node KRaft broker of each pinned version (see kafka_jvm.KafkaBroker)."""
    return _kafka_broker(request.param, tmp_path_factory)


@pytest.fixture(scope="session")
def kafka_brokers(tmp_path_factory):
    """The same brokers by version, for tests that need one version only: kafka_brokers("4.3.1")."""
    return lambda version: _kafka_broker(version, tmp_path_factory)
