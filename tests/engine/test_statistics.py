"""The engine's statistics, fingerprint, conversion, database sources and Cancel, against the in-memory path."""

import sqlite3
import threading
import time

import numpy as np
import pytest

import dpdesk
from dpdesk.engine import scan
from dpdesk.engine.backend import DuckEngine
from dpdesk.engine.base import spill_root
from dpdesk.engine.dataset import column_sample, prepare_bounding
from dpdesk.engine.sources import convert
from dpdesk.engine.sql import load_sql
from dpdesk.errors import Cancelled, DataError
from dpdesk.privacy.bounding import bounded_counts, prepare_bound
from dpdesk.privacy.randomness import resolve
from dpdesk.tasks import CancelToken

FILES = ["chess.dat.gz", "mushroom.dat.gz", "retail.dat.gz", "groceries.csv.gz", "adult.data.gz",
         "ml-latest-small_ratings.csv.gz", "hetrec2011-lastfm-2k_user_artists.dat.gz"]


@pytest.mark.parametrize("name", FILES)
def test_figures_and_fingerprint_equal_the_matrix(data_dir, name):
    memory = dpdesk.load(data_dir / name, engine="memory")
    engine = scan(data_dir / name)
    assert (engine.n_rows, engine.nnz, list(engine.item_labels)) == (memory.n_rows, memory.nnz,
                                                                      list(memory.item_labels))
    assert np.array_equal(engine.column_counts, memory.column_counts)
    assert engine.summary() == memory.summary()
    assert engine.fingerprint == memory.fingerprint
    lengths, people = engine.length_counts()
    assert np.array_equal(np.repeat(lengths, people), np.sort(memory.row_counts))
    for count, edges in zip(engine.row_length_histogram(), memory.row_length_histogram()):
        assert np.array_equal(count, edges)
    bound = 7
    within = np.diff(memory.matrix.indptr) <= bound
    assert np.array_equal(engine.item_counts(most=bound),
                          np.bincount(memory.matrix[within].indices, minlength=memory.n_items))
    columns, row_lengths, counts = engine.item_length_counts(bound)
    table = np.zeros((memory.n_items, int(memory.row_counts.max()) + 1), dtype=np.int64)
    np.add.at(table, (columns, row_lengths), counts)
    rows, cols = memory.matrix.nonzero()
    expected = np.zeros_like(table)
    long = memory.row_counts[rows] > bound
    np.add.at(expected, (cols[long], memory.row_counts[rows][long]), 1)
    assert np.array_equal(table, expected)


def test_bounded_counts_consume_the_same_words(data_dir):
    memory = dpdesk.load(data_dir / "retail.dat.gz", engine="memory")
    engine = scan(data_dir / "retail.dat.gz")
    for bound in (1, 5, 40):
        expected = bounded_counts(memory, prepare_bound(memory, bound), resolve(9))
        assert np.array_equal(bounded_counts(engine, prepare_bound(engine, bound), resolve(9)), expected)


def test_truncation_keeps_a_uniform_subset_of_each_long_row(tmp_path):
    # one row of 6 items cut to 2: each of the 15 pairs equally likely; a sampler biased towards
    # the first items (a planted bug) crosses the chi-square threshold
    path = tmp_path / "one.dat"
    path.write_text("1 2 3 4 5 6\n7\n")
    engine = scan(path)
    prepared = prepare_bound(engine, 2)
    source = resolve(5)
    pairs = {}
    for _ in range(6000):
        counts = bounded_counts(engine, prepared, source)
        kept = tuple(np.flatnonzero(counts[:6]))
        pairs[kept] = pairs.get(kept, 0) + 1
    assert len(pairs) == 15 and all(len(k) == 2 for k in pairs)
    observed = np.array(list(pairs.values()))
    chi2 = float(((observed - 400) ** 2 / 400).sum())
    assert chi2 < 36.1  # 14 degrees of freedom, p = 0.001


def test_one_item_per_row_has_the_right_distribution(tmp_path):
    path = tmp_path / "rows.dat"
    path.write_text("1 2 3\n" * 3000)
    engine = scan(path)
    prepared = prepare_bounding(engine, 5)
    counts, sample = column_sample(engine, prepared, resolve(2))
    assert counts.tolist() == [3000, 3000, 3000] and sample.sum() == 3000
    assert np.all(np.abs(sample - 1000) < 110)  # binomial sd 26: a biased pick (always the first) fails


