"""Safe export: atomic writes (SIGKILL during a write), no silent overwrite, no exploration
results, and the three release formats with their public metadata."""

import json
import os
import random
import signal
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dpdesk
from dpdesk import cli
from dpdesk.errors import ExportError
from dpdesk.privacy.ledger import Ledger
from dpdesk.report.export import render_release, require_release, sha256_bytes, write_files
from dpdesk.report.public import public_report_html
from dpdesk.workflow import release_to_files
from tests.privacy.test_ledger import python_process, read_until, small_data

@pytest.fixture
def data():
    return small_data("shop", seed=5, rows=80, items=12, prefix="item ")


# -- atomicity ---------------------------------------------------------------------------------------
def test_kill_while_writing_leaves_no_file_under_the_final_name(tmp_path):
    """Killed after the content is written to the temporary file but before the rename."""
    target = tmp_path / "release.csv"
    process = python_process(f"""
        import os, time
        from dpdesk.report import export

        real_fsync = os.fsync

        def fsync_then_hang(fd):
            real_fsync(fd)
            print("written", flush=True)
            time.sleep(120)

        export.os.fsync = fsync_then_hang
        export.write_files({{{str(target)!r}: b"x" * 1_000_000}})
    """)
    read_until(process, "written")
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    assert not target.exists()
    leftovers = list(tmp_path.iterdir())
    assert len(leftovers) == 1 and leftovers[0].name.startswith(".release.csv.") and leftovers[0].suffix == ".part"
    # the next write is unaffected by the leftover temporary file
    assert write_files({target: b"complete"}) == [target] and target.read_bytes() == b"complete"


def test_kill_at_random_moments_never_leaves_a_partial_file(tmp_path):
    """A process rewrites an 8 MB file over and over (each version one repeated byte) and is
    killed at random moments: the final name always holds one complete version."""
    target = tmp_path / "release.parquet"
    size = 8 << 20
    timing = random.Random(77)
    for _ in range(2):
        process = python_process(f"""
            from dpdesk.report.export import write_files

            for k in range(1_000_000):
                write_files({{{str(target)!r}: bytes([k % 251]) * {size}}}, force=True)
                print("version", flush=True)
        """)
        read_until(process, "version")
        time.sleep(timing.uniform(0.0, 0.3))
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        content = target.read_bytes()
        assert len(content) == size and content.count(content[:1]) == size


def test_a_batch_renames_only_after_every_file_is_written(tmp_path, monkeypatch):
    from dpdesk.report import export

    calls = []
    real_replace = os.replace
    monkeypatch.setattr(export.os, "replace", lambda a, b: (calls.append(Path(b).name), real_replace(a, b)))
    real_write = export.tempfile.NamedTemporaryFile

    def fail_on_second(*args, **kwargs):
        if kwargs.get("prefix", "").startswith(".b."):
            raise OSError(28, "No space left on device")
        return real_write(*args, **kwargs)

    monkeypatch.setattr(export.tempfile, "NamedTemporaryFile", fail_on_second)
    with pytest.raises(ExportError, match="No space left"):
        write_files({tmp_path / "a": b"1", tmp_path / "b": b"2"})
    assert calls == [] and list(tmp_path.iterdir()) == []  # nothing renamed, temporaries removed


# -- overwrite refusal ---------------------------------------------------------------------------------
def test_existing_files_are_never_overwritten_without_consent(tmp_path):
    target = tmp_path / "release.json"
    write_files({target: b"first"})
    with pytest.raises(ExportError, match="already exists.*--force"):
        write_files({target: b"second"})
    assert target.read_bytes() == b"first"
    write_files({target: b"second"}, force=True)
    assert target.read_bytes() == b"second"


