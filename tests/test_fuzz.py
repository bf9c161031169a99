"""The mutation fuzzer (tests/fuzz.py): a short deterministic slice, and proof that it catches what it should."""

import fuzz


def test_a_deterministic_slice_finds_nothing():
    summary = fuzz.run(6000, seed=20261122, jobs=2)
    assert summary["inputs"] == 6000
    assert not summary["finding_list"], summary["finding_list"][:3]
    assert set(summary["by_kind"]) == {"message", "request", "response", "records", "frames", "capture"}
    # Mutations must reach past the first bytes: a fair share still decodes.
    assert summary["decoded"] > 600, summary


def test_crashes_hangs_and_memory_are_caught_and_the_run_goes_on():
    extra = [(("selftest",), b"crash"), (("selftest",), b"hang"), (("selftest",), b"memory")]
    summary = fuzz.run(200, seed=3, jobs=1, timeout=2, extra=extra, selftest=True)
    kinds = {(f["kind"], bytes.fromhex(f["input"])) for f in summary["finding_list"]}
    assert ("crash", b"crash") in kinds
    assert ("hang", b"hang") in kinds
    assert ("memory", b"memory") in kinds
    assert ("foreign", b"memory") in kinds  # the self-test target itself is not a decoder
    assert summary["inputs"] == 203
