"""CRC-32C: the compiled sum (the CPU's instruction where there is one, else a table) against the crc32c package,
which the pure-Python codecs use, over lengths and alignments around the 8-byte steps both walks take."""

import pytest
from hypothesis import given
from hypothesis import strategies as st
import crc32c as reference

from kafkaproto._impl import COMPILED
from kafkaproto.records.checksum import crc32c

compiled_only = pytest.mark.skipif(not COMPILED, reason="the compiled sum is not in use")


def test_the_check_value_of_the_castagnoli_polynomial():
    assert crc32c(b"123456789") == 0xE3069283
    assert crc32c(b"") == 0


@given(st.binary(max_size=300), st.integers(0, 15))
def test_every_length_and_alignment_sums_as_the_reference(data, skip):
    view = memoryview(data)[min(skip, len(data)):]
    assert crc32c(view) == reference.crc32c(view)


@compiled_only
@given(st.binary(max_size=300), st.integers(0, 15))
def test_the_table_walk_sums_as_the_instruction(data, skip):
    from kafkaproto.records._ccrc32c import crc32c_by_table

    view = memoryview(data)[min(skip, len(data)):]
    assert crc32c_by_table(view) == crc32c(view) == reference.crc32c(view)


@pytest.mark.parametrize("length", [767, 768, 769, 1543, 1544, 12287, 12288, 12289, 16323, 24576 + 1535, 100003])
@pytest.mark.parametrize("skip", [0, 3, 8])
def test_lengths_summed_as_three_stretches_at_once_sum_as_the_reference(length, skip):
    # The instruction walk sums three stretches of 4,096 and then of 256 bytes at once and joins their sums: these
    # lengths fall just before, on and after where it takes one, two or no stretches of each.
    data = memoryview(bytes((i * 131 + 7) % 251 for i in range(length + skip)))[skip:]
    assert crc32c(data) == reference.crc32c(data)
    if COMPILED:
        from kafkaproto.records._ccrc32c import crc32c_by_table

        assert crc32c_by_table(data) == reference.crc32c(data)


def test_a_large_buffer_and_its_types():
    data = bytes(range(256)) * 4099
    expected = reference.crc32c(data)
    assert crc32c(data) == crc32c(bytearray(data)) == crc32c(memoryview(data)) == expected


@compiled_only
def test_a_batch_with_a_wrong_sum_is_refused_by_the_compiled_codec():
    from kafkaproto import records
    from kafkaproto.exceptions import RecordsError

    builder = records.RecordBatchBuilder()
    builder.append(b"k", b"v", timestamp=1)
    batch = bytearray(builder.build())
    assert list(records.produced_batches(bytes(batch), client=True))
    batch[-1] ^= 1
    with pytest.raises(RecordsError, match="CRC32C mismatch") as caught:
        records.produced_batches(bytes(batch), client=True)
    assert caught.value.kind == "corrupt"
