"""Faults the broker answers and survives: a second broker on its data directory, a file system that refuses a
write, and a process killed mid-write (a torn tail in any of its logs) or mid-creation (directories no topic owns).

Killed processes are simulated on real files: a broker is closed, its clean-stop marker removed, and the last batch
of one of its logs cut at several byte offsets, as a kill -9 in the middle of that write would leave it; the data
directory is then opened again. Full disks are simulated in-process, with os.pwrite (or os.fsync) replaced by one
that fails as the file system would.
"""

import errno
import logging
import os
import shutil
import struct
import subprocess
import sys

import pytest

from kafkaproto import errors, records
from kafkaproto.broker import Broker
from kafkaproto.broker.state import log as segment_log
from kafkaproto.broker.state.cluster import METADATA_DIR
from kafkaproto.broker.state.data_dir import DirectoryLocked, write_partition_metadata
from kafkaproto.broker.state.groups.offsets import OFFSETS_DIR
from kafkaproto.broker.state.log import LogError, PartitionLog, StorageError, parse_batches
from kafkaproto.broker.state.shares import STATE_DIR as SHARE_STATE_DIR
from kafkaproto.broker.state.transactions import STATE_DIR, Transaction
from kafkaproto.uuid import Uuid

from test_broker_handlers import batch, create, fetch, make_state, produce

pytestmark = pytest.mark.above_the_codecs

FIRST_SEGMENT = f"{0:020d}.log"


def fetched(state, topic="orders", offset=0):
    return [r.value for r in records.read_records(fetch(state, offset=offset, topic=topic).responses[0]
                                                  .partitions[0].records or b"")]


# --- one broker per data directory


def test_a_second_broker_on_the_same_directory_is_refused(tmp_path):
    first = make_state(tmp_path)
    try:
        create(first, "orders")
        assert produce(first, batch(b"a"), topic="orders").base_offset == 0
        with pytest.raises(DirectoryLocked) as refused:
            make_state(tmp_path)
        assert str(tmp_path) in str(refused.value) and "in use by another broker" in str(refused.value)
        assert isinstance(refused.value, OSError) and isinstance(refused.value, LogError)
        # The refused one read and changed nothing: the first goes on, alone.
        assert produce(first, batch(b"b"), topic="orders").base_offset == 1
    finally:
        first.close()
    second = make_state(tmp_path)  # the lock went with the first broker's close
    try:
        assert fetched(second) == [b"a", b"b"]
    finally:
        second.close()


def test_a_second_broker_process_is_refused_naming_the_directory(tmp_path):
    data = tmp_path / "data"
    with Broker(log_dir=data, subprocess=True):
        second = subprocess.run([sys.executable, "-m", "kafkaproto.broker", "--override", f"log.dirs={data}",
                                 "--override", "listeners=PLAINTEXT://127.0.0.1:0"],
                                capture_output=True, text=True, timeout=60)
    assert second.returncode == 2
    assert f"kafkaproto broker: {data}: the data directory is in use by another broker" in second.stderr
    assert "started on" not in second.stderr


# --- a file system that refuses writes


class FullDisk:
    """os.pwrite on a file system with room for `room` more bytes: a write takes what fits, and the next one fails
    with `code`, as a regular file's writes do when the disk fills up."""

    def __init__(self, room=0, code=errno.ENOSPC):
        self.room = room
        self.code = code
        self.real = os.pwrite

    def pwrite(self, fd, data, position):
        if self.room <= 0:
            raise OSError(self.code, os.strerror(self.code))
        written = self.real(fd, bytes(memoryview(data)[:self.room]), position)
        self.room -= written
        return written


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT, errno.EIO], ids=errno.errorcode.get)
@pytest.mark.parametrize("room", [0, 30], ids=["nothing-fits", "part-fits"])
def test_a_refused_write_is_a_storage_error_and_leaves_the_log_whole(tmp_path, monkeypatch, code, room):
    plog = PartitionLog(str(tmp_path / "p-0"))
    first = batch(b"a")
    plog.append(first, parse_batches(first))
    monkeypatch.setattr(segment_log.os, "pwrite", FullDisk(room, code).pwrite)
    second = batch(b"b" * 100)
    with pytest.raises(StorageError) as refused:
        plog.append(second, parse_batches(second))
    assert refused.value.__cause__.errno == code and errno.errorcode[code] in str(refused.value)
    assert isinstance(refused.value, LogError)
    assert os.path.getsize(tmp_path / "p-0" / FIRST_SEGMENT) == len(first) == plog.size_bytes  # nothing half-made
    assert plog.log_end_offset == 1
    monkeypatch.undo()  # room again: the log goes on where it was
    third = batch(b"c")
    assert plog.append(third, parse_batches(third)) == 1
    plog.close()
    again = PartitionLog(str(tmp_path / "p-0"))
    assert [r.value for s in again.segments for b in records.iter_batches(s.read(0, s.size)) for r in b] == [
        b"a", b"c"]
    again.close()


