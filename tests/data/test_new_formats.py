"""Excel, SPSS, Stata and SAS files (issue 18): each round-trips a small survey table with value
labels, missing values and non-ASCII text through ``dpdesk inspect`` (in-process) and
``dpdesk.load``, in each layout that makes sense; a damaged file of each kind is one clear line
that names the file; a missing person or item is reported with its row."""

from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pytest

import dpdesk
from dpdesk.cli import main
from dpdesk.data import sniff
from dpdesk.data.detect import preview_table
from dpdesk.errors import DataError, ParameterError

from .survey_files import KINDS, LABELLED, PEOPLE, expected_items, frame, write, write_matrix


def inspect(capsys, *args) -> tuple[int, dict | str, str]:
    status = main(["inspect", *map(str, args)])
    out, err = capsys.readouterr()
    if status == 0 and "--json" in args:
        return status, json.loads(out), err
    return status, out, err


def labels(data) -> list[str]:
    return sorted(str(x) for x in data.item_labels)


def rows_of(data):
    m = data.matrix
    return [sorted(str(data.item_labels[j]) for j in m.indices[m.indptr[i]:m.indptr[i + 1]]) for i in range(data.n_rows)]


@pytest.mark.parametrize("kind", KINDS)
def test_detected_by_content_with_columns_and_preview(tmp_path, kind):
    path = write(tmp_path, kind)
    sniffed = sniff(path)
    assert sniffed.kind == kind and sniffed.binary
    assert sniffed.columns == ["person", "item", "sex", "region", "bought"]
    assert sniffed.format == "records"  # five columns, not 0/1: microdata
    columns, rows = preview_table(sniffed, header=True)
    assert columns == sniffed.columns and len(rows) == 5
    assert rows[2][0] == "Łukasz" and rows[0][3] == "Zürich"
    assert rows[0][1] == expected_items(kind)[0] if kind in LABELLED else True
    # the same file under a name that says nothing is still recognised by its first bytes
    renamed = tmp_path / "renamed.bin"
    shutil.copyfile(path, renamed)
    assert sniff(renamed).kind == kind


@pytest.mark.parametrize("kind", KINDS)
def test_pairs_round_trip_through_inspect_and_load(tmp_path, capsys, kind):
    path = write(tmp_path, kind)
    status, summary, err = inspect(capsys, path, "--format", "pairs", "--person", "person", "--item", "item", "--json")
    assert status == 0, err
    assert summary["rows"] == 3 and summary["columns"] == 3 and summary["nonzeros"] == 5
    data = dpdesk.load(path, format="pairs", person="person", item="item")
    assert labels(data) == expected_items(kind)  # value labels (SPSS, Stata) name the items
    assert data.n_rows == len(set(PEOPLE))
    status, text, _ = inspect(capsys, path, "--format", "pairs", "--person", "person", "--item", "item")
    assert status == 0 and "[format: pairs]" in text


@pytest.mark.parametrize("kind", KINDS)
def test_records_with_labels_and_missing_values(tmp_path, capsys, kind):
    path = write(tmp_path, kind)
    data = dpdesk.load(path, format="records")
    found = labels(data)
    assert "region=Zürich" in found and "region=Łódź" in found and "person=Łukasz" in found
    assert "region=" in found  # an empty text value is missing, like an empty CSV field
    if kind in LABELLED:
        assert {"sex=Female", "sex=Male"} <= set(found)
    if kind == "sav":  # 9 is a user-defined missing value in SPSS: missing, not "Refused"
        assert "sex=Refused" not in found and "sex=9" not in found
    if kind == "dta":
        assert "sex=Refused" in found  # in Stata 9 is a labelled code
    if kind in ("xpt", "sas7bdat"):
        assert {"sex=1", "sex=2", "sex=9"} <= set(found)
    assert "sex=" in found  # the missing value of row 5
    assert data.n_rows == 5 and data.nnz == 25
    status, summary, err = inspect(capsys, path, "--format", "records", "--json")
    assert status == 0, err
    assert summary["rows"] == 5 and summary["max_row_count"] == 5


@pytest.mark.parametrize("kind", KINDS)
def test_cells_over_chosen_attributes(tmp_path, kind):
    path = write(tmp_path, kind)
    cells = dpdesk.load(path, format="records", attributes=["region", "bought"])
    assert cells.kind == "cells" and cells.total == 5
    region = cells.domains[0]
    assert "Göteborg" in region and "Zürich" in region


