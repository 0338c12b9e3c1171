"""Exports that are whole or absent, and budget never spent for nothing (issue 14, Export).

* The output folder is checked (a folder, writable, no clashing files) and locked against
  another release to it *before* any noise is drawn: a refusal spends nothing.
* Files are staged outside the public folder and moved in at the end; the internal report
  never goes into it; stale staging and temporaries are cleared.
* A failure after the ledger entry says the ε was spent and how to write the files again.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from dpdesk import cli
from dpdesk.errors import ExportError
from dpdesk.privacy.ledger import Ledger
from dpdesk.privacy.randomness import SecureRandom
from dpdesk.workflow import STAGING_PREFIX, prepare_export, release_to_files
from tests.privacy.test_ledger import python_process, read_until, small_data, write_csv

PUBLIC = ["--items", "from-data", "--items-are-public"]


@pytest.fixture
def data():
    return small_data("shop", seed=5, rows=80, items=12, prefix="item ")


def spent(dataset="shop") -> float:
    return Ledger.open().status(dataset).spent


@pytest.mark.parametrize("where", ["a file", "under a file", "unwritable"])
def test_a_bad_output_place_is_refused_before_any_noise(where, data, tmp_path, dpdesk_home, monkeypatch, capsys):
    (tmp_path / "file").write_text("x")
    out = {"a file": tmp_path / "file", "under a file": tmp_path / "file" / "out",
           "unwritable": tmp_path / "locked" / "out"}[where]
    if where == "unwritable":
        (tmp_path / "locked").mkdir()
        (tmp_path / "locked").chmod(0o500)
        if os.access(tmp_path / "locked", os.W_OK):  # root writes anywhere: pretend it cannot, there
            import dpdesk.workflow as workflow

            real_mkdtemp = workflow.tempfile.mkdtemp

            def mkdtemp(*args, dir=None, **kwargs):
                if "locked" in str(dir):
                    raise PermissionError(13, "Permission denied")
                return real_mkdtemp(*args, dir=dir, **kwargs)

            monkeypatch.setattr(workflow.tempfile, "mkdtemp", mkdtemp)
    drawn = []
    monkeypatch.setattr(SecureRandom, "words", lambda self, count: drawn.append(count))
    with pytest.raises(ExportError, match="No noise was drawn"):
        release_to_files(data, "lpa", 0.5, {"bound": 3}, out)
    assert drawn == [] and spent() == 0
    csv = write_csv(tmp_path / "shop.csv", data.origin)
    assert cli.main(["release", str(csv), "--mechanism", "lpa", "--epsilon", "0.5", "--bound", "3", *PUBLIC,
                     "--out", str(out)]) == 2
    assert "No noise was drawn" in capsys.readouterr().err and drawn == [] and spent() == 0


def test_concurrent_releases_to_one_folder_spend_only_for_the_one_written(data, tmp_path, dpdesk_home):
    """Eight releases race for one folder: one writes it, seven are refused before any noise
    (before, all eight spent ε and seven wrote nothing)."""
    out = tmp_path / "out"
    results = []
    barrier = threading.Barrier(8)

    def release():
        barrier.wait()
        try:
            release_to_files(data, "lpa", 0.1, {"bound": 3}, out, formats=("csv", "json", "parquet"))
            results.append("written")
        except ExportError as error:
            results.append(str(error))
        except Exception as error:  # any other failure fails the test below (a thread's exception would not)
            results.append(f"unexpected {error!r}")

    threads = [threading.Thread(target=release) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 8 and results.count("written") == 1, results
    assert all("No noise was drawn" in r for r in results if r != "written")
    entries = Ledger.open().entries(kinds=("release",))
    assert len(entries) == 1 and spent() == pytest.approx(0.1)
    assert sorted(p.name for p in out.iterdir()) == ["release.csv", "release.json", "release.parquet"]


def test_a_failure_after_recording_says_how_to_write_the_files(data, tmp_path, dpdesk_home, monkeypatch,
                                                               capsys):
    import dpdesk.workflow as workflow

    csv = write_csv(tmp_path / "shop.csv", data.origin)
    with monkeypatch.context() as patched:
        patched.setattr(workflow, "write_export", lambda target, files: (_ for _ in ()).throw(
            ExportError("Cannot write the release files: No space left on device.")))
        assert cli.main(["release", str(csv), "--mechanism", "lpa", "--epsilon", "0.5", "--bound", "3", *PUBLIC,
                         "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    entry = Ledger.open().entries(kinds=("release",))[-1]
    assert "No space left" in err and "ε was recorded as spent" in err
    assert f"dpdesk export --entry {entry.id} --out" in err
    assert cli.main(["export", "--entry", str(entry.id), "--out", str(tmp_path / "out")]) == 0
    assert json.loads((tmp_path / "out" / "release.json").read_text())["ledger"]["entry"] == entry.id


def test_force_leaves_no_foreign_file(data, tmp_path, dpdesk_home):
    out = tmp_path / "out"
    out.mkdir()
    # temporaries an earlier dpdesk left in the folder, and a staging folder of a crashed export
    (out / ".release.csv.abc123.part").write_text("half")
    (out / ".internal-report-NOT-FOR-PUBLICATION.html.x1.part").write_text("true counts")
    stale = tmp_path / f"{STAGING_PREFIX}out-k3j2"
    stale.mkdir()
    (stale / "release.csv").write_text("half")
    (out / "release.csv").write_text("old")
    release_to_files(data, "lpa", 0.5, {"bound": 3}, out, force=True, internal_report=True)
    assert sorted(p.name for p in out.iterdir()) == ["release.csv", "release.json"]
    assert not stale.exists()
    assert not list(tmp_path.glob(f"{STAGING_PREFIX}*"))


def test_the_output_folder_is_locked_for_the_whole_release(data, tmp_path, dpdesk_home):
    with prepare_export(tmp_path / "out", ["release.csv"]):
        with pytest.raises(ExportError, match="Another release is being written"):
            prepare_export(tmp_path / "out", ["release.csv"])
    prepare_export(tmp_path / "out", ["release.csv"]).close()  # free again


@pytest.mark.parametrize("point", ["after recording", "while staging", "staged, before moving in",
                                   "an empty folder, before moving in"])
def test_kill_at_each_point_of_an_export(point, data, tmp_path, dpdesk_home):
    """SIGKILL after the ledger entry, while staging, and just before the files move in: the
    public folder is absent (never partial), nothing half-written, temporary or internal is in
    it, and the recorded release can always be written again with `dpdesk export --entry N`."""
    csv = write_csv(tmp_path / "shop.csv", data.origin)
    out = tmp_path / "published" / "out"
    if point.startswith("an empty folder"):
        out.mkdir(parents=True)
    hooks = {
        "after recording": "workflow.write_export = hang",
        "while staging": "real_fsync = os.fsync\n"
                         "os.fsync = lambda fd: hang() if 'staging' in os.readlink(f'/proc/self/fd/{fd}') "
                         "else real_fsync(fd)",
        "staged, before moving in": "workflow._fsync_dir = lambda folder: hang() if 'staging' in str(folder) "
                                    "else None",
    }
    hooks["an empty folder, before moving in"] = hooks["staged, before moving in"]
    process = python_process(f"""
        import os, time
        import dpdesk.workflow as workflow
        from dpdesk import cli

        def hang(*args, **kwargs):
            print("hanging", flush=True)
            time.sleep(120)

        exec({hooks[point]!r})
        cli.main(["release", {str(csv)!r}, "--mechanism", "lpa", "--epsilon", "0.2", "--bound", "3",
                  "--items", "from-data", "--items-are-public", "--report", "html", "--internal-report",
                  "--formats", "csv,json,parquet", "--out", {str(out)!r}])
    """, dpdesk_home)
    read_until(process, "hanging")
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    assert not out.exists() or sorted(p.name for p in out.iterdir()) == []  # absent: never partial
    assert not list(out.parent.rglob("*NOT-FOR-PUBLICATION*"))
    ledger = Ledger.open()
    assert ledger.verify() is None
    (entry,) = ledger.entries(kinds=("release",))
    assert cli.main(["export", "--entry", str(entry.id), "--out", str(out), "--formats", "csv,json,parquet",
                     "--report", "html"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["privacy-report.html", "release.csv", "release.json",
                                                     "release.parquet"]
    assert not list(out.parent.glob(f"{STAGING_PREFIX}*"))  # the crashed export's staging was cleared


# --- places that cannot take a file, found before any noise (an outsider's review) ---------------

def release_args(csv, out, *extra):
    return ["release", str(csv), "--mechanism", "lpa", "--epsilon", "0.5", "--bound", "3", *PUBLIC,
            "--out", str(out), *extra]


def test_an_internal_report_folder_that_is_a_file_is_refused_before_any_noise(data, tmp_path, dpdesk_home,
                                                                              capsys):
    """The internal report cannot be written again later (export writes public files only), so its
    folder is checked with the output folder — before, ε was spent and the public files written."""
    csv = write_csv(tmp_path / "shop.csv", data.origin)
    (tmp_path / "taken").write_text("a file")
    assert cli.main(release_args(csv, tmp_path / "out", "--internal-report", "--internal-out",
                                 str(tmp_path / "taken"))) == 2
    err = capsys.readouterr().err
    assert "is a file" in err and "No noise was drawn" in err and "Traceback" not in err
    assert spent() == 0 and not (tmp_path / "out").exists()


@pytest.mark.parametrize("where", ["proc", "long name"])
def test_a_folder_no_file_can_be_made_in_is_refused_before_any_noise(where, data, tmp_path, dpdesk_home, capsys):
    """Tried, not read from permission bits: root may write anywhere by the bits, yet not in /proc;
    a name too long for the file system was a traceback."""
    csv = write_csv(tmp_path / "shop.csv", data.origin)
    out = Path("/proc/dpdesk-out") if where == "proc" else tmp_path / ("x" * 300)
    assert cli.main(release_args(csv, out)) == 2
    err = capsys.readouterr().err
    assert "No noise was drawn" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert spent() == 0


def test_a_failed_reexport_does_not_advise_itself(data, tmp_path, dpdesk_home, capsys):
    csv = write_csv(tmp_path / "shop.csv", data.origin)
    assert cli.main(release_args(csv, tmp_path / "out")) == 0
    entry = Ledger.open().entries(kinds=("release",))[-1].id
    capsys.readouterr()
    assert cli.main(["export", "--entry", str(entry), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "already exists" in err and "dpdesk export --entry" not in err


def test_a_closed_output_pipe_after_a_release_is_not_a_failure(data, tmp_path, dpdesk_home):
    """`dpdesk release … | head -0`: the release is recorded and written; a failure status would
    make a script run it again and spend ε twice."""
    csv = write_csv(tmp_path / "shop.csv", data.origin)
    read, write = os.pipe()
    os.close(read)  # nobody will read what dpdesk prints
    run = subprocess.run([sys.executable, "-m", "dpdesk.cli", *release_args(csv, tmp_path / "out")], stdout=write,
                         stderr=subprocess.PIPE, text=True, timeout=300,
                         env={**os.environ, "DPDESK_HOME": str(dpdesk_home)})
    os.close(write)
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr
    assert spent() == pytest.approx(0.5) and (tmp_path / "out" / "release.csv").exists()


def test_convert_into_a_place_that_takes_no_file_is_one_line(data, tmp_path, dpdesk_home, capsys):
    csv = write_csv(tmp_path / "shop.csv", data.origin)
    for out in ("/proc/dpdesk.parquet", str(tmp_path / ("y" * 300 + ".parquet"))):
        assert cli.main(["convert", str(csv), out]) == 2
        err = capsys.readouterr().err
        assert "Nothing was written" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("slip, says", [(["--out", ""], "output folder is empty"),
                                        (["--param", "bound=7"], "Δ is given twice"),
                                        (["--epsilon", "inf"], "finite number greater than 0")])
def test_slips_on_the_command_line_are_named_and_spend_nothing(slip, says, data, tmp_path, dpdesk_home, capsys,
                                                               monkeypatch):
    csv = write_csv(tmp_path / "shop.csv", data.origin)
    monkeypatch.chdir(tmp_path)
    args = release_args(csv, tmp_path / "out")
    if slip[0] in ("--out", "--epsilon"):
        args[args.index(slip[0]) + 1] = slip[1]
    else:
        args += slip
    with pytest.raises(SystemExit) if slip[0] == "--out" else contextlib.nullcontext():
        assert cli.main(args) == 2
    assert says in capsys.readouterr().err
    assert spent() == 0 and not (tmp_path / "release.csv").exists() and not (tmp_path / "out").exists()
