"""Spark (``local[2]``) computes exactly DuckDB's statistics, and every mechanism releases the same values.

One Spark session serves the module (starting one takes ~10 s). ``scripts/system-deps.sh test``
installs a Java runtime and the test extras install PySpark, so CI runs these; where either
cannot be had the tests are skipped with the reason (pytest -ra prints it).
"""

import numpy as np
import pytest

import dpdesk
from dpdesk.engine import scan
from dpdesk.engine.base import EngineError
from dpdesk.engine.spark import require_pyspark
from dpdesk.errors import ParameterError

try:
    require_pyspark()
except EngineError as missing:
    pytest.skip(f"Spark cannot run here: {missing}", allow_module_level=True)

MASTER = "local[2]"
FILES = ["chess.dat.gz", "mushroom.dat.gz", "retail.dat.gz", "groceries.csv.gz", "adult.data.gz",
         "ml-latest-small_ratings.csv.gz", "hetrec2011-lastfm-2k_user_artists.dat.gz"]
PARAMS = {
    "lpa": {"bound": 5}, "alpa": {"bound": 5}, "gs-r": {"bound": 5}, "gs-s-row": {"bound": 5},
    "gs-s-col": {"bound": 5}, "gs": {"bound": 5}, "fpa": {"bound": 5, "rho": 10}, "fpa-oracle": {"bound": 5},
    "dpsense": {}, "dpsense-s": {"alpha_steps": 20}, "diff": {"index": "uniform", "bound": 5},
    "ahp": {"bound": 5, "small_counts": "median", "threshold": "adaptive"},
}
_SCANNED: dict = {}


def three(data_dir, name):
    """The in-memory dataset, DuckDB's and Spark's, read once per module."""
    if name not in _SCANNED:
        _SCANNED[name] = (dpdesk.load(data_dir / name, engine="memory"), scan(data_dir / name),
                          scan(data_dir / name, engine="spark", spark_master=MASTER))
    return _SCANNED[name]


@pytest.fixture(scope="module", autouse=True)
def _close_spark():
    yield
    for _, duck, spark in _SCANNED.values():
        duck.engine.close()
        spark.engine.close()
    _SCANNED.clear()


@pytest.mark.parametrize("name", FILES)
def test_spark_statistics_equal_duckdbs(data_dir, name):
    _, duck, spark = three(data_dir, name)
    assert spark.engine.kind == "spark" and duck.engine.kind == "duckdb"
    assert (spark.n_rows, spark.nnz, list(spark.item_labels)) == (duck.n_rows, duck.nnz, list(duck.item_labels))
    assert np.array_equal(spark.column_counts, duck.column_counts)
    assert spark.fingerprint == duck.fingerprint
    assert spark.summary() == duck.summary()
    for got, expected in zip(spark.length_counts(), duck.length_counts()):
        assert np.array_equal(got, expected)
    for bound in (1, 7):
        assert np.array_equal(spark.item_counts(most=bound), duck.item_counts(most=bound))
        got = spark.item_length_counts(bound)
        expected = duck.item_length_counts(bound)
        order_got, order_expected = np.lexsort(got[:2]), np.lexsort(expected[:2])
        for a, b in zip(got, expected):
            assert np.array_equal(np.asarray(a)[order_got], np.asarray(b)[order_expected])


@pytest.mark.parametrize("name", FILES)
@pytest.mark.parametrize("mechanism", sorted(PARAMS))
def test_same_release_from_spark_duckdb_and_memory(data_dir, name, mechanism):
    memory, duck, spark = three(data_dir, name)
    expected = dpdesk.release(memory, mechanism, epsilon=0.7, rng=3, **PARAMS[mechanism])
    for dataset in (duck, spark):
        got = dpdesk.release(dataset, mechanism, epsilon=0.7, rng=3, **PARAMS[mechanism])
        assert np.array_equal(got.values, expected.values), (dataset.engine.kind, mechanism)
        assert got.report["budget"] == expected.report["budget"]


def test_spark_leaves_cell_tables_to_duckdb_in_one_line(data_dir):
    with pytest.raises(ParameterError) as refused:
        scan(data_dir / "adult.data.gz", format="records", attributes=[1, 3], engine="spark", spark_master=MASTER)
    assert "\n" not in str(refused.value) and "--engine duckdb" in str(refused.value)


def test_a_master_that_cannot_be_reached_is_one_line(data_dir):
    with pytest.raises(EngineError) as refused:
        scan(data_dir / "chess.dat.gz", engine="spark", spark_master="nonsense://nowhere")
    assert "\n" not in str(refused.value) and "nonsense://nowhere" in str(refused.value)


def test_whole_result_chunks_are_read_at_their_offsets(tmp_path):
    """Issue #27 C: with ``spark.sql.execution.arrow.maxRecordsPerBatch`` = 0, ``toArrow()`` returns one
    chunk per partition, which ``batches`` cuts into slices of 131,072 rows; a slice read from its
    buffer's start gave row 131,072 another row's items (and a fingerprint unlike the file's)."""
    rng = np.random.default_rng(27)
    rows = [" ".join(map(str, rng.choice(60, size=int(k), replace=False))) for k in rng.integers(1, 6, 300_000)]
    path = tmp_path / "many.dat"
    path.write_text("\n".join(rows) + "\n", encoding="ascii")
    memory = dpdesk.load(path, engine="memory")
    spark = scan(path, engine="spark", spark_master=MASTER)
    spark.engine.spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "0")
    try:
        assert spark.fingerprint == memory.fingerprint
        long = spark.long_rows(3)
        expected = memory.matrix[memory.row_counts > 3]
        assert np.array_equal(long.matrix.indptr, expected.indptr)
        assert np.array_equal(long.matrix.indices, expected.indices)
    finally:
        spark.engine.spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
        spark.engine.close()