def test_cli_release_refuses_to_overwrite_before_spending_budget(dpdesk_home, tmp_path, data, capsys):
    rows, cols = data.matrix.nonzero()
    csv = tmp_path / "data.csv"
    csv.write_text("person,item\n" + "".join(f"p{r},{data.item_labels[c]}\n" for r, c in zip(rows, cols)))
    out = tmp_path / "out"
    args = ["release", str(csv), "--mechanism", "lpa", "--epsilon", "0.3", "--bound", "4", "--out", str(out),
            "--items", "from-data", "--items-are-public"]
    assert cli.main(args) == 0
    first = (out / "release.csv").read_bytes()
    capsys.readouterr()
    assert cli.main(args) == 2
    assert "already exists" in capsys.readouterr().err
    assert (out / "release.csv").read_bytes() == first
    assert len(Ledger.open().entries(kinds=("release",))) == 1  # refused before the ledger and any noise
    assert cli.main(args + ["--force"]) == 0
    entries = Ledger.open().entries(kinds=("release",))
    assert len(entries) == 2
    assert entries[-1].files["release.csv"] == sha256_bytes((out / "release.csv").read_bytes())


# -- exploration refusal ------------------------------------------------------------------------------
def test_exploration_results_cannot_be_exported(data, tmp_path):
    seeded = dpdesk.release(data, "lpa", epsilon=1.0, bound=4, rng=42)
    assert seeded.exploration
    for attempt in (lambda: require_release(seeded), lambda: render_release(seeded, ("csv", "json", "parquet")),
                    lambda: public_report_html(seeded, {})):
        with pytest.raises(ExportError, match="exploration mode"):
            attempt()
    assert list(tmp_path.iterdir()) == []


def test_the_workflow_always_releases_with_secure_randomness(dpdesk_home, data, tmp_path, monkeypatch):
    """Even if someone asks the API for a seeded run inside the workflow, the files come from a secure one."""
    from dpdesk import workflow

    seen = []
    real_run = workflow.run

    def spy(*args, **kwargs):
        result = real_run(*args, **kwargs)
        seen.append((kwargs.get("rng"), result.exploration, result.randomness))
        return result

    monkeypatch.setattr(workflow, "run", spy)
    release_to_files(data, "lpa", 0.5, {"bound": 4}, tmp_path / "out")
    assert seen == [(None, False, "operating system CSPRNG (os.urandom / getrandom)")]
    metadata = json.loads((tmp_path / "out" / "release.json").read_text())
    assert metadata["mode"] == "release" and "CSPRNG" in metadata["randomness"]