@pytest.mark.parametrize("kind", KINDS)
def test_matrix_of_zero_one_columns(tmp_path, capsys, kind):
    if kind == "sas7bdat":  # no SAS7BDAT matrix here: the survey's item codes are not 0/1, reported by row
        path = write(tmp_path, kind)
        with pytest.raises(DataError) as caught:
            dpdesk.load(path, format="matrix", id_column="person")
        # the first bad cell in reading order: row 1, where "region" holds a name
        assert caught.value.row == 1 and caught.value.column == "region"
        assert "'Zürich' is not 0 or 1" in str(caught.value)
        return
    path = write_matrix(tmp_path, kind)
    status, summary, err = inspect(capsys, path, "--format", "matrix", "--json")
    assert status == 0, err
    assert summary["rows"] == 3 and summary["columns"] == 2 and summary["nonzeros"] == 4
    data = dpdesk.load(path, format="matrix")  # the text "person" column is taken as the identifier
    assert labels(data) == ["cafe", "the"] and data.column_counts.tolist() == [2, 2]


@pytest.mark.parametrize("kind", KINDS)
def test_missing_item_reported_with_its_row(tmp_path, capsys, kind):
    path = write(tmp_path, kind)
    with pytest.raises(DataError) as caught:
        dpdesk.load(path, format="pairs", person="person", item="region")
    error = caught.value
    row = 5 if kind == "xlsx" else 4  # Excel numbers the header row too; data files number their records
    assert error.row == row and error.column == "region"
    assert str(error).startswith(f"{path.name}, row {row}, column 'region': the item is missing")
    status, _, err = inspect(capsys, path, "--format", "pairs", "--person", "person", "--item", "region")
    assert status == 2 and f"row {row}" in err and path.name in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("kind", KINDS)
