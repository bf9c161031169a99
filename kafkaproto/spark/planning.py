"""What the kafka-pcap source reads, decided on the driver: its options checked, its paths expanded to files, and
the files planned as splits (one task each), for a batch read and for a stream alike. See datasource.py for the
options and the plan."""

import glob as _glob
import json
import math
import os
from urllib.parse import unquote, urlsplit

from pyspark.sql.datasource import InputPartition

from .. import capture, registry
from .._optional import install_hint
from ..capture import ring
from . import schema as _schema

NAME = "kafka-pcap"  # the source's name in spark.read.format
SPLIT_BYTES = 64 << 20  # one split per this much capture
MAX_AUTO_SPLITS = 32  # every split reads the whole file: past this, reading costs more than decoding saves
DEFAULT_IDLE_SECONDS = 60.0  # a stream reads the newest file of a ring once it has not grown for this long

_TRUE = ("true", "1", "yes")
_FALSE = ("false", "0", "no")


# ---- options --------------------------------------------------------------------------------------------------

class ReadOptions:
    """The data source's options, checked: ports (list of int or None), level, bodies, splits (int or None)."""

    def __init__(self, options):
        options = {str(k).lower(): v for k, v in dict(options).items()}
        self.ports = _ports(options.get("ports"))
        self.level = str(options.get("level") or _schema.EXCHANGES).strip().lower()
        if self.level not in _schema.LEVELS:
            raise ValueError(f"option level must be one of {', '.join(_schema.LEVELS)}, not {self.level!r}")
        bodies = options.get("bodies")
        if bodies is not None and str(bodies).strip().lower() == "exact":
            self.bodies = "exact"
        else:
            try:
                self.bodies = _flag("bodies", bodies, True)
            except ValueError:
                raise ValueError(f"option bodies must be true, false or exact, not {bodies!r}") from None
        self.splits = _positive("splits", options.get("splits"))
        self.extensions = [n.strip() for n in str(options.get("extensions") or "").split(",") if n.strip()]
        self.topic_names = _topic_names(options.get("topicnames"))
        names_text = str(options.get("topicnames") or "").strip()
        self.topic_names_file = names_text if names_text and not names_text.startswith("{") else None
        self.names_pass = _flag("namesPass", options.get("namespass"), True)
        # a live cluster to ask for the names of topic IDs the traffic and topicNames leave unnamed (the driver's
        # first pass asks, once per read or micro-batch, only when some are)
        self.bootstrap = str(options.get("bootstrapservers") or "").strip() or None
        self.ring = _flag("ring", options.get("ring"), False)
        lookback = options.get("lookback")
        self.lookback = ring.DEFAULT_LOOKBACK if lookback is None or not str(lookback).strip() \
            else _count("lookback", lookback)
        self.max_files = _positive("maxFilesPerTrigger", options.get("maxfilespertrigger"))
        self.starting = str(options.get("startingposition") or "earliest").strip().lower()
        if self.starting not in ("earliest", "latest"):
            raise ValueError(f"option startingPosition must be earliest or latest, not {self.starting!r}")
        self.idle = _seconds("idle", options.get("idle"), DEFAULT_IDLE_SECONDS)
        registry.load_extensions(self.extensions)  # here at planning too, so that a missing one fails the query
        self.paths = _paths(options)


def _topic_names(value):
    """The TopicNames the option topicNames gives: a JSON object {"<topic id>": "<name>"} (what read_named passes),
    or a file TopicNames.load reads (JSON, CSV, a metadata log) where the driver plans."""
    if value is None or not str(value).strip():
        return None
    text = str(value).strip()
    if text.startswith("{"):
        try:
            return capture.TopicNames(json.loads(text))
        except ValueError as e:
            raise ValueError(f"option topicNames: {e}") from None
    try:
        return capture.TopicNames.load(text)
    except (OSError, ValueError) as e:
        raise ValueError(f"option topicNames: {e}") from None


def _ports(text):
    if text is None or not str(text).strip():
        return None
    try:
        ports = [int(p) for p in str(text).split(",") if p.strip()]
    except ValueError:
        raise ValueError(f"option ports must be port numbers separated by commas, not {text!r}") from None
    if not all(0 < p < 65536 for p in ports):
        raise ValueError(f"option ports: {text!r} holds a number outside 1..65535")
    return ports


def _flag(name, text, default):
    if text is None:
        return default
    value = str(text).strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(f"option {name} must be true or false, not {text!r}")


def _positive(name, text):
    if text is None or not str(text).strip():
        return None
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(f"option {name} must be a whole number of at least 1, not {text!r}")
    return value


def _seconds(name, text, default):
    if text is None or not str(text).strip():
        return default
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise ValueError(f"option {name} must be a number of seconds, 0 or more, not {text!r}")
    return value


def _count(name, text):
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise ValueError(f"option {name} must be a whole number of at least 0, not {text!r}")
    return value


