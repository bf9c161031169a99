"""The Go client programs in tests/go (franz-go and Sarama), built once per change of their sources.

``built()`` gives the folder holding the ``franz`` and ``sarama`` programs, in ``~/.cache/kafkaproto/go``
(``KAFKAPROTO_GO_CACHE`` moves it); parallel test workers and the capture recorder build them once, behind a lock.
Without go, or when the modules cannot be downloaded, it raises kafka_jvm.KafkaUnavailable.
"""

import hashlib
import os
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


def _build(go, binaries):
    download = subprocess.run([go, "mod", "download"], cwd=GO_MODULE, env=_go_env(), capture_output=True,
                              text=True, timeout=600)
    if download.returncode != 0:
        raise KafkaUnavailable(f"go mod download (tests/go) failed: {download.stderr[-2000:]}")
    partial = binaries.with_name(binaries.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    build = subprocess.run([go, "build", "-o", str(partial) + os.sep, "./cmd/..."], cwd=GO_MODULE, env=_go_env(),
                           capture_output=True, text=True, timeout=600)
    # The modules are there and go ran: a build error is a real failure, not a skip.
    assert build.returncode == 0, f"go build (tests/go) failed:\n{build.stderr[-3000:]}"
    partial.rename(binaries)


def built():
    """The folder holding the built programs."""
    go = shutil.which("go")
    if go is None:
        raise KafkaUnavailable("go is not installed (needed to build the franz-go and Sarama clients in tests/go)")
    digest = _sources_digest()
    binaries = GO_CACHE / digest
    if not binaries.is_dir():
        with cache_lock(f"go-{digest}"):  # parallel workers build once
            if not binaries.is_dir():
                GO_CACHE.mkdir(parents=True, exist_ok=True)
                _build(go, binaries)
    return binaries
