"""Issue 31, items 6, 10 and 12 outside the GUI: records read as items flag a column that looks like an
identifier (internal) and never publish its values as the file's own labels without an explicit choice;
a header-less file's columns are named; one person may be on several rows (grouped like pairs, so each
count moves by at most 1 per person) and the report says who one person is; cell counts with several rows
per person are refused before anything is read; a file that is not a table says what it is; and the
commands `dpdesk gui` prints without a display run as they are copied."""

from __future__ import annotations

import gzip
import html
import json
import os
import re
import shlex
import subprocess
import sys

import numpy as np
import pytest

import dpdesk
from dpdesk import cli
from dpdesk.data.detect import IDENTIFIER_SAMPLE, identifier_like, look_at_columns
from dpdesk.data.loader import CELLS_NEED_ONE_ROW
from dpdesk.errors import DataError, ParameterError
from dpdesk.privacy.ledger import Ledger

from .conftest import DATA

ADULT = DATA / "adult.data.gz"

ADULT_NAMES = ("age,workclass,fnlwgt,education,education-num,marital-status,occupation,relationship,race,sex,"
               "capital-gain,capital-loss,hours-per-week,native-country,income")


def words(path) -> str:
    """A report's text, tags removed and entities decoded."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", path.read_text(encoding="utf-8"))).split())


# -- the identifier flag -------------------------------------------------------------------------------------
def test_the_flag_is_nearly_all_distinct_on_the_first_rows():
    assert identifier_like([str(k) for k in range(50)])
    assert not identifier_like([str(k) for k in range(49)])  # too few values to tell
    # Adult's first 50 rows: 32 ages (64%), 50 weights (fnlwgt)
    head = [line.split(", ") for line in gzip.open(ADULT, "rt").read().splitlines()[:50]]
    assert not identifier_like([row[0] for row in head]) and identifier_like([row[2] for row in head])
    assert not identifier_like([str(k % 70) for k in range(IDENTIFIER_SAMPLE)])  # ages: 7% distinct
    assert not identifier_like([str(k) for k in range(85)] + ["x"] * 15)  # 86 of 100: below 90%
    assert identifier_like([str(k) for k in range(90)] + ["x"] * 10)  # 91 of 100
    # only the first rows count, as in the wizard, which sees only the file's head
    assert identifier_like([str(k) for k in range(IDENTIFIER_SAMPLE)] + ["x"] * 10 * IDENTIFIER_SAMPLE)
    # empty values are not values
    assert not identifier_like([""] * 100 + [str(k) for k in range(10)])
    looks = look_at_columns(["id", "sex"], [[str(k), "FM"[k % 2]] for k in range(60)])
    assert [look.identifier for look in looks] == [True, False] and looks[1].samples == ["F", "M"]


def test_adult_flags_fnlwgt_in_memory_and_in_duckdb(data_dir):
    for engine in ("memory", "duckdb"):
        data = dpdesk.load(data_dir / "adult.data.gz", format="records", engine=engine,
                           column_names=ADULT_NAMES.split(","))
        assert list(data.likely_identifiers) == ["fnlwgt"], engine
        assert any(str(label).startswith("fnlwgt=") for label in data.item_labels)  # counted: nothing dropped by itself


def adult_release(tmp_path, *extra):
    return cli.main(["release", str(ADULT), "--format", "records", "--mechanism", "lpa", "--epsilon", "1",
                     "--bound", "15", *extra, "--report", "html", "--out", str(tmp_path / "out")])


def test_the_files_own_labels_are_refused_while_an_identifier_is_counted(tmp_path, dpdesk_home, capsys):
    assert adult_release(tmp_path, "--items", "from-data", "--items-are-public") == 2
    err = capsys.readouterr().err
    assert "warning (internal, not published): 'column 3' looks like an identifier" in err
    refusal = err.strip().splitlines()[-1]
    assert refusal.startswith("dpdesk: error: The column 'column 3' looks like an identifier")
    assert "--item-columns 'column 1,column 2,column 4," in refusal and "Nothing was spent" in refusal
    assert "no header line" in err and "--column-names" in err  # named, not numbered, columns
    assert not (tmp_path / "out").exists() and Ledger.open().totals() == {}
    # the same through the API's declaration
    data = dpdesk.load(ADULT, format="records")
    with pytest.raises(ParameterError, match="looks like an identifier"):
        dpdesk.declare(data, "from-data", items_are_public=True)


def test_named_columns_without_the_identifier_publish_no_identifier(tmp_path, dpdesk_home, capsys):
    columns = "age,workclass,education,marital-status,occupation,relationship,race,sex,native-country,income"
    assert adult_release(tmp_path, "--column-names", ADULT_NAMES, "--item-columns", columns,
                         "--items", "from-data", "--items-are-public") == 0
    err = capsys.readouterr().err
    assert "identifier" not in err and "no header line" not in err
    items = [line.split(",", 1)[0] for line in (tmp_path / "out" / "release.csv").read_text().splitlines()[1:]]
    assert {item.split("=", 1)[0] for item in items} == set(columns.split(","))
    report = words(tmp_path / "out" / "privacy-report.html")
    assert "One person is one row of the data file: nobody appears on more than one row." in report
    assert "values in the data file's columns are public" in report
    assert "column 3" not in report and "fnlwgt" not in report and "product catalogue" not in report
    # words for a reader: who can check the ledger, and what "not clipped" means for whole numbers
    assert "ledger verify" not in report and "The data steward keeps this ledger" in report
    assert "A reader can check each file against its checksum below" in report
    assert "never below 0 all the same" not in report
    assert "Set negative counts to 0 clamp no, not by the mechanism; the published whole numbers are not below 0, " \
           "because a value below 0 is published as 0" in report


def test_an_identifier_named_explicitly_is_published_with_a_warning(tmp_path, dpdesk_home, capsys):
    assert adult_release(tmp_path, "--column-names", ADULT_NAMES, "--item-columns", "sex,fnlwgt",
                         "--items", "from-data", "--items-are-public") == 0
    assert "You chose it among the item columns" in capsys.readouterr().err
    assert "fnlwgt=77516" in (tmp_path / "out" / "release.csv").read_text()


def test_a_declared_item_list_is_not_refused(tmp_path, dpdesk_home, capsys):
    """With a declared list the published labels are the steward's: the flag only warns."""
    items = tmp_path / "items.txt"
    items.write_text("column 10=Female\ncolumn 10=Male\n")
    assert adult_release(tmp_path, "--items", str(items)) == 0
    assert "looks like an identifier" in capsys.readouterr().err
    assert (tmp_path / "out" / "release.csv").read_text().count("\n") == 3