def _paths(options):
    """What load() was given: one string (several paths separated by commas) or a list (kept as is)."""
    if options.get("paths"):
        paths = json.loads(options["paths"])  # load([...]) passes its list as JSON
    elif options.get("path"):
        paths = [p.strip() for p in options["path"].split(",")]
    else:
        paths = []
    paths = [p for p in paths if p]
    if not paths:
        raise ValueError(f"{NAME} needs a path: spark.read.format({NAME!r}).load(path, glob or list of them)")
    return paths


# ---- finding the files ----------------------------------------------------------------------------------------

class CaptureFile:
    """A file to read: where (``location``, see open_capture), its name in the ``file`` column, its size (None
    when unknown), or the error that kept it from being listed."""

    def __init__(self, name, location=None, size=None, error=None, mtime_ns=None, unmatched=False):
        self.name = name
        self.location = location
        self.size = size
        self.error = error
        self.mtime_ns = mtime_ns  # when it was last written, where the filesystem says
        self.unmatched = unmatched  # a glob that matched nothing (yet: a stream waits for files)
        self.gone = False  # deleted between being listed and being looked at
        # A stream reads a file still being written in pieces (kafkaproto.capture.ring.RingReader): ``after``,
        # the bytes earlier micro-batches read; ``open``, the file goes on past ``size``, and ``head`` (see
        # head_of) tells it from a file written anew under the same name.
        self.after = 0
        self.open = False
        self.head = None

    def __repr__(self):
        return f"CaptureFile({self.name!r}, size={self.size}, error={self.error!r})"


def _is_local(path):
    scheme = urlsplit(path).scheme
    return len(scheme) <= 1 or scheme == "file"  # one letter: a Windows drive


def _local_path(path):
    if path.startswith("file:"):
        path = unquote(urlsplit(path).path)
    return os.path.abspath(os.path.expanduser(path))


def _visible(name):
    # Spark's file sources skip these too: marker files (_SUCCESS) and hidden ones.
    return not name.startswith((".", "_"))


def expand(paths):
    """The capture files the paths name, in order: globs expanded, directories walked (hidden files skipped).
    A path that cannot be listed is a CaptureFile with an error; a glob on a remote filesystem without fsspec
    raises ImportError."""
    found = []
    for path in paths:
        try:
            found.extend(_expand_local(path) if _is_local(path) else _expand_remote(path))
        except (OSError, ValueError) as e:
            found.append(CaptureFile(path, error=f"cannot list {path}: {e}"))
    return found


def _expand_local(path):
    local = _local_path(path)
    if _glob.has_magic(local):
        matches = sorted(_glob.glob(local, recursive=True))
        if not matches:
            return [CaptureFile(path, error=f"no file matches {path}", unmatched=True)]
    else:
        matches = [local]
    files = []
    for match in matches:
        if os.path.isdir(match):
            for root, dirs, names in os.walk(match, onerror=_raise):
                dirs[:] = sorted(d for d in dirs if _visible(d))
                files.extend(os.path.join(root, n) for n in sorted(names) if _visible(n))
        else:
            files.append(match)
    out = []
    for name in files:
        try:
            stat = os.stat(name)
        except OSError as e:
            out.append(CaptureFile(name, error=f"cannot read {name}: {e.strerror or e}"))
            out[-1].gone = isinstance(e, FileNotFoundError)  # listed, then deleted (a ring rotating)
            continue
        out.append(CaptureFile(name, ("local", name), stat.st_size, mtime_ns=stat.st_mtime_ns))
    return out


def _raise(error):
    raise error


def _expand_remote(uri):
    if _glob.has_magic(urlsplit(uri).path):
        return _expand_fsspec(uri)
    from pyarrow import fs

    filesystem, base = fs.FileSystem.from_uri(uri)
    info = filesystem.get_file_info(base)
    if info.type == fs.FileType.NotFound:
        return [CaptureFile(uri, error=f"cannot read {uri}: no such file")]
    if info.type != fs.FileType.Directory:
        return [CaptureFile(uri, ("arrow", uri, base), info.size, mtime_ns=info.mtime_ns)]
    # The URI up to where its path starts (s3://, hdfs://namenode:8020): listed paths are joined to it.
    trimmed_uri, trimmed_base = uri.rstrip("/"), base.rstrip("/")
    prefix = trimmed_uri[:-len(trimmed_base)] if trimmed_base and trimmed_uri.endswith(trimmed_base) else None
    listed = filesystem.get_file_info(fs.FileSelector(base, recursive=True))
    out = []
    for entry in sorted(listed, key=lambda e: e.path):
        relative = entry.path[len(base):].lstrip("/")
        if entry.type != fs.FileType.File or not all(_visible(part) for part in relative.split("/")):
            continue
        name = prefix + entry.path if prefix is not None else f"{uri.rstrip('/')}/{relative}"
        out.append(CaptureFile(name, ("arrow", uri, entry.path), entry.size, mtime_ns=entry.mtime_ns))
    return out