def test_a_damaged_file_is_one_clear_line_naming_it(tmp_path, capsys, kind):
    good = write(tmp_path, kind).read_bytes()
    for name, content in (("cut", good[: len(good) // 3]), ("scrambled", good[:64] + bytes(range(256)) * 8)):
        path = tmp_path / f"{name}.{kind}"
        path.write_bytes(content)
        status, out, err = inspect(capsys, path)
        assert status == 2, (kind, name, out)
        assert err.startswith(f"dpdesk: error: {path.name}") and "Traceback" not in err, err
        assert len(err.strip().splitlines()) == 1, err
        assert "damaged" in err, err


@pytest.mark.parametrize("suffix,what", [(".xlsx", "Excel"), (".sav", "SPSS"), (".dta", "Stata"),
                                         (".sas7bdat", "SAS"), (".xpt", "SAS transport")])
def test_another_file_under_such_a_name(tmp_path, capsys, suffix, what):
    path = tmp_path / f"data{suffix}"
    path.write_text("person,item\n1,a\n")
    status, _, err = inspect(capsys, path)
    assert status == 2 and f"data{suffix}" in err and what in err and "renamed" in err
    assert len(err.strip().splitlines()) == 1


def test_old_excel_and_zip_archives_say_what_to_do(tmp_path, capsys):
    xls = tmp_path / "old.xls"
    xls.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(504))
    status, _, err = inspect(capsys, xls)
    assert status == 2 and "old.xls" in err and ".xlsx" in err
    import zipfile

    archive = tmp_path / "data.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("data.csv", "a,b\n1,2\n")
    status, _, err = inspect(capsys, archive)
    assert status == 2 and "ZIP archive" in err and "unpack" in err


def test_gzip_compressed_statfile_is_refused_clearly(tmp_path, capsys):
    import gzip

    path = write(tmp_path, "sav")
    packed = tmp_path / "survey.sav.gz"
    packed.write_bytes(gzip.compress(path.read_bytes()))
    status, _, err = inspect(capsys, packed)
    assert status == 2 and "survey.sav.gz" in err and "uncompress" in err


# --- Excel specifics ---------------------------------------------------------------------------

def test_workbook_sheets_header_and_transactions(tmp_path, capsys):
    import openpyxl

    book = openpyxl.Workbook()
    baskets = book.active
    baskets.title = "Baskets"
    for row in (["pain", "fromage", "vin"], ["pain"], [], ["café", 12, "pain"], ["vin", None, "vin"]):
        baskets.append(row)
    table = book.create_sheet("Pairs")
    table.append(["client", "produit", "quantité"])
    table.append(["Zoë", "café", 2])
    table.append(["Zoë", "thé", None])  # the value column ends early: an empty cell
    table.append([])
    table.append(["Ola", "café", 1.0])
    path = tmp_path / "shop.xlsx"
    book.save(path)
    sniffed = sniff(path)
    assert sniffed.sheets == ["Baskets", "Pairs"] and sniffed.sheet == "Baskets"
    assert sniffed.format == "transactions"
    data = dpdesk.load(path, format="transactions", header=False)
    assert data.n_rows == 5  # the blank row between baskets is a person with no items, as an empty line is
    assert rows_of(data) == [["fromage", "pain", "vin"], ["pain"], [], ["12", "café", "pain"], ["vin"]]
    pairs = dpdesk.load(path, sheet="Pairs", format="pairs")
    assert labels(pairs) == ["café", "thé"] and pairs.n_rows == 2
    assert pairs.source["sheet"] == "Pairs"
    assert sniff(path, sheet=1).format == "pairs" and sniff(path, sheet="Pairs").header
    status, summary, err = inspect(capsys, path, "--sheet", "1", "--format", "pairs", "--json")
    assert status == 0 and summary["nonzeros"] == 3, err
    with pytest.raises(ParameterError, match="Baskets, Pairs"):
        dpdesk.load(path, sheet="Nope")
    status, _, err = inspect(capsys, path, "--sheet", "Nope")
    assert status == 2 and "no sheet 'Nope'" in err


def test_a_value_right_of_the_table_is_reported_with_its_row(tmp_path):
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.append(["person", "item"])
    for k in range(150):
        sheet.append([f"p{k}", f"i{k % 7}"])
    sheet["E140"] = "a note"
    path = tmp_path / "notes.xlsx"
    book.save(path)
    with pytest.raises(DataError) as caught:
        dpdesk.load(path, format="pairs")
    assert caught.value.row == 140 and "column E" in str(caught.value)


def test_sheet_is_for_workbooks_only(tmp_path):
    path = write(tmp_path, "sav")
    with pytest.raises(ParameterError, match="Excel"):
        dpdesk.load(path, sheet="x")


def test_statfile_read_in_many_chunks_keeps_row_numbers(tmp_path, monkeypatch):
    import pandas as pd
    import pyreadstat

    import dpdesk.data.statfiles as statfiles

    monkeypatch.setattr(statfiles, "CHUNK_VALUES", 10)  # 500 rows a chunk (the smallest)
    n = 1733
    people = np.arange(n).astype(float)
    people[1500] = np.nan  # row 1501: a missing person
    path = tmp_path / "big.sav"
    pyreadstat.write_sav(pd.DataFrame({"person": people, "item": (np.arange(n) % 11).astype(float)}), path)
    with pytest.raises(DataError) as caught:
        dpdesk.load(path, format="pairs")
    assert caught.value.row == 1501  # found in the fourth chunk, numbered from the file's start
    data = dpdesk.load(path, format="records")
    assert data.n_rows == n and data.nnz == 2 * n


def test_statfile_progress_and_cancel(tmp_path, monkeypatch):
    import pandas as pd
    import pyreadstat

    import dpdesk.data.statfiles as statfiles
    from dpdesk.errors import Cancelled
    from dpdesk.tasks import CancelToken

    monkeypatch.setattr(statfiles, "CHUNK_VALUES", 10)
    path = tmp_path / "big.dta"
    pyreadstat.write_dta(pd.DataFrame({"person": np.arange(5000.0), "item": np.arange(5000.0) % 3}), path)
    heard = []
    dpdesk.load(path, format="pairs", progress=lambda f, m="": heard.append((f, m)))
    fractions = [f for f, _ in heard]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0 and len(heard) >= 10
    assert any("rows of the Stata file" in m for _, m in heard)
    token = CancelToken()

    def stop_soon(fraction, message=""):
        if fraction > 0.2:
            token.cancel()

    with pytest.raises(Cancelled):
        dpdesk.load(path, format="pairs", progress=stop_soon, cancel=token)


def test_engine_auto_reads_big_statfiles_in_memory_and_duckdb_says_so(tmp_path, monkeypatch):
    import dpdesk.engine as engine

    path = write(tmp_path, "sav")
    monkeypatch.setattr(engine, "IN_MEMORY_BYTES_PER_BYTE", 1 << 40)  # every file is "too large for memory"
    data = dpdesk.load(path, format="pairs")  # auto: no engine reads SPSS, so memory does
    assert data.n_rows == 3 and type(data).__name__ == "Dataset"
    with pytest.raises(ParameterError, match="engine memory"):
        dpdesk.load(path, format="pairs", engine="duckdb")


def test_sas7bdat_fixture_is_what_readstat_writes(tmp_path):
    """The committed SAS7BDAT file matches what make_survey_sas7bdat.sh makes now (when readstat is here)."""
    from pathlib import Path

    if shutil.which("readstat") is None:
        pytest.skip("the readstat command (Debian package readstat) is not installed")
    import pyreadstat

    import pandas as pd

    here = Path(__file__).parent
    sav = tmp_path / "survey.sav"
    pyreadstat.write_sav(frame(), sav)
    made = tmp_path / "made.sas7bdat"
    subprocess.run(["readstat", str(sav), str(made)], check=True, capture_output=True)
    fresh, _ = pyreadstat.read_sas7bdat(made)
    kept, _ = pyreadstat.read_sas7bdat(here / "survey.sas7bdat")
    pd.testing.assert_frame_equal(fresh, kept)


# --- helpers that keep the window responsive give the same results as the plain numpy forms ------

def test_row_length_histogram_equals_numpy_histogram():
    import scipy.sparse as sp

    from dpdesk.data.dataset import from_matrix

    rng = np.random.default_rng(0)
    for n, top in [(1, 0), (7, 3), (100, 60), (5000, 3000), (3, 1)]:
        lengths = rng.integers(0, top + 1, n)
        lengths[0] = top
        rows = np.repeat(np.arange(n), lengths)
        cols = np.concatenate([rng.choice(top + 1, k, replace=False) for k in lengths])
        data = from_matrix(sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n, top + 1)))
        counts, edges = data.row_length_histogram()
        expected_edges = np.unique(np.linspace(0, top + 1, min(50, top + 1) + 1).astype(np.int64))
        expected, _ = np.histogram(data.row_counts, bins=expected_edges)
        assert np.array_equal(edges, expected_edges) and np.array_equal(counts, expected), (n, top)