# -- column names ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("names, message", [
    ("a,b", "2 column names were given but the table has 15 columns"),
    ("a,a,c", "both named 'a'"),
    ("a,,c", "Column 2 has no name"),
])
def test_column_names_in_words(names, message, tmp_path, dpdesk_home, capsys):
    assert cli.main(["inspect", str(ADULT), "--format", "records", "--column-names", names]) == 2
    assert message in capsys.readouterr().err


def test_column_names_for_a_file_with_a_header_are_refused(tmp_path, capsys):
    path = tmp_path / "t.csv"
    path.write_text("a,b\n1,2\n")
    assert cli.main(["inspect", str(path), "--format", "records", "--header", "--column-names", "x,y"]) == 2
    assert "only for a file without a header line" in capsys.readouterr().err


# -- who is one person -----------------------------------------------------------------------------------
def visits(path, people: int = 40, extra: list[str] = ()) -> "os.PathLike":
    lines = ["patient,ward,diagnosis"]
    for person in range(people):
        for visit in range(1 + person % 3):
            lines.append(f"P{person:03d},{'ABC'[(person + visit) % 3]},{['flu', 'asthma'][person % 2]}")
    path.write_text("\n".join(lines + list(extra)) + "\n")
    return path


def test_a_persons_rows_are_one_row_of_the_matrix(tmp_path):
    path = visits(tmp_path / "v.csv")
    for engine in ("memory", "duckdb"):
        data = dpdesk.load(path, format="records", header=True, person="patient", engine=engine)
        assert data.n_rows == 40 and data.source["person column"] == "patient", engine
        assert not any(str(label).startswith("patient=") for label in data.item_labels)
        if engine == "memory":
            first = data
            assert int(data.summary()["max_row_count"]) == 4  # 3 wards + 1 diagnosis, each once
        else:
            assert data.fingerprint == first.fingerprint


def test_one_more_person_on_several_rows_moves_each_count_by_at_most_one(tmp_path):
    """The neighbour adds one person with four rows, three of them in ward A: their incidence matrix is
    D's plus one row, the neighbour relation privacy/bounding.py's Δ-sensitivity rests on, so every item
    count moves by at most 1 (and, truncated to Δ, at most Δ counts move). Read as one row per record,
    ward=A would move by 3."""
    d = dpdesk.load(visits(tmp_path / "d.csv"), format="records", header=True, person="patient")
    d_plus = dpdesk.load(visits(tmp_path / "d_plus.csv", extra=["Z999,A,flu", "Z999,A,flu", "Z999,A,asthma",
                                                                "Z999,B,flu"]),
                         format="records", header=True, person="patient")
    assert list(d.item_labels) == list(d_plus.item_labels)
    moved = d_plus.column_counts - d.column_counts
    assert moved.max() == 1 and moved.min() == 0 and moved.sum() == 4  # ward A, B; flu, asthma
    assert d_plus.n_rows == d.n_rows + 1 and (d_plus.matrix[:d.n_rows] != d.matrix).nnz == 0
    assert d_plus.row_counts[-1] == 4