def _expand_fsspec(uri):
    try:
        import fsspec
    except ImportError:
        # Not a row: nothing on that filesystem can be listed this way, so the job should not start.
        raise ImportError(f"{uri}: globs on remote filesystems are expanded with fsspec, which is not installed: "
                          f"{install_hint('spark')}, with the filesystem's package (e.g. s3fs); or list the "
                          "files") from None
    filesystem, pattern = fsspec.core.url_to_fs(uri)
    matches = filesystem.glob(pattern, detail=True)
    if not matches:
        return [CaptureFile(uri, error=f"no file matches {uri}", unmatched=True)]
    out = []
    for path, info in sorted(matches.items()):
        if info.get("type") == "directory":
            inner = filesystem.find(path, detail=True)
            entries = sorted((p, i) for p, i in inner.items()
                             if all(_visible(part) for part in p[len(path):].strip("/").split("/")))
        else:
            entries = [(path, info)]
        for name, entry in entries:
            full = filesystem.unstrip_protocol(name)
            out.append(CaptureFile(full, ("fsspec", full), entry.get("size"), mtime_ns=_fsspec_mtime(entry)))
    return out


def _fsspec_mtime(info):
    """The modification time an fsspec listing gives, in nanoseconds (filesystems name and type it differently)."""
    for key in ("mtime", "LastModified", "last_modified", "updated", "created"):
        value = info.get(key)
        if isinstance(value, (int, float)):
            return int(value * 10**9)
        if hasattr(value, "timestamp"):
            return int(value.timestamp() * 10**9)
    return None


HEAD_BYTES = 4096  # a file's first bytes, to know it again after it grew: its header and first packets


def head_of(file, length=None):
    """[length, sha1 hex] of a file's first ``length`` bytes (default: up to HEAD_BYTES of its size): a file
    grown since has the same head, one a ring wrote anew (first packets of another time) another. None when it
    cannot be read."""
    import hashlib

    if length is None:
        length = min(file.size or 0, HEAD_BYTES)
    try:
        with open_capture(file.location) as stream:
            data = b""
            while len(data) < length:
                chunk = stream.read(length - len(data))
                if not chunk:
                    break
                data += chunk
    except Exception:  # any filesystem's error: gone, or no longer readable
        return None
    if len(data) < length:
        return None
    return [length, hashlib.sha1(data).hexdigest()]


def same_head(file, head):
    """Whether the file begins as it did when ``head`` (head_of) was taken."""
    return head is not None and head_of(file, head[0]) == list(head)


def open_capture(location):
    """A binary file object reading a CaptureFile's location."""
    kind = location[0]
    if kind == "local":
        return open(location[1], "rb")
    if kind == "arrow":
        from pyarrow import fs

        filesystem, _ = fs.FileSystem.from_uri(location[1])
        return filesystem.open_input_stream(location[2])
    if kind == "fsspec":
        import fsspec

        return fsspec.open(location[1], "rb").open()
    raise ValueError(f"unknown location {location!r}")


# ---- planning -------------------------------------------------------------------------------------------------

class CaptureSplit(InputPartition):
    """Split ``index`` of ``count`` of one capture file (count 1: the whole file). In a ring, ``ring`` is how the
    file is read there: (window, final, oldest_leaves, starts_ring), see kafkaproto.capture.ring.RingReader; the
    window's files are CaptureFiles, the last being this one."""

    def __init__(self, file, index, count, ring=None):
        super().__init__((file.name, index, count))
        self.file = file
        self.index = index
        self.count = count
        self.ring = ring
        self.topic_names = None  # pairs to name topics by, when not the options': those of the whole read

    def __repr__(self):
        return f"CaptureSplit({self.file.name!r}, {self.index}/{self.count}{', in a ring' if self.ring else ''})"


def split_count(file, splits=None):
    """How many tasks read a file: the option if given, else one per SPLIT_BYTES (at most MAX_AUTO_SPLITS)."""
    if file.error is not None:
        return 1
    if splits is not None:
        return splits
    if not file.size:
        return 1
    return max(1, min(MAX_AUTO_SPLITS, math.ceil(file.size / SPLIT_BYTES)))


def plan(files, splits=None):
    """Every file's splits: (file, i, n) for i in range(n), so each connection is read by exactly one task."""
    out = []
    for file in files:
        n = split_count(file, splits)
        out.extend(CaptureSplit(file, i, n) for i in range(n))
    return out


def in_ring_order(files):
    """Files in the order a capture tool wrote them (kafkaproto.capture.ring.order_key)."""
    return sorted(files, key=lambda f: ring.order_key(f.name, f.mtime_ns))


def plan_ring(files, lookback, splits=None, chosen=None, last_is_final=True):
    """The splits that read ``files`` (in ring order) as a ring: every file read after its lookback, one task
    each unless the option splits says more (every split then reads the whole window). chosen: the indexes of
    the files to plan (a stream's new files); the others only lend their bytes as lookback."""
    readable = [f for f in files if f.error is None]
    out = []
    for k, (window, final, oldest_leaves, starts_ring) in enumerate(ring.windows(readable, lookback)):
        if chosen is not None and k not in chosen:
            continue
        if final and lookback and not last_is_final:
            final = False  # a stream's newest finished file: the next one goes on from it
        n = splits or 1
        file = window[-1]
        out.extend(CaptureSplit(file, i, n, (window, final, oldest_leaves, starts_ring)) for i in range(n))
    out.extend(CaptureSplit(f, 0, 1) for f in files if f.error is not None and chosen is None)
    return out
