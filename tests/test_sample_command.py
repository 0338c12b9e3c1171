"""`dpdesk sample [DIR]`: the bundled sample dataset copied out where a steward can find it."""

from __future__ import annotations

import gzip

from dpdesk.cli import build_parser, main
from dpdesk.paths import sample_path


def test_sample_copies_the_dataset_and_its_description(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["sample"]) == 0   # default: the current folder
    copy = tmp_path / "groceries.csv.gz"
    assert copy.read_bytes() == sample_path().read_bytes()
    assert "Groceries" in (tmp_path / "SOURCE.md").read_text(encoding="utf-8")
    assert capsys.readouterr().out.split() == [str(copy), str(tmp_path / "SOURCE.md")]
    with gzip.open(copy, "rt", encoding="utf-8") as f:
        assert sum(1 for _ in f) == 9835
    # the copy is an ordinary data file for the other commands
    assert main(["inspect", "--json", str(copy)]) == 0
    assert '"rows": 9835' in capsys.readouterr().out


def test_sample_into_a_new_folder_and_never_over_a_file_without_force(tmp_path, capsys):
    folder = tmp_path / "new" / "folder"
    assert main(["sample", str(folder)]) == 0
    (folder / "groceries.csv.gz").write_bytes(b"my own work")
    capsys.readouterr()
    assert main(["sample", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "already exists; use --force" in err
    assert (folder / "groceries.csv.gz").read_bytes() == b"my own work"
    assert main(["sample", str(folder), "--force"]) == 0
    assert (folder / "groceries.csv.gz").read_bytes() == sample_path().read_bytes()


def test_sample_into_a_file_is_one_line_error(tmp_path, capsys):
    target = tmp_path / "a-file"
    target.write_text("x")
    assert main(["sample", str(target)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is a file, not a folder" in err


def test_help_says_where_the_sample_is():
    text = build_parser().format_help()
    assert "dpdesk sample" in text and "sample" in text.split("positional arguments")[1]
