"""Each importer on small hand-made files, format detection, and cross-format fingerprints."""

import gzip

import numpy as np
import pandas as pd
import pytest

import dpdesk
from dpdesk.data import sniff


def write(path, text, encoding="utf-8"):
    path.write_bytes(text.encode(encoding))
    return path


def rows_of(data):
    """Each row as a sorted list of item labels (order of rows kept)."""
    m = data.matrix
    return [sorted(str(data.item_labels[j]) for j in m.indices[m.indptr[i]:m.indptr[i + 1]]) for i in range(data.n_rows)]


# --- transactions ------------------------------------------------------------------------

def test_fimi_integer_tokens_repeats_and_empty_lines(tmp_path):
    path = write(tmp_path / "t.dat", "1 2 3 \n\n3 3 10\r\n2\n")
    data = dpdesk.load(path)
    assert data.source["format"] == "transactions"
    assert list(data.item_labels) == ["1", "2", "3", "10"]
    assert rows_of(data) == [["1", "2", "3"], [], ["10", "3"], ["2"]]
    assert data.column_counts.tolist() == [1, 2, 2, 1]  # "3 3" counts once


def test_transactions_string_tokens_and_tabs(tmp_path):
    spaced = dpdesk.load(write(tmp_path / "t.txt", "apple  pear fig\nfig fig\n"), format="transactions")
    assert rows_of(spaced) == [["apple", "fig", "pear"], ["fig"]]
    tabbed = dpdesk.load(write(tmp_path / "u.txt", "green apple\tpear\tfig\nfig\tfig\n"), format="transactions")
    assert rows_of(tabbed) == [["fig", "green apple", "pear"], ["fig"]]


def test_leading_zeros_stay_distinct_labels(tmp_path):
    data = dpdesk.load(write(tmp_path / "z.dat", "7 07\n007\n"))
    assert sorted(data.item_labels) == ["007", "07", "7"]


def test_basket_csv_with_names_and_quotes(tmp_path):
    plain = dpdesk.load(write(tmp_path / "b.csv", "whole milk,citrus fruit\nyogurt\nwhole milk, yogurt,whole milk\n"))
    assert plain.source["format"] == "transactions"
    assert rows_of(plain) == [["citrus fruit", "whole milk"], ["yogurt"], ["whole milk", "yogurt"]]
    quoted = dpdesk.load(write(tmp_path / "q.csv", '"milk, whole",bread\nbread\n"milk, whole"\n'), format="transactions",
                         delimiter=",")
    assert rows_of(quoted) == [["bread", "milk, whole"], ["bread"], ["milk, whole"]]


def test_large_transactions_chunking(tmp_path, monkeypatch):
    import dpdesk.data.transactions as transactions

    monkeypatch.setattr(transactions, "PIECE_BYTES", 64)  # force many pieces
    rng = np.random.default_rng(3)
    lines = [" ".join(str(x) for x in rng.integers(0, 50, size=rng.integers(0, 12))) for _ in range(500)]
    path = write(tmp_path / "big.dat", "\n".join(lines) + "\n")
    data = dpdesk.load(path)
    assert data.n_rows == 500
    expected = [sorted(set(line.split()), key=int) for line in lines]
    assert [sorted(r, key=int) for r in rows_of(data)] == expected


# --- pairs ---------------------------------------------------------------------------------

def test_pairs_csv_by_name_and_position(tmp_path):
    text = "user,movie,rating\nu1,m1,4\nu1,m2,0\nu2,m1,5\nu2,m1,3\n"
    path = write(tmp_path / "p.csv", text)
    data = dpdesk.load(path)
    assert data.source["format"] == "pairs"
    assert data.n_rows == 2 and list(data.item_labels) == ["m1", "m2"]
    assert data.column_counts.tolist() == [2, 1]  # repeated pair counts once
    valued = dpdesk.load(path, person="user", item="movie", value="rating")
    assert valued.column_counts.tolist() == [2, 0]  # value 0 = not present
    swapped = dpdesk.load(path, format="pairs", person=1, item=0)
    assert sorted(swapped.item_labels) == ["u1", "u2"]


def test_pairs_tsv_and_parquet_same_fingerprint(tmp_path):
    frame = pd.DataFrame({"person": ["a", "a", "b", "c"], "item": ["x", "y", "x", "z"]})
    tsv = tmp_path / "p.tsv"
    frame.to_csv(tsv, sep="\t", index=False)
    parquet = tmp_path / "p.parquet"
    frame.to_parquet(parquet, index=False)
    a, b = dpdesk.load(tsv), dpdesk.load(parquet)
    assert a.source["format"] == b.source["format"] == "pairs"
    assert a.fingerprint == b.fingerprint
    assert a.summary() == b.summary()


def test_same_data_in_two_formats_same_fingerprint(tmp_path, data_dir):
    fimi = dpdesk.load(data_dir / "chess.dat.gz")
    m = fimi.matrix
    pairs = pd.DataFrame({
        "person": np.repeat(np.arange(fimi.n_rows), np.diff(m.indptr)),
        "item": [fimi.item_labels[j] for j in m.indices],
    }).sample(frac=1.0, random_state=1)  # shuffled: row and pair order must not matter
    path = tmp_path / "chess_pairs.csv"
    pairs.to_csv(path, index=False)
    converted = dpdesk.load(path)
    assert converted.fingerprint == fimi.fingerprint
    # and a different dataset gives a different fingerprint
    assert dpdesk.load(data_dir / "mushroom.dat.gz").fingerprint != fimi.fingerprint