def test_a_new_segment_that_cannot_be_made_is_a_storage_error(tmp_path, monkeypatch):
    plog = PartitionLog(str(tmp_path / "p-0"), segment_bytes=100)
    first = batch(b"a" * 80)
    plog.append(first, parse_batches(first))
    real_open = os.open

    def no_inodes(path, flags, *args):
        if flags & os.O_CREAT:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_open(path, flags, *args)

    monkeypatch.setattr(segment_log.os, "open", no_inodes)
    second = batch(b"b" * 80)
    with pytest.raises(StorageError, match="ENOSPC"):
        plog.append(second, parse_batches(second))
    monkeypatch.undo()
    assert plog.log_end_offset == 1
    assert plog.append(second, parse_batches(second)) == 1
    plog.close()


def test_an_append_whose_sync_fails_is_taken_back(tmp_path, monkeypatch):
    plog = PartitionLog(str(tmp_path / "p-0"))
    first = batch(b"a")
    plog.append(first, parse_batches(first), sync=True)

    def failing(fd):
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(segment_log.os, "fsync", failing)
    second = batch(b"b")
    with pytest.raises(StorageError, match="cannot be synced"):
        plog.append(second, parse_batches(second), sync=True)
    monkeypatch.undo()
    assert os.path.getsize(tmp_path / "p-0" / FIRST_SEGMENT) == len(first) and plog.log_end_offset == 1
    plog.close()


def test_a_produce_on_a_full_disk_changes_nothing(tmp_path, monkeypatch):
    """The broker's append fails whole: the producer's sequence has not moved, so its retry is taken as new."""
    state = make_state(tmp_path)
    try:
        create(state, "orders")
        producer_id = state.cluster.allocate_producer_id()
        assert produce(state, batch(b"a", producer_id=producer_id, epoch=0, sequence=0),
                       topic="orders").base_offset == 0
        partition, _ = state.partition(state.cluster.topics["orders"], 0)
        data = batch(b"b", producer_id=producer_id, epoch=0, sequence=1)
        monkeypatch.setattr(segment_log.os, "pwrite", FullDisk(10).pwrite)
        with pytest.raises(StorageError):
            state.append(partition, data, parse_batches(data))
        monkeypatch.undo()
        retry = produce(state, batch(b"b", producer_id=producer_id, epoch=0, sequence=1), topic="orders")
        assert (retry.error_code, retry.base_offset) == (0, 1)
        assert fetched(state) == [b"a", b"b"]
    finally:
        state.close()


def test_a_produce_on_a_full_disk_is_answered_kafka_storage_error(tmp_path, monkeypatch):
    state = make_state(tmp_path)
    try:
        create(state, "orders")
        monkeypatch.setattr(segment_log.os, "pwrite", FullDisk(0).pwrite)
        refused = produce(state, batch(b"a"), topic="orders")
        monkeypatch.undo()
        assert refused.error_code == errors.KAFKA_STORAGE_ERROR.code and refused.base_offset == -1
        assert produce(state, batch(b"b"), topic="orders").base_offset == 0
    finally:
        state.close()


def test_create_topics_is_answered_once_its_record_is_on_stable_storage(tmp_path, monkeypatch):
    state = make_state(tmp_path)
    segment = os.path.join(str(tmp_path), METADATA_DIR, FIRST_SEGMENT)
    real_fsync = os.fsync
    synced = []

    def fsync(fd):
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        return real_fsync(fd)

    def failing(fd):
        if os.readlink(f"/proc/self/fd/{fd}") == segment:
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return real_fsync(fd)

    try:
        monkeypatch.setattr(os, "fsync", fsync)
        assert create(state, "orders").error_code == 0
        assert segment in synced and str(tmp_path) in synced  # the record, and the new directories' entries
        monkeypatch.setattr(os, "fsync", failing)
        refused = create(state, "later")
        monkeypatch.undo()
        assert refused.error_code == errors.UNKNOWN_SERVER_ERROR.code and "cannot be synced" in refused.error_message
        assert "later" not in state.cluster.topics and not (tmp_path / "later-0").exists()
        assert create(state, "later").error_code == 0
    finally:
        state.close()
    state = make_state(tmp_path)
    try:
        assert set(state.cluster.topics) == {"orders", "later"}
    finally:
        state.close()


