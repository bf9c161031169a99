"""A partition's leader epochs (state/log.py's LeaderEpochs): where each began, what OffsetForLeaderEpoch answers
for each (Kafka's LeaderEpochFileCache.endOffsetFor), and what survives a restart, a moved log start and a file
that does not read."""

import os

from kafkaproto import records
from kafkaproto.broker.state.log import EPOCHS_FILE, UNDEFINED, PartitionLog, parse_batches


def append(plog, epoch, count=1):
    builder = records.RecordBatchBuilder()
    for i in range(count):
        builder.append(b"k", b"v%d" % i, timestamp=1_700_000_000_000 + i)
    data = bytearray(builder.build())
    return plog.append(data, parse_batches(data), leader_epoch=epoch)


def grown(path):
    """A log of epochs 0 (offsets 0-2), 2 (3-4) and 5 (5), with epoch 7 taken at its end and nothing written in it."""
    plog = PartitionLog(str(path))
    plog.epochs.assign(0, 0)
    append(plog, 0, 3)
    append(plog, 2, 2)
    append(plog, 5)
    plog.epochs.assign(7, plog.log_end_offset)
    return plog


def test_each_epoch_ends_where_the_next_began(tmp_path):
    plog = grown(tmp_path / "p-0")
    assert plog.epochs.entries == [(0, 0), (2, 3), (5, 5), (7, 6)]
    end = plog.log_end_offset
    answers = {epoch: plog.epochs.end_offset_for(epoch, end) for epoch in range(-1, 10)}
    assert answers == {
        -1: (UNDEFINED, UNDEFINED),
        0: (0, 3), 1: (0, 3),  # an epoch the log never had: the one before it, ending where the next began
        2: (2, 5), 3: (2, 5), 4: (2, 5),
        5: (5, 6), 6: (5, 6),
        7: (7, end),  # the latest ends at the log end
        8: (UNDEFINED, UNDEFINED), 9: (UNDEFINED, UNDEFINED)}  # not begun yet


def test_an_epoch_before_the_first_known_ends_where_the_first_began(tmp_path):
    plog = PartitionLog(str(tmp_path / "p-0"))
    append(plog, 3, 2)
    append(plog, 4)
    assert plog.epochs.end_offset_for(1, plog.log_end_offset) == (1, 0)
    assert plog.epochs.end_offset_for(3, plog.log_end_offset) == (3, 2)


def test_epochs_survive_a_restart_and_a_lost_file(tmp_path):
    path = tmp_path / "p-0"
    plog = grown(path)
    before = list(plog.epochs.entries)
    plog.close()
    assert PartitionLog(str(path)).epochs.entries == before
    # without the file, the batches still tell where every epoch a batch began started; epoch 7 began no batch
    (path / EPOCHS_FILE).write_text("not a checkpoint\n")
    assert PartitionLog(str(path)).epochs.entries == before[:-1]
    os.unlink(path / EPOCHS_FILE)
    assert PartitionLog(str(path)).epochs.entries == before[:-1]


def test_a_moved_log_start_starts_the_epoch_in_force_there(tmp_path):
    path = tmp_path / "p-0"
    plog = grown(path)
    plog.delete_records_before(4)
    assert plog.epochs.entries == [(2, 4), (5, 5), (7, 6)]
    plog.close()
    assert PartitionLog(str(path)).epochs.entries == [(2, 4), (5, 5), (7, 6)]


def test_the_file_is_kafkas_layout(tmp_path):
    path = tmp_path / "p-0"
    grown(path)
    assert (path / EPOCHS_FILE).read_text() == "0\n4\n0 0\n2 3\n5 5\n7 6\n"
