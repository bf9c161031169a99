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

from kafka_jvm import KafkaUnavailable, cache_lock

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


def _download(go):
    download = subprocess.run([go, "mod", "download"], cwd=GO_MODULE, env=_go_env(), capture_output=True,
                              text=True, timeout=600)
    if download.returncode != 0:
        raise KafkaUnavailable(f"go mod download (tests/go) failed: {download.stderr[-2000:]}")


def _build(go, binaries):
    _download(go)
    partial = binaries.with_name(binaries.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    build = subprocess.run([go, "build", "-o", str(partial) + os.sep, "./cmd/..."], cwd=GO_MODULE, env=_go_env(),
                           capture_output=True, text=True, timeout=600)
    # The modules are there and go ran: a build error is a real failure, not a skip.
    assert build.returncode == 0, f"go build (tests/go) failed:\n{build.stderr[-3000:]}"
    partial.rename(binaries)


def _go():
    go = shutil.which("go")
    if go is None:
        raise KafkaUnavailable("go is not installed (needed to build the franz-go and Sarama clients in tests/go)")
    return go


def built():
    """The folder holding the built programs."""
    go = _go()
    digest = _sources_digest()
    binaries = GO_CACHE / digest
    if not binaries.is_dir():
        with cache_lock(f"go-{digest}"):  # parallel workers build once
            if not binaries.is_dir():
                GO_CACHE.mkdir(parents=True, exist_ok=True)
                _build(go, binaries)
    return binaries


FRANZ_GO_TESTS = "github.com/twmb/franz-go/pkg/kgo"
SARAMA_TESTS = "github.com/IBM/sarama"
TOXIPROXY = "github.com/Shopify/toxiproxy/v2/cmd/server"  # a tool of tests/go/go.mod


def _from_modules(name, build):
    """A binary go builds from the modules go.sum pins (``go build|test -o <binary> <the rest>``), once per go.sum."""
    go = _go()
    digest = hashlib.sha256((GO_MODULE / "go.sum").read_bytes()).hexdigest()[:16]
    binary = GO_CACHE / f"{name}-{digest}"
    if not binary.is_file():
        with cache_lock(f"go-{name}-{digest}"):
            if not binary.is_file():
                GO_CACHE.mkdir(parents=True, exist_ok=True)
                _download(go)
                partial = binary.with_name(binary.name + ".partial")
                run = subprocess.run([go, build[0], "-o", str(partial), *build[1:]], cwd=GO_MODULE, env=_go_env(),
                                     capture_output=True, text=True, timeout=600)
                assert run.returncode == 0, f"go {' '.join(build)} failed:\n{run.stderr[-3000:]}"
                partial.rename(binary)
    return binary


def _package_folder(package):
    listed = subprocess.run([_go(), "list", "-f", "{{.Dir}}", package], cwd=GO_MODULE, env=_go_env(),
                            capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0, f"go list {package} failed:\n{listed.stderr[-3000:]}"
    return Path(listed.stdout.strip())


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