# --- torn tails


def batch_starts(path):
    """The positions of the batches in a segment file."""
    with open(path, "rb") as f:
        data = f.read()
    starts, position = [], 0
    while position < len(data):
        starts.append(position)
        position += 12 + struct.unpack_from(">i", data, position + 8)[0]
    assert position == len(data)
    return starts, len(data)


def tears(path):
    """(where the last batch starts, byte offsets inside it to cut the file at): in its length, its header, its
    records, and one byte short."""
    starts, size = batch_starts(path)
    last = starts[-1]
    return last, sorted({last + 1, last + 10, last + 40, last + 61, (last + size) // 2, size - 1})


def after_each_tear(tmp_path, write, log_file, check, keep_marker=False):
    """Write a data directory (write(state)), then for each tear of log_file's last batch: a copy of the directory,
    cut there, without its clean-stop marker (as a kill leaves it), opened again and check(state, directory)."""
    pristine = tmp_path / "pristine"
    state = make_state(pristine)
    try:
        write(state)
    finally:
        state.close()
    last, cuts = tears(pristine / log_file)
    for cut in cuts:
        directory = tmp_path / f"cut-{cut}"
        shutil.copytree(pristine, directory)
        if not keep_marker:
            (directory / ".kafka_cleanshutdown").unlink()
        os.truncate(directory / log_file, cut)
        state = make_state(directory)
        try:
            assert os.path.getsize(directory / log_file) == last, f"cut at {cut}: only the torn batch goes"
            check(state, directory)
        finally:
            state.close()


@pytest.mark.parametrize("keep_marker", [False, True], ids=["killed", "clean-marker-kept"])
def test_a_partition_s_torn_tail_is_cut(tmp_path, keep_marker):
    def write(state):
        create(state, "orders")
        for values in ([b"a"], [b"b", b"c"], [b"d", b"e", b"f"]):
            produce(state, batch(*values), topic="orders")

    def check(state, directory):
        assert fetched(state) == [b"a", b"b", b"c"]
        assert produce(state, batch(b"g"), topic="orders").base_offset == 3

    after_each_tear(tmp_path, write, f"orders-0/{FIRST_SEGMENT}", check, keep_marker)


@pytest.mark.parametrize("keep_marker", [False, True], ids=["killed", "clean-marker-kept"])
def test_a_batch_whose_crc_is_wrong_before_a_torn_one_is_cut_too(tmp_path, keep_marker):
    """A kill mid-write may leave garbage of the right length: the CRC finds it, and the log is cut there, its index
    rebuilt from what is left."""
    state = make_state(tmp_path)
    create(state, "orders")
    for values in ([b"a"], [b"b", b"c"], [b"d"]):
        produce(state, batch(*values), topic="orders")
    state.close()
    path = tmp_path / "orders-0" / FIRST_SEGMENT
    starts, size = batch_starts(path)
    data = bytearray(path.read_bytes())
    data[starts[2] - 3] ^= 0xFF  # in the second batch's last record
    path.write_bytes(bytes(data[:size - 5]))  # and the third torn
    if not keep_marker:
        (tmp_path / ".kafka_cleanshutdown").unlink()
    state = make_state(tmp_path)
    try:
        assert os.path.getsize(path) == starts[1]
        assert fetched(state) == [b"a"]
        assert produce(state, batch(b"e"), topic="orders").base_offset == 1
        assert fetched(state, offset=1) == [b"e"]
    finally:
        state.close()


def test_the_offsets_log_s_torn_tail_is_cut(tmp_path):
    def write(state):
        state.groups.commit("billing", [(("orders", 0), (5, 0, "", 1))])
        state.groups.commit("billing", [(("orders", 1), (7, 0, "note", 2)), (("orders", 0), (6, 0, "", 2))])
        state.groups.commit("billing", [(("orders", 0), (9, 0, "", 3))])

    def check(state, directory):
        assert state.groups.committed("billing") == {("orders", 0): (6, 0, "", 2), ("orders", 1): (7, 0, "note", 2)}
        state.groups.commit("billing", [(("orders", 0), (10, 0, "", 4))])  # and it is written to again

    after_each_tear(tmp_path, write, f"{OFFSETS_DIR}/{FIRST_SEGMENT}", check)


def test_the_transaction_log_s_torn_tail_is_cut(tmp_path):
    def write(state):
        for tid, producer_id in (("first", 11), ("second", 12), ("third", 13)):
            state.transactions.save(Transaction(tid, producer_id, 0, 60000))

    def check(state, directory):
        assert {tid: t.producer_id for tid, t in state.transactions.by_id.items()} == {"first": 11, "second": 12}
        state.transactions.save(Transaction("third", 13, 0, 60000))

    after_each_tear(tmp_path, write, f"{STATE_DIR}/{FIRST_SEGMENT}", check)


def test_the_metadata_log_s_torn_tail_loses_only_the_creation_it_tore(tmp_path):
    """The last metadata batch, a topic's creation, is torn: that creation was never answered, and its empty
    directory is removed; the topic before it keeps all of its 101 records."""
    values = [b"%03d" % i for i in range(101)]

    def write(state):
        create(state, "orders")
        for i in range(0, 101, 20):
            produce(state, batch(*values[i:i + 20]), topic="orders")
        create(state, "later", partitions=2)

    def check(state, directory):
        assert set(state.cluster.topics) == {"orders"}
        got = []
        while len(got) < 101:
            part = fetched(state, offset=len(got))
            assert part
            got += part
        assert got == values
        assert sorted(p.name for p in directory.iterdir() if p.is_dir()) == [
            METADATA_DIR, OFFSETS_DIR, SHARE_STATE_DIR, STATE_DIR, "orders-0"]  # no "later-*", set aside or not
        assert create(state, "later").error_code == 0

    after_each_tear(tmp_path, write, f"{METADATA_DIR}/{FIRST_SEGMENT}", check)


# --- directories no topic owns


def leave_directory(path, topic_id, data=b""):
    path.mkdir()
    write_partition_metadata(str(path), topic_id)
    (path / FIRST_SEGMENT).write_bytes(data)
    (path / f"{0:020d}.index").write_bytes(b"")


def test_what_a_killed_creation_leaves_is_removed_and_records_are_kept(tmp_path, caplog):
    state = make_state(tmp_path)
    create(state, "orders")
    produce(state, batch(b"a"), topic="orders")
    state.close()
    segment = (tmp_path / "orders-0" / FIRST_SEGMENT).read_bytes()
    # A creation killed after its directories were made and before its record: never answered, nothing in them.
    for index in range(2):
        leave_directory(tmp_path / f"half-{index}", Uuid.random())
    # What older versions set aside: an empty directory and one with records.
    leave_directory(tmp_path / f"gone-0.{'0' * 32}-stray", Uuid.random())
    leave_directory(tmp_path / f"kept-0.{'1' * 32}-stray", Uuid.random(), segment)
    # Records of a topic the metadata log does not know: set aside, never deleted.
    lost_id = Uuid.random()
    leave_directory(tmp_path / "lost-0", lost_id, segment)
    with caplog.at_level(logging.INFO, logger="kafkaproto.broker"):
        state = make_state(tmp_path)
    try:
        names = sorted(p.name for p in tmp_path.iterdir() if p.is_dir())
        (lost,) = [n for n in names if n.startswith("lost-0.") and n.endswith("-stray")]
        assert names == sorted([METADATA_DIR, OFFSETS_DIR, SHARE_STATE_DIR, STATE_DIR, "orders-0",
                                f"kept-0.{'1' * 32}-stray", lost])
        assert (tmp_path / lost / FIRST_SEGMENT).read_bytes() == segment
        assert f"{len(segment)} bytes of records (topic id {lost_id})" in caplog.text
        assert fetched(state) == [b"a"]
        assert create(state, "half").error_code == 0
    finally:
        state.close()


def test_a_deleted_topic_s_directory_that_a_stop_left_is_deleted(tmp_path):
    """A topic's deletion is recorded before its directories are renamed away: stopped in between, the next start
    deletes them (and does not set them aside as another topic's)."""
    state = make_state(tmp_path)
    create(state, "old")
    produce(state, batch(b"a"), topic="old")
    state.delete_topic(state.cluster.topics["old"])
    (renamed,) = [p for p in tmp_path.iterdir() if p.name.startswith("old-0.") and p.name.endswith("-delete")]
    renamed.rename(tmp_path / "old-0")  # as if the broker had stopped before the rename
    state.close()
    state = make_state(tmp_path)
    try:
        (gone,) = [p for p in tmp_path.iterdir() if p.name.startswith("old-0")]
        assert gone.name.endswith("-delete") and str(gone) in [path for _, path in state.cluster.pending_deletes]
        assert "old" not in state.cluster.topics
    finally:
        state.close()
