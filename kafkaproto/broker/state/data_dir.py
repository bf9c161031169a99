"""The data directory's files beside the logs: its lock, partition.metadata, and the scan that tells a partition
directory a creation left empty from one that holds records."""

import fcntl
import logging
import os
import shutil

from ...uuid import Uuid
from .log import LogError, PartitionLog, sync_directory

log = logging.getLogger("kafkaproto.broker")

LOCK_FILE = ".lock"


class DirectoryLock:
    """An exclusive flock(2) on a directory's .lock file, held until release (or the process ends); its descriptor
    counts among files' (OpenFiles), so that the broker keeps within its bound of open files."""

    def __init__(self, directory, files):
        self.path = os.path.join(directory, LOCK_FILE)
        self.files = files
        self._file = open(self.path, "a")
        try:
            fcntl.flock(self._file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            self._file.close()
            self._file = None
            raise DirectoryLocked(f"{os.path.abspath(directory)}: the data directory is in use by another broker "
                                  f"(its {LOCK_FILE} is locked: {e.strerror}); stop that broker, or give this one "
                                  "another log.dirs") from None
        files.held += 1

    def release(self):
        if self._file is not None:
            self._file.close()  # closing the only descriptor of the file lets the lock go
            self._file = None
            self.files.held -= 1


class DirectoryLocked(LogError, OSError):
    """Another broker (another process, or another broker of this one) holds the data directory."""


class MetadataLog(PartitionLog):
    """The metadata log, which holds the data directory's lock: the broker that has it open owns the directory,
    and closing it (the last step of a broker's close) lets the directory go, whatever else is still open."""

    def __init__(self, directory, lock, **kwargs):
        self.lock = lock
        super().__init__(directory, **kwargs)

    def close(self, write_index=True):
        try:
            super().close(write_index)
        finally:
            self.lock.release()


def write_synced(path, text):
    """Write a small file as Kafka writes its metadata files: to a temporary file, synced, then renamed."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def write_partition_metadata(directory, topic_id):
    """partition.metadata, in place before the partition's first append."""
    write_synced(os.path.join(directory, "partition.metadata"), f"version: 0\ntopic_id: {topic_id}\n")
    sync_directory(directory)


def read_partition_metadata(directory):
    """The topic id in a partition directory's partition.metadata; None without one; raises ValueError."""
    path = os.path.join(directory, "partition.metadata")
    try:
        with open(path) as f:
            text = f.read()
    except FileNotFoundError:
        return None
    fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    if fields.get("version", "").strip() != "0":
        raise ValueError(f"{path}: version {fields.get('version', '').strip()!r} (only 0 is known)")
    try:
        return Uuid.from_string(fields["topic_id"].strip())
    except (KeyError, ValueError) as e:
        raise ValueError(f"{path}: no readable topic_id ({e})") from None


PARTITION_FILES = (".log", ".index", ".timeindex", "partition.metadata", "partition.metadata.tmp",
                   "leader-epoch-checkpoint", "leader-epoch-checkpoint.tmp")


def looks_like_partition(name):
    """Whether a directory's name is a topic's partition's: <topic>-<index>."""
    topic, _, index = name.rpartition("-")
    return bool(topic) and index.isdigit()


def holds_no_records(path):
    """Whether a partition directory holds nothing but empty segments (and their indexes and partition.metadata):
    what a creation that was killed leaves. Anything else in it, and it is not."""
    try:
        with os.scandir(path) as entries:
            for entry in entries:
                if not entry.is_file(follow_symlinks=False) or not entry.name.endswith(PARTITION_FILES):
                    return False
                if entry.name.endswith(".log") and entry.stat().st_size:
                    return False
    except OSError:
        return False
    return True


def records_size(path):
    """The bytes of the segment files in a partition directory."""
    try:
        with os.scandir(path) as entries:
            return sum(e.stat().st_size for e in entries if e.name.endswith(".log") and e.is_file())
    except OSError:
        return 0


def remove_directories(paths):
    for path in paths:
        shutil.rmtree(path, ignore_errors=True)
        log.info("deleted %s", path)