def test_blockwise_forms_equal_numpy():
    from dpdesk.arrays import blockwise_at, blockwise_repeat

    rng = np.random.default_rng(2)
    for n in (0, 1, 5, 999):
        counts, values = rng.integers(0, 5, n), rng.integers(0, 100, n)
        for block in (1, 3, 7, 1 << 20):
            assert np.array_equal(blockwise_repeat(values, counts, block), np.repeat(values, counts))
    index, weights = rng.integers(0, 10, 1000), rng.integers(0, 9, 1000)
    for ufunc in (np.add, np.maximum):
        plain, blocked = np.zeros(10, np.int64), np.zeros(10, np.int64)
        ufunc.at(plain, index, weights)
        blockwise_at(ufunc, blocked, index, weights, block=7)
        assert np.array_equal(plain, blocked)
    plain, blocked = np.zeros(10, object), np.zeros(10, object)  # Python integers (DPSense's exact path)
    np.add.at(plain, index, 1)
    blockwise_at(np.add, blocked, index, 1, block=3)
    assert np.array_equal(plain, blocked)


def test_a_project_remembers_the_sheet_and_reads_the_workbook_again(tmp_path):
    from dpdesk.project import Project

    path = write(tmp_path, "xlsx")
    project = Project(data={"path": str(path), "format": "pairs",
                            "options": {"sheet": "Données", "person": "person", "item": "item", "header": True}})
    again = Project.load(project.save(tmp_path / "survey.dpdesk"))
    assert again.data["options"]["sheet"] == "Données"
    data = again.load_data()
    assert sorted(map(str, data.item_labels)) == expected_items("xlsx") and data.source["sheet"] == "Données"
    statfile = Project(data={"path": str(write(tmp_path, "sav")), "format": "records", "options": {}})
    assert Project.load(statfile.save(tmp_path / "sav.dpdesk")).load_data().n_rows == 5


@pytest.mark.parametrize("kind", ["sav", "dta", "xpt", "sas7bdat"])
def test_statfiles_are_tables_not_baskets(tmp_path, capsys, kind):
    path = write(tmp_path, kind)
    status, _, err = inspect(capsys, path, "--format", "transactions")
    assert status == 2 and path.name in err and "cannot be read as transactions" in err
    assert "pairs, matrix, records or cells" in err and len(err.strip().splitlines()) == 1
