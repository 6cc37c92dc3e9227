"""The Arrow C data interface the package hands its record outputs through (warpdrive._arrow)."""

import gc
import resource

import pyarrow as pa
import pytest

from warpdrive import _warpdrive, photon

HITS = "EM 1 1 1970 0 0 0\n" + "HIT 12 34 100.5 400.25 1.0 2.0 0.5 -1.5\n" * 3 + "EE\n"


def test_capsule_protocol():
    exported = _warpdrive.ppc_hits(HITS)
    batch = pa.record_batch(exported)
    assert batch.num_rows == 3
    assert batch.schema.types[:3] == [pa.int32()] * 3 and batch.schema.types[3:] == [pa.float64()] * 6
    assert batch["string"].to_pylist() == [12] * 3 and batch["time"].to_pylist() == [100.5] * 3
    # The data moved to pyarrow: a second export is refused rather than aliased.
    with pytest.raises(RuntimeError, match="already exported"):
        exported.__arrow_c_array__()
    # Capsules that no consumer takes are released by their destructors (no leak, no crash).
    schema, array = _warpdrive.ppc_hits(HITS).__arrow_c_array__()
    del schema, array
    gc.collect()
    empty = pa.record_batch(_warpdrive.ppc_hits(""))
    assert empty.num_rows == 0 and empty.num_columns == 9


def test_no_copy_and_freed():
    # 2e5 hits: 2e5 × 52 bytes ≈ 10 MB per table. Zero-copy: the numpy view of a column is the
    # exported buffer itself; 40 tables made and dropped must not keep 400 MB (release runs).
    text = "EM 1 1 1970 0 0 0\n" + "HIT 1 2 3.5 400 1 2 0.5 -1.5\n" * 200_000 + "EE\n"
    t = photon.PpcRun(text, "").hits()
    col = t["time"].chunk(0)
    assert col.buffers()[1].address == col.to_numpy(zero_copy_only=True).__array_interface__["data"][0]
    del t, col
    gc.collect()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for _ in range(40):
        photon.PpcRun(text, "").hits()
        gc.collect()
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mb < 100, f"peak RSS grew by {grown_mb:.0f} MB over 40 dropped tables"