# -- formats ---------------------------------------------------------------------------------------------
def test_csv_parquet_and_json_hold_the_same_release_and_public_metadata(dpdesk_home, data, tmp_path):
    out = tmp_path / "out"
    paths = release_to_files(data, "lpa", 0.5, {"bound": 4, "bound_holds": True}, out, formats=("csv", "parquet", "json"),
                             chosen_how="on public stand-in data before seeing any result")
    assert [p.name for p in paths] == ["release.csv", "release.parquet", "release.json"]
    csv = pd.read_csv(out / "release.csv", dtype={"item": str})
    parquet = pd.read_parquet(out / "release.parquet")
    metadata = json.loads((out / "release.json").read_text(encoding="utf-8"))
    from_json = pd.DataFrame(metadata["values"])
    for table in (csv, parquet, from_json):
        assert list(table["item"]) == [f"item {j}" for j in range(12)]
        assert np.array_equal(table["noisy_count"].to_numpy(), csv["noisy_count"].to_numpy())
    assert metadata["epsilon"] == 0.5 and metadata["mechanism"]["id"] == "lpa"
    assert metadata["budget"] == [{"step": "noisy counts", "epsilon": 0.5, "share": 1.0,
                                   "description": "noise of scale Δ'/ε_c = 8 on every count, where Δ' = min(Δ, d) = 4 "
                                                  "and ε_c = 0.5 is this step's ε"}]
    assert metadata["parameters"]["bound"] == 4 and metadata["dataset"] == {"name": "shop"}
    assert metadata["files_sha256"] == {"release.csv": sha256_bytes((out / "release.csv").read_bytes()),
                                        "release.parquet": sha256_bytes((out / "release.parquet").read_bytes())}
    assert "fingerprint" not in json.dumps(metadata)
    import pyarrow.parquet as pq

    embedded = json.loads(pq.read_schema(out / "release.parquet").metadata[b"dpdesk.release"])
    assert embedded == {k: v for k, v in metadata.items()
                        if k not in ("values", "files_sha256", "ledger", "dataset_budget")}
    entry = Ledger.open().entries()[-1]
    # the data files' hashes are in the entry (with those of the raw values' files, for `export --raw`);
    # release.json carries the entry's own hash instead, and the dataset's total as of the entry
    assert set(entry.files) == {"release.csv", "release.parquet", "raw/release.csv", "raw/release.parquet"}
    assert metadata["ledger"] == {"entry": entry.id, "entry_hash": entry.hash, "ledger": Ledger.open().ledger_id()}
    assert metadata["dataset_budget"] == {"dataset": "shop", "epsilon_spent": 0.5, "delta_spent": 0.0,
                                          "releases": 1, "cap": 3.0}
    assert list(csv.columns) == ["item", "noisy_count", "margin95"]
    assert metadata["columns"]["margin95"].startswith("The margin of error of the value in the same row")
    report = public_report_html(_release_with_report(metadata), entry.files)
    assert "on public stand-in data before seeing any result" in report


def _release_with_report(metadata):
    """A stand-in Release carrying a public report as read back from release.json."""
    from dpdesk.mechanisms.base import Release
    from dpdesk.privacy.budget import BudgetSplit

    budget = BudgetSplit(metadata["epsilon"])
    for step in metadata["budget"]:
        budget.add(step["step"], step["epsilon"], step["description"])
    return Release(mechanism=metadata["mechanism"]["id"], epsilon=metadata["epsilon"], budget=budget,
                   params=metadata["parameters"], exploration=False, dataset_name=metadata["dataset"]["name"],
                   created=metadata["created"], report={k: v for k, v in metadata.items() if k != "values"})


def test_unknown_formats_and_reports_are_refused_before_anything_happens(dpdesk_home, data, tmp_path, monkeypatch):
    from dpdesk.errors import ParameterError
    from dpdesk.privacy.randomness import SecureRandom

    def no_randomness(self, count):
        raise AssertionError("noise was drawn")

    monkeypatch.setattr(SecureRandom, "words", no_randomness)
    with pytest.raises(ParameterError, match="xlsx"):
        release_to_files(data, "lpa", 0.5, {"bound": 4}, tmp_path / "a", formats=("csv", "xlsx"))
    with pytest.raises(ParameterError, match="docx"):
        release_to_files(data, "lpa", 0.5, {"bound": 4}, tmp_path / "b", reports=("docx",))
    with pytest.raises(ParameterError):
        release_to_files(data, "lpa", 0.5, {"bound": 4}, tmp_path / "c", formats=())
    assert Ledger.open().entries(kinds=("release",)) == []
    assert not any((tmp_path / name).exists() for name in "abc")


def test_release_json_writes_one_row_a_line_and_the_same_json_value():
    import json

    from dpdesk.report.export import _json_with_one_value_a_line

    tricky = 'a label that says "values": []'
    metadata = {"mechanism": "lpa", tricky: 1, "values": [{"item": "aé", "noisy_count": 3}, {"item": tricky,
                "noisy_count": 0}], "after": {"x": [1, 2]}}
    text = _json_with_one_value_a_line(metadata)
    assert json.loads(text) == metadata
    assert '    {"item": "aé", "noisy_count": 3},\n' in text  # one published row a line
    assert json.loads(_json_with_one_value_a_line({**metadata, "values": []})) == {**metadata, "values": []}