def test_the_report_says_who_one_person_is_and_neighbours_agree(tmp_path, dpdesk_home):
    outputs = []
    for name, extra in (("d", []), ("d_plus", ["Z999,A,flu", "Z999,A,flu", "Z999,C,asthma"])):
        path = visits(tmp_path / f"{name}.csv", extra=extra)
        assert cli.main(["release", str(path), "--format", "records", "--header", "--person", "patient",
                         "--mechanism", "lpa", "--epsilon", "1", "--bound", "4", "--items", "from-data",
                         "--items-are-public", "--dataset", name, "--report", "html",
                         "--out", str(tmp_path / name)]) == 0
        metadata = json.loads((tmp_path / name / "release.json").read_text(encoding="utf-8"))
        outputs.append(metadata["unit_of_privacy"])
        report = words(tmp_path / name / "privacy-report.html")
        assert ("One person is one value of the column 'patient': a person may appear on several rows, and all "
                "the rows with their value are taken together") in report
    assert outputs[0] == outputs[1]  # a declared input: the same for neighbours


def test_without_a_person_column_the_cli_asks(tmp_path, capsys):
    assert cli.main(["inspect", str(visits(tmp_path / "v.csv")), "--format", "records", "--header"]) == 0
    assert "each row is taken as one person" in capsys.readouterr().err
    assert cli.main(["inspect", str(tmp_path / "v.csv"), "--format", "records", "--header",
                     "--person", "patient"]) == 0
    assert "each row is taken as one person" not in capsys.readouterr().err


@pytest.mark.parametrize("options", [["--attributes", "ward,diagnosis"], ["--format", "cells"]])
def test_cell_counts_with_several_rows_per_person_are_refused_before_reading(options, tmp_path, dpdesk_home,
                                                                            capsys, monkeypatch):
    import dpdesk.data.loader as loader

    with pytest.raises(ParameterError, match="Cell counts take each row as one person"):
        dpdesk.load(visits(tmp_path / "v.csv"), format="records", header=True, person="patient", attributes=["ward"])
    read = []
    monkeypatch.setattr(loader, "open_source", lambda *a, **k: read.append(a))
    args = ["release", str(tmp_path / "not-even-there.csv"), "--person", "patient", "--mechanism", "geometric",
            "--epsilon", "1", "--domains", "from-data", "--domains-are-public", "--out", str(tmp_path / "o")]
    if "--format" not in options:
        args += ["--format", "records"]
    assert cli.main(args + options) == 2
    assert capsys.readouterr().err.strip() == f"dpdesk: error: {CELLS_NEED_ONE_ROW}"
    assert read == [] and not (tmp_path / "o").exists() and Ledger.open().totals() == {}


# -- files that are not tables -----------------------------------------------------------------------------
def test_a_pdf_renamed_csv_says_what_it_is(tmp_path, capsys):
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica")
    pdf.cell(text="not a table")
    path = tmp_path / "survey.csv"
    pdf.output(str(path))
    assert cli.main(["inspect", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("dpdesk: error: survey.csv: this is a PDF document, not a data table (expected a data table")
    assert "NUL" not in err and "line" not in err.split("(expected")[0]


def test_a_zero_byte_in_text_says_it_is_not_a_text_table(tmp_path):
    path = tmp_path / "t.csv"
    path.write_bytes(b"a,b\n1,2\n3,\x004\n")
    with pytest.raises(DataError, match=r"t\.csv: this is not a text table: it holds binary data \(a zero byte, on "
                                        r"what would be line 3\)"):
        dpdesk.load(path)


# -- the commands shown without a display ------------------------------------------------------------------
def test_the_commands_shown_without_a_display_run_as_copied(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    env["DPDESK_HOME"] = str(tmp_path / "home")
    program = os.path.join(os.path.dirname(sys.executable), "dpdesk")
    shown = subprocess.run([program, "gui", "--sample"], env=env, capture_output=True, text=True, timeout=120)
    assert shown.returncode == 1 and "no display" in shown.stderr
    commands = [line.strip() for line in shown.stderr.splitlines() if line.startswith("  ")]
    assert [shlex.split(c)[1] for c in commands] == ["inspect", "recommend", "compare", "release"]
    for command in commands:
        run = subprocess.run(shlex.split(command), env=env, cwd=tmp_path, capture_output=True, text=True,
                             timeout=600)
        assert run.returncode == 0, f"{command}\n{run.stderr}"
    assert (tmp_path / "release" / "release.csv").is_file() and (tmp_path / "results" / "summary.csv").is_file()


def test_a_project_keeps_the_named_columns_the_counted_ones_and_the_person(tmp_path):
    from dpdesk.project import Project

    options = {"header": True, "item_columns": [1, 2], "person": 0, "column_names": None}
    project = Project(data={"path": str(visits(tmp_path / "v.csv")), "format": "records", "options": options})
    again = Project.load(project.save(tmp_path / "p.dpdesk"))
    data = again.load_data()
    assert data.n_rows == 40 and data.source["person column"] == "patient"
    names = ADULT_NAMES.split(",")
    project = Project(data={"path": str(ADULT), "format": "records",
                            "options": {"header": False, "column_names": names, "item_columns": [0, 9]}})
    data = Project.load(project.save(tmp_path / "a.dpdesk")).load_data()
    assert {str(label).split("=")[0] for label in data.item_labels} == {"age", "sex"}