def test_fingerprint_sees_one_changed_cell():
    base = np.array([[1, 0, 1], [0, 1, 1]])
    changed = base.copy()
    changed[1, 0] = 1
    assert dpdesk.from_matrix(base).fingerprint != dpdesk.from_matrix(changed).fingerprint
    assert dpdesk.from_matrix(base).fingerprint == dpdesk.from_matrix(base[::-1]).fingerprint


# --- wide matrix ------------------------------------------------------------------------------

def test_wide_matrix_with_and_without_id(tmp_path):
    with_id = dpdesk.load(write(tmp_path / "m.csv", "id,a,b,c\nr1,1,0,1\nr2,0,0,1\n"))
    assert with_id.source["format"] == "matrix"
    assert list(with_id.item_labels) == ["a", "b", "c"] and with_id.column_counts.tolist() == [1, 0, 2]
    without = dpdesk.load(write(tmp_path / "n.csv", "a,b,c\n1,0,1\n0,0,1\n"))
    assert without.fingerprint == with_id.fingerprint


# --- records and cells -------------------------------------------------------------------------

RECORDS = "age,sex,region\n30,F,north\n30,M,south\n41,F,north\n30,F,north\n"


def test_records_incidence_view_and_cells(tmp_path):
    path = write(tmp_path / "r.csv", RECORDS)
    onehot = dpdesk.load(path, format="records")
    assert onehot.n_rows == 4 and onehot.summary()["max_row_count"] == 3
    assert "sex=F" in set(onehot.item_labels)
    cells = dpdesk.load(path, format="records", attributes=["sex", "region"])
    assert cells.kind == "cells" and cells.domain_size == 4 and cells.total == 4
    labels = dict(zip(cells.cell_labels(cells.indices), cells.counts.tolist()))
    assert labels == {"F | north": 3, "M | south": 1}


def test_count_table_matches_records(tmp_path):
    records = dpdesk.load(write(tmp_path / "r.csv", RECORDS), format="records", attributes=["sex", "region"])
    table = dpdesk.load(write(tmp_path / "t.csv", "region,sex,count\nsouth,M,1\nnorth,F,3\n"),
                        attributes=["sex", "region"])
    assert table.kind == "cells" and table.source["format"] == "cells"
    assert table.fingerprint == records.fingerprint


def test_declared_domains(tmp_path):
    path = write(tmp_path / "r.csv", RECORDS)
    cells = dpdesk.load(path, format="records", attributes=["sex"], domains={"sex": ["F", "M", "X"]})
    assert cells.domain_size == 3 and cells.domains_declared
    assert cells.domain is not None and cells.domain.how == "list"
    # a value outside the declared domain drops its record (counted internally), never a
    # refusal: whether to refuse would itself depend on what the records hold
    only_f = dpdesk.load(path, format="records", attributes=["sex"], domains={"sex": ["F"]})
    assert only_f.domain_size == 1 and only_f.total == 3 and only_f.dropped_records == 1


def test_from_cells_and_from_matrix():
    cells = dpdesk.from_cells([5, 2, 5], [1, 2, 3], 10)
    assert cells.indices.tolist() == [2, 5] and cells.counts.tolist() == [2, 4]
    data = dpdesk.from_matrix(np.array([[1, 0], [1, 1]]), item_labels=["a", "b"])
    assert data.column_counts.tolist() == [2, 1] and data.binary


# --- encodings, compression, detection ------------------------------------------------------------

def test_gzip_bom_latin1_crlf(tmp_path):
    text = "person;item\r\nanna;café\r\nbob;thé\r\n"
    plain = dpdesk.load(write(tmp_path / "u.csv", text))
    bom = tmp_path / "bom.csv"
    bom.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    latin = write(tmp_path / "l.csv", text, encoding="latin-1")
    zipped = tmp_path / "z.csv.gz"
    zipped.write_bytes(gzip.compress(text.encode("utf-8")))
    loaded = [dpdesk.load(p) for p in (bom, latin, zipped)]
    assert [d.source["encoding"] for d in [plain] + loaded] == ["utf-8", "utf-8-sig", "latin-1", "utf-8"]
    assert {d.fingerprint for d in [plain] + loaded} == {plain.fingerprint}
    assert "café" in set(plain.item_labels)


@pytest.mark.parametrize("text,expected", [
    ("1 2 3\n4 5\n", "transactions"),
    ("a,b\nc\nd,e,f\n", "transactions"),
    ("user,item\n1,2\n1,3\n2,2\n", "pairs"),
    ("1\t2\t5\n1\t3\t7\n", "pairs"),
    ("id,x,y,z\n1,0,1,1\n2,1,0,0\n", "matrix"),
    ("a,b,c,d,e\n1,x,2,y,3\n4,x,5,z,6\n", "records"),
    ("sex,region,count\nF,north,3\nM,south,1\n", "cells"),
])
def test_detection(tmp_path, text, expected):
    assert sniff(write(tmp_path / "f.txt", text)).format == expected
