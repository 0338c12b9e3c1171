"""Issue #27: every route to a release is recorded, and one person is one person everywhere.

One test (or a few) per finding of the outside review:
A an API release never bypasses the ledger; B records' item labels never collide;
C Arrow slices are read at their offsets; D the same raw source under another name;
E budget reserved between the check and the record (charged refusals too);
F the stand-in uses declared facts only (in tests/gui); G/H/I refusals decided before reading.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import dpdesk
from dpdesk.data.domain import declare, project
from dpdesk.data.tabular import item_label
from dpdesk.engine import scan


# --- B: labels unique by construction; no row holds an item twice --------------------------------

COLLIDING = "a,a=b,z\n" + "x,y,1\n" * 3


def _records(tmp_path, text: str, name: str):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_item_labels_of_records_are_injective():
    assert item_label("a", "b=c") != item_label("a=b", "c")
    assert item_label('"a', "b") != item_label("a", "b")
    labels = {item_label(c, v) for c in ("a", "a=b", '"a', '"a=b"', "a=") for v in ("b=c", "c", "=", '"')}
    assert len(labels) == 5 * 4


@pytest.mark.parametrize("engine", ["memory", "duckdb"])
def test_colliding_records_move_a_count_by_at_most_one(tmp_path, engine):
    """A column ``a`` with value ``b=c`` and a column ``a=b`` with value ``c`` were both item ``a=b=c``:
    the added person held it twice and its count went 0 → 2 between neighbours."""
    base = _records(tmp_path, COLLIDING, "d.csv")
    plus = _records(tmp_path, COLLIDING + "b=c,c,1\n", "d-plus.csv")
    declared = ["a=b=c", '"a=b"=c', "a=x"]
    counts = []
    for path in (base, plus):
        data = dpdesk.load(path, format="records", header=True, engine=engine)
        projected = project(data, declare(data, declared).domain)
        counts.append(np.asarray(projected.column_counts))
        if engine == "memory":
            matrix = projected.matrix
            for row in range(matrix.shape[0]):
                columns = matrix.indices[matrix.indptr[row]:matrix.indptr[row + 1]]
                assert columns.size == np.unique(columns).size
    assert counts[1].tolist() == [c + d for c, d in zip(counts[0].tolist(), [1, 1, 0])]


def test_two_columns_with_one_label_are_one_item_for_the_person(tmp_path):
    """Defence in depth: whatever gives two columns one label, ``project`` keeps one per person."""
    import scipy.sparse as sp

    matrix = sp.csr_matrix(np.array([[1, 1, 0], [0, 1, 1]], dtype=np.uint8))
    data = dpdesk.Dataset(matrix, np.array(["p", "p", "q"], dtype=object))
    projected = project(data, declare(data, ["p", "q"]).domain)
    assert projected.column_counts.tolist() == [2, 1]
    assert projected.matrix.data.max() == 1


# --- C: Arrow slices -----------------------------------------------------------------------------

def _sliced_batches(engine, rows_per_slice: int):
    """The engine's batches, re-cut as slices of one combined batch (as Spark's ``toArrow()`` chunks are)."""
    original = engine.batches

    def batches(sql, *, cancel=None, **_):
        whole = pa.Table.from_batches(list(original(sql, cancel=cancel))).combine_chunks()
        for batch in whole.to_batches():
            for start in range(0, batch.num_rows, rows_per_slice):
                yield batch.slice(start, rows_per_slice)

    return batches


def test_arrow_slices_are_read_at_their_offsets(data_dir, monkeypatch):
    memory = dpdesk.load(data_dir / "retail.dat.gz", engine="memory")
    engine = scan(data_dir / "retail.dat.gz")
    monkeypatch.setattr(engine.engine, "batches", _sliced_batches(engine.engine, 10_000))
    assert engine.fingerprint == memory.fingerprint
    long = engine.long_rows(5)
    expected = memory.matrix[memory.row_counts > 5]
    assert np.array_equal(long.matrix.indptr, expected.indptr)
    assert np.array_equal(long.matrix.indices, expected.indices)
    from dpdesk.privacy.bounding import bounded_counts, prepare_bound
    from dpdesk.privacy.randomness import resolve

    for bound in (3, 20):
        assert np.array_equal(bounded_counts(engine, prepare_bound(engine, bound), resolve(5)),
                              bounded_counts(memory, prepare_bound(memory, bound), resolve(5)))


# --- A: the scripting API records every secure release -------------------------------------------

def test_api_releases_are_recorded_capped_and_only_recorded_ones_export(dpdesk_home, tmp_path):
    from dpdesk.errors import BudgetError, ExportError
    from dpdesk.mechanisms.running import run
    from dpdesk.privacy.ledger import Ledger
    from dpdesk.workflow import export_release

    rng = np.random.default_rng(1)
    import scipy.sparse as sp

    data = dpdesk.declare(dpdesk.from_matrix(sp.csr_matrix((rng.random((200, 6)) < 0.3).astype(np.int64)),
                                             list("abcdef"), name="clinic"), list("abcdef"))
    releases = [dpdesk.release(data, "lpa", epsilon=1.0, bound=3) for _ in range(3)]
    with pytest.raises(BudgetError):
        dpdesk.release(data, "lpa", epsilon=1.0, bound=3)  # a cap of 3 is a cap of 3 from a script too
    assert Ledger.open().totals()["clinic"].spent == pytest.approx(3.0)
    assert [r.report["ledger"]["entry"] for r in releases] == [2, 3, 4]
    assert all(r.report["publication"]["form"] for r in releases)  # returned as published
    written = export_release(releases[0], data, tmp_path / "out")
    assert (tmp_path / "out" / "release.csv") in written
    unrecorded = run(data, "lpa", 1.0, {"bound": 3})  # a secure run the ledger never saw
    with pytest.raises(ExportError, match="not recorded in the budget ledger"):
        export_release(unrecorded, data, tmp_path / "never")
    assert not (tmp_path / "never").exists()
    assert Ledger.open().totals()["clinic"].spent == pytest.approx(3.0)
