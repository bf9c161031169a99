"""The Go client programs in tests/go (franz-go and Sarama), built once per change of their sources.

``built()`` gives the folder holding the ``franz`` and ``sarama`` programs; ``franz_go_tests()``,
``sarama_functional_tests()`` and ``toxiproxy()`` the clients' own test binaries and the proxy Sarama's need, at
the versions go.mod pins; all in ``~/.cache/kafkaproto/go``
(``KAFKAPROTO_GO_CACHE`` moves it); parallel test workers and the capture recorder build them once, behind a lock.
Without go, or when the modules cannot be downloaded, they raise kafka_jvm.KafkaUnavailable.
"""

import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

from kafka_jvm import KafkaUnavailable, cache_lock, unavailable

GO_MODULE = Path(__file__).parent / "go"
GO_CACHE = Path(os.environ.get("KAFKAPROTO_GO_CACHE") or Path.home() / ".cache" / "kafkaproto" / "go")


def _sources_digest():
    digest = hashlib.sha256()
    for path in sorted([GO_MODULE / "go.mod", GO_MODULE / "go.sum", *GO_MODULE.rglob("*.go")]):
        digest.update(str(path.relative_to(GO_MODULE)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _go_env():
    # Only the toolchain installed here (no download of another one), and only the modules go.sum pins.
    return {**os.environ, "GOTOOLCHAIN": "local", "GOFLAGS": "-mod=readonly -buildvcs=false"}


def _download():
    download = subprocess.run([_go(), "mod", "download"], cwd=GO_MODULE, env=_go_env(), capture_output=True,
                              text=True, timeout=600)
    if download.returncode != 0:
        raise KafkaUnavailable(f"go mod download (tests/go) failed: {download.stderr[-2000:]}")


def _once(target, make):
    """target, made by make(target_partial) unless it exists; parallel workers wait for the first to make it."""
    if not target.exists():
        with cache_lock(f"go-{target.name}"):
            if not target.exists():
                GO_CACHE.mkdir(parents=True, exist_ok=True)
                _download()
                partial = target.with_name(target.name + ".partial")
                shutil.rmtree(partial, ignore_errors=True)
                make(partial)
                partial.rename(target)
    return target


def _go_run(*args):
    run = subprocess.run([_go(), *args], cwd=GO_MODULE, env=_go_env(), capture_output=True, text=True, timeout=600)
    # The modules are there and go ran: a build error is a real failure, not a skip.
    assert run.returncode == 0, f"go {' '.join(args)} (tests/go) failed:\n{run.stderr[-3000:]}"
    return run.stdout


def _go():
    go = shutil.which("go")
    if go is None:
        raise KafkaUnavailable("go is not installed (needed to build the franz-go and Sarama clients in tests/go)")
    return go


def built():
    """The folder holding the built programs."""
    return _once(GO_CACHE / _sources_digest(), lambda partial: _go_run("build", "-o", str(partial) + os.sep,
                                                                        "./cmd/..."))


def needed(function):
    """function()'s result, as a fixture wants it: without go or the modules, the test skips (fails in CI)."""
    try:
        return function()
    except KafkaUnavailable as exc:
        unavailable(str(exc))


FRANZ_GO_TESTS = "github.com/twmb/franz-go/pkg/kgo"
SARAMA_TESTS = "github.com/IBM/sarama"
TOXIPROXY = "github.com/Shopify/toxiproxy/v2/cmd/server"  # a tool of tests/go/go.mod


def _from_modules(name, build):
    """A binary go builds from the modules go.sum pins (``go build|test -o <binary> <the rest>``), once per go.sum."""
    digest = hashlib.sha256((GO_MODULE / "go.sum").read_bytes()).hexdigest()[:16]
    return _once(GO_CACHE / f"{name}-{digest}", lambda partial: _go_run(build[0], "-o", str(partial), *build[1:]))


def _package_folder(package):
    return Path(_go_run("list", "-f", "{{.Dir}}", package).strip())


def franz_go_tests():
    """franz-go's own tests of its client (package kgo, the version tests/go/go.mod pins), compiled as one binary
    from the module cache, and the package's folder there, which the binary must run in (a test reads its
    sources); they run against whatever brokers KGO_SEEDS names."""
    return _from_modules("kgo.test", ["test", "-c", FRANZ_GO_TESTS]), _package_folder(FRANZ_GO_TESTS)


def sarama_functional_tests():
    """Sarama's functional tests (build tag functional), compiled from the module cache, and the package's
    folder there; they run against five brokers behind a toxiproxy (TOXIPROXY_ADDR)."""
    return (_from_modules("sarama-functional.test", ["test", "-c", "-tags", "functional", SARAMA_TESTS]),
            _package_folder(SARAMA_TESTS))


def toxiproxy():
    """Shopify's toxiproxy server, the TCP proxy Sarama's functional tests break connections through."""
    return _from_modules("toxiproxy", ["build", TOXIPROXY])


def go_test_outcomes(output):
    """{test name: "PASS" | "FAIL" | "SKIP"} from a Go test binary's -test.v output, subtests too."""
    return {name: outcome for outcome, name in re.findall(r"^\s*--- (PASS|FAIL|SKIP): (\S+)", output, re.MULTILINE)}