def test_convert_round_trip(data_dir, tmp_path):
    for name in ("retail.dat.gz", "groceries.csv.gz", "chess.dat.gz"):
        out = convert(data_dir / name, tmp_path / f"{name}.parquet")
        memory = dpdesk.load(data_dir / name, engine="memory")
        for engine in ("duckdb", "memory", "auto"):  # auto: a baskets file is the engine's own format
            again = dpdesk.load(out, engine=engine)
            assert type(again).__name__ == ("Dataset" if engine == "memory" else "EngineDataset")
            assert again.fingerprint == memory.fingerprint
            assert list(again.item_labels) == list(memory.item_labels)
            assert np.array_equal(again.column_counts, memory.column_counts)
            assert again.summary() == memory.summary()
    with pytest.raises(Exception, match="already exists"):
        convert(data_dir / "retail.dat.gz", tmp_path / "retail.dat.gz.parquet")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"{n}.parquet" for n in
                                                                ("retail.dat.gz", "groceries.csv.gz", "chess.dat.gz"))


def test_convert_stores_the_fingerprint_and_releases_trust_it(data_dir, tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    from dpdesk.engine.baskets import FINGERPRINT_KEY, read_baskets_metadata
    from dpdesk.engine.dataset import EngineDataset

    memory = dpdesk.load(data_dir / "groceries.csv.gz", engine="memory")
    out = convert(data_dir / "groceries.csv.gz", tmp_path / "groceries.parquet")
    stored = pq.ParquetFile(out).metadata.metadata[FINGERPRINT_KEY].decode()
    assert stored == memory.fingerprint == read_baskets_metadata(out).fingerprint
    # the stored value is what a release reads: no pass over the rows
    monkeypatch.setattr(EngineDataset, "_row_batches", lambda *a, **k: (_ for _ in ()).throw(AssertionError("read")))
    assert scan(out).fingerprint == stored
    assert dpdesk.load(out, engine="memory").fingerprint == stored
    # a damaged value is refused, never trusted
    table = pq.read_table(out)
    metadata = dict(pq.ParquetFile(out).metadata.metadata)
    metadata[FINGERPRINT_KEY] = b"not a fingerprint"
    damaged = tmp_path / "damaged.parquet"
    pq.write_table(table.replace_schema_metadata(metadata), damaged)
    with pytest.raises(DataError, match="fingerprint in the Parquet footer is damaged"):
        scan(damaged)


def test_sqlite_source_equals_the_csv(data_dir, tmp_path):
    memory = dpdesk.load(data_dir / "hetrec2011-lastfm-2k_user_artists.dat.gz", engine="memory")
    database = tmp_path / "plays.db"
    with sqlite3.connect(database) as connection:
        connection.execute("CREATE TABLE plays (userID INTEGER, artistID INTEGER, weight INTEGER)")
        rows, cols = memory.matrix.nonzero()
        people = [int(x) for x in range(memory.n_rows)]
        connection.executemany("INSERT INTO plays VALUES (?, ?, 1)",
                               [(people[r], int(memory.item_labels[c])) for r, c in zip(rows, cols)])
    data = load_sql(f"sqlite:///{database}", "SELECT userID, artistID FROM plays", "pairs")
    assert data.n_rows == memory.n_rows and data.nnz == memory.nnz
    assert np.array_equal(data.column_counts, memory.column_counts)
    with pytest.raises(DataError, match="the query failed"):
        load_sql(f"sqlite:///{database}", "SELECT nothing FROM nowhere", "pairs")
    with pytest.raises(DataError, match="no such file"):
        load_sql(f"sqlite:///{tmp_path / 'missing.db'}", "SELECT 1", "pairs")
    with pytest.raises(Exception, match="no column named 'user'"):
        load_sql(f"sqlite:///{database}", "SELECT userID, artistID FROM plays", "pairs", person="user")


def test_a_query_without_rows_says_so_and_one_beside_a_file_spends_nothing(tmp_path, monkeypatch, capsys):
    """Reading an empty query result says so (``EmptyData``; a release treats it as data of no one:
    tests/test_release_routes.py); a data file given with --sql was silently ignored and the
    query's people were charged to the file's dataset name."""
    from dpdesk import cli
    from dpdesk.privacy.ledger import Ledger

    monkeypatch.setenv("DPDESK_HOME", str(tmp_path / "home"))
    database = tmp_path / "t.db"
    with sqlite3.connect(database) as connection:
        connection.execute("CREATE TABLE p (person INTEGER, item TEXT)")
        connection.executemany("INSERT INTO p VALUES (?, ?)", [(i % 50, f"i{i % 7}") for i in range(300)])
    with pytest.raises(DataError, match="the query returned no rows"):
        load_sql(f"sqlite:///{database}", "SELECT * FROM p WHERE 0", "pairs")
    (tmp_path / "data.csv").write_text("a,b\nb,c\n")
    common = ["--mechanism", "lpa", "--bound", "5", "--epsilon", "1", "--items", "range:10"]
    args = [str(tmp_path / "data.csv"), "--sql", f"sqlite:///{database}", "--query", "SELECT * FROM p"]
    assert cli.main(["release", *args, *common, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "not both" in err and "Traceback" not in err
    assert Ledger.open().entries(kinds=("release",)) == [] and not (tmp_path / "out").exists()


def test_cancel_stops_a_query_within_a_second_and_leaves_no_files():
    engine = DuckEngine()
    folder = engine.folder
    token = CancelToken()
    started = {}

    def cancel_soon():
        time.sleep(0.5)
        started["at"] = time.monotonic()
        token.cancel()

    threading.Thread(target=cancel_soon).start()
    with pytest.raises(Cancelled):
        engine.execute("SELECT COUNT(*) FROM range(5000000000) t(i) WHERE hash(i) % 7 = 3", cancel=token)
    assert time.monotonic() - started["at"] < 1.0
    engine.close()
    assert not folder.exists()


def test_progress_is_reported_from_the_query():
    seen = []
    with DuckEngine() as engine:
        engine.execute("SELECT COUNT(*) FROM range(400000000) t(i) WHERE hash(i) % 7 = 3",
                       progress=lambda f, m: seen.append(f))
    assert seen and all(0 <= f <= 1 for f in seen)


def test_spill_folder_is_under_dpdesk_home(dpdesk_home):
    with DuckEngine(memory_limit="200M") as engine:
        assert engine.folder.parent == spill_root() and str(spill_root()).startswith(str(dpdesk_home))
        assert engine.memory_limit == 200 << 20


def test_auto_reads_in_memory_what_fits_with_room_for_a_release(data_dir, tmp_path):
    from dpdesk.data.textio import open_source
    from dpdesk.engine import IN_MEMORY_BYTES_PER_BYTE, choose_engine

    plain = tmp_path / "baskets.dat"
    plain.write_bytes(b"1 2 3\n" * 100_000)  # 600 kB
    size = plain.stat().st_size
    assert choose_engine("auto", open_source(plain), size * IN_MEMORY_BYTES_PER_BYTE) == "memory"
    assert choose_engine("auto", open_source(plain), size * IN_MEMORY_BYTES_PER_BYTE - 1) == "duckdb"
    assert choose_engine("memory", open_source(plain), 1) == "memory"
    assert type(dpdesk.load(plain, memory_limit=str(size * IN_MEMORY_BYTES_PER_BYTE - 1))).__name__ == "EngineDataset"
    assert type(dpdesk.load(plain)).__name__ == "Dataset"
    # a gzip file's stored length wraps at 4 GiB: it counts for at least 4 times the compressed size
    packed = data_dir / "retail.dat.gz"
    limit = 4 * packed.stat().st_size * IN_MEMORY_BYTES_PER_BYTE
    assert choose_engine("auto", open_source(packed), limit - 1) == "duckdb"


def test_parquet_files_are_weighed_by_what_they_hold_not_their_compressed_size(data_dir, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dpdesk.data.textio import open_source
    from dpdesk.engine import IN_MEMORY_BYTES_PER_BYTE, IN_MEMORY_BYTES_PER_CELL, in_memory_estimate

    baskets = convert(data_dir / "retail.dat.gz", tmp_path / "retail.parquet")
    retail = dpdesk.load(baskets, engine="memory")
    estimate = in_memory_estimate(open_source(baskets))
    assert estimate >= retail.nnz * IN_MEMORY_BYTES_PER_CELL  # (empty baskets add a slot each)
    assert estimate > 2 * baskets.stat().st_size * IN_MEMORY_BYTES_PER_BYTE  # compressed: its size misleads
    table = tmp_path / "pairs.parquet"
    pq.write_table(pa.table({"person": np.arange(100_000) % 997, "item": np.arange(100_000) % 13}), table)
    uncompressed = sum(pq.ParquetFile(table).metadata.row_group(g).total_byte_size
                       for g in range(pq.ParquetFile(table).metadata.num_row_groups))
    assert in_memory_estimate(open_source(table)) == uncompressed * IN_MEMORY_BYTES_PER_BYTE


def test_convert_names_the_file_and_line_of_a_ragged_table(tmp_path):
    """DuckDB's CSV reader says only "CSV Error on Line: 3"; convert says it as inspect does."""
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("person,item\n1,a\n2,b,c,d\n3\n4,e\n")
    with pytest.raises(DataError) as caught:
        convert(ragged, tmp_path / "out.parquet", format="pairs", header=True)
    assert str(caught.value).startswith("ragged.csv, line 3:") and "separated by commas" in str(caught.value)
    assert not (tmp_path / "out.parquet").exists()
