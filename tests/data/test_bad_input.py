"""Every bad input of the foundation issue: one clear message (file, line, column, what was
expected) as a typed exception in the API, and exit status 2 without a traceback in the CLI."""

import gzip
import os
import subprocess
import sys

import pytest

import dpdesk
from dpdesk.errors import DataError


def cli_inspect(path, *extra):
    return subprocess.run([sys.executable, "-m", "dpdesk.cli", "inspect", str(path), *extra],
                          capture_output=True, text=True)


def check(path, pattern, *, line=None, column=None, fmt="auto", **options):
    with pytest.raises(DataError) as caught:
        dpdesk.load(path, format=fmt, **options)
    error = caught.value
    message = str(error)
    assert path.name in message, message
    assert pytest.importorskip("re").search(pattern, message), message
    if line is not None:
        assert error.line == line and f"line {line}" in message, message
    if column is not None:
        assert error.column == column, message
    extra = [] if fmt == "auto" else ["--format", fmt]
    if "encoding" in options:
        extra += ["--encoding", options["encoding"]]
    result = cli_inspect(path, *extra)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().startswith("dpdesk: error:") and path.name in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    return message


def test_empty_file(tmp_path):
    path = tmp_path / "empty.csv"
    path.write_bytes(b"")
    check(path, "empty")
    blank = tmp_path / "blank.dat"
    blank.write_bytes(b"\n \n")
    check(blank, "empty")


def test_binary_garbage(tmp_path):
    path = tmp_path / "garbage.dat"
    path.write_bytes(bytes(range(256)) * 20)
    check(path, "binary")


def test_undecodable_text(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_bytes(b"person,item\nanna,apple\nbob,caf\xe9\n")  # Latin-1 'é' in a file declared UTF-8
    check(path, "cannot be decoded as utf-8", line=3, column=8, encoding="utf-8")
    c1 = tmp_path / "c1.csv"
    c1.write_bytes(b"person,item\nanna,\x9d\x81x\n")  # neither valid UTF-8 nor Latin-1 text
    check(c1, "cannot be decoded", line=2, column=6)


def test_csv_with_only_a_header(tmp_path):
    path = tmp_path / "header.csv"
    path.write_text("person,item\n")
    check(path, "no data lines", fmt="pairs", header=True)


def test_ragged_wide_matrix(tmp_path):
    path = tmp_path / "ragged.csv"
    path.write_text("id,a,b,c\n1,0,1,1\n2,1,0\n3,0,0,1\n")
    check(path, "fields", line=3, fmt="matrix")
    longer = tmp_path / "longer.csv"
    longer.write_text("id,a,b,c\n1,0,1,1\n2,1,0,1,1\n")
    check(longer, "5 fields but the table has 4 columns", line=3, fmt="matrix")


def test_wide_matrix_value_not_zero_one(tmp_path):
    path = tmp_path / "values.csv"
    path.write_text("id,a,b,c\n1,0,1,1\n2,1,2,0\n")
    check(path, "'2' is not 0 or 1", line=3, column="b", fmt="matrix")


def test_pairs_missing_person_or_item(tmp_path):
    path = tmp_path / "pairs.csv"
    path.write_text("person,item\nanna,apple\n,pear\n")
    check(path, "person is missing", line=3, column="person", fmt="pairs")
    path2 = tmp_path / "pairs2.csv"
    path2.write_text("person,item\nanna,apple\n\nbob,\n")
    check(path2, "item is missing", line=4, column="item", fmt="pairs")


@pytest.mark.parametrize("value,what", [("-3", "negative"), ("2.5", "not a whole number"), ("many", "not a number")])
def test_cell_table_bad_count(tmp_path, value, what):
    path = tmp_path / "cells.csv"
    path.write_text(f"sex,region,count\nF,north,3\nM,south,{value}\n")
    check(path, what, line=3, column="count", fmt="cells")


def test_truncated_gzip(tmp_path, data_dir):
    whole = (data_dir / "chess.dat.gz").read_bytes()
    path = tmp_path / "cut.dat.gz"
    path.write_bytes(whole[: len(whole) // 2])
    check(path, "truncated")


def test_directory_given_as_file(tmp_path):
    folder = tmp_path / "adir"
    folder.mkdir()
    with pytest.raises(DataError, match="folder"):
        dpdesk.load(folder)
    result = cli_inspect(folder)
    assert result.returncode == 2 and "folder" in result.stderr and "Traceback" not in result.stderr


def test_missing_file(tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        dpdesk.load(tmp_path / "nope.csv")


def test_unreadable_file(tmp_path, monkeypatch):
    path = tmp_path / "secret.csv"
    path.write_text("person,item\na,b\n")
    real_open = os.open

    def guarded(file, *args, **kwargs):  # files are opened with os.open (never blocking on a FIFO)
        if str(file) == str(path):
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(os, "open", guarded)
    with pytest.raises(DataError, match="permission"):
        dpdesk.load(path)
    monkeypatch.setattr(os, "open", real_open)
    if os.geteuid() != 0:  # root reads anything; the real check only works for other users
        path.chmod(0)
        result = cli_inspect(path)
        assert result.returncode == 2 and "permission" in result.stderr


def test_gzip_of_garbage_is_binary(tmp_path):
    path = tmp_path / "g.dat.gz"
    path.write_bytes(gzip.compress(b"\x00\x01\x02" * 100))
    check(path, "binary")


def test_a_value_with_a_line_end_is_shown_escaped_on_one_line(tmp_path):
    path = tmp_path / "m.csv"
    path.write_text('id,a,b\n1,"0\n1",1\n2,0,1\n')  # a quoted field holding a line end
    message = check(path, r"the value '0\\n1' is not 0 or 1", line=2, column="a", fmt="matrix")
    assert "\n" not in message


def test_a_given_delimiter_that_splits_no_line_is_refused_when_the_lines_are_lists(tmp_path):
    """Found by an outsider: `--delimiter ,` on a semicolon file read every basket as one item,
    and `--items from-data --items-are-public` then published whole baskets as item labels."""
    semi = tmp_path / "semi.csv"
    semi.write_text("citrus fruit;margarine;ready soups\ntropical fruit;yogurt\nwhole milk\npip fruit;soda\n")
    with pytest.raises(DataError, match="no line is split by the delimiter given .* most lines hold a semicolon"):
        dpdesk.load(semi, delimiter=",")
    assert dpdesk.load(semi, delimiter=";").n_items == 8 and dpdesk.load(semi).n_items == 8
    single = tmp_path / "single.csv"
    single.write_text("whole milk\nyogurt\nsoda\n")  # one item a person is a file like any other
    assert dpdesk.load(single, delimiter=",").n_items == 3
