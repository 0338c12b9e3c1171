"""The budget ledger: budgets per declared dataset with a default cap, caps and overrides in
the chain, tamper evidence (edits, deletions, an emptied, deleted or rewound ledger), exports
checked against the ledger, crash consistency (SIGKILL of a real release process),
concurrency, and the CLI."""

import json
import math
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import dpdesk
from dpdesk import cli
from dpdesk.errors import BudgetError, LedgerError, ParameterError
from dpdesk.mechanisms.counts import LPA
from dpdesk.privacy.ledger import DEFAULT_CAP, GENESIS_HASH, HEAD_FILE, Ledger, entry_hash
from dpdesk.privacy.randomness import SecureRandom
from dpdesk.report.export import sha256_bytes, verify_export
from dpdesk.workflow import release_to_files

from tests.secure_run import secure_run

REPO = Path(__file__).resolve().parents[2]
HASH = "ab" * 32
PUBLIC = ["--items", "from-data", "--items-are-public"]


def small_data(name="small", seed=0, rows=60, items=8, prefix="i"):
    """Random 0/1 data in which every person and every item appears (so a pairs CSV of it
    reads back as the same dataset, with the same fingerprint), with its labels declared public."""
    rng = np.random.default_rng(seed)
    dense = rng.random((rows, items)) < 0.3
    dense[np.arange(rows), np.arange(rows) % items] = True
    data = dpdesk.from_matrix(sp.csr_matrix(dense.astype(np.int64)), [f"{prefix}{j}" for j in range(items)],
                              name=name)
    return dpdesk.declare(data, "from-data", items_are_public=True)


def secure_release(data, epsilon=0.25, bound=3, dataset=None):
    release = secure_run(data, "lpa", epsilon=epsilon, bound=bound)
    release.dataset_name = dataset or data.name
    return release


def record(ledger, data, epsilon=0.25, hashes=None, **options):
    return ledger.record(secure_release(data, epsilon), data.origin.fingerprint, hashes or {}, **options)


@pytest.fixture
def ledger(dpdesk_home):
    return Ledger.open()


@pytest.fixture
def data():
    return small_data()


def write_csv(path, data):
    """The dataset as a pairs CSV file the CLI can read (for subprocess and CLI tests)."""
    rows, cols = data.matrix.nonzero()
    lines = ["person,item"] + [f"p{r},{data.item_labels[c]}" for r, c in zip(rows, cols)]
    path.write_text("\n".join(lines) + "\n")
    return path


# -- location and format ---------------------------------------------------------------------------
def test_open_uses_dpdesk_home_starts_with_a_genesis_and_is_private(dpdesk_home):
    ledger = Ledger.open()
    assert ledger.path == dpdesk_home / "ledger.sqlite"
    assert (ledger.path.stat().st_mode & 0o077) == 0
    entries = ledger.entries()
    assert [e.kind for e in entries] == ["genesis"] and entries[0].prev_hash == GENESIS_HASH
    assert "first use" in entries[0].reason and entries[0].parameters["ledger"] == ledger.ledger_id()
    assert ledger.totals() == {} and ledger.verify() is None
    head = json.loads((dpdesk_home / HEAD_FILE).read_text())
    assert head["entries"] == 1 and head["hash"] == entries[0].hash and head["ledger"] == ledger.ledger_id()
    assert ledger.head() == (1, entries[0].hash)


def test_opening_listing_and_verifying_never_write(dpdesk_home, data, monkeypatch):
    """So a read-only ledger (a copy handed to an auditor) can be listed and verified."""
    ledger = Ledger.open()
    record(ledger, data)
    before = ledger.path.read_bytes()

    def no_writes(self):
        raise AssertionError("a write transaction was opened")

    monkeypatch.setattr(Ledger, "_transaction", no_writes)
    again = Ledger.open()
    assert len(again.entries()) == 2 and again.verify() is None and again.totals()
    assert ledger.path.read_bytes() == before


def test_a_newer_or_older_ledger_format_is_refused(dpdesk_home):
    ledger = Ledger.open()
    with sqlite3.connect(ledger.path) as conn:
        conn.execute("PRAGMA user_version = 99")
    with pytest.raises(LedgerError, match="newer dpdesk"):
        Ledger.open()
    with sqlite3.connect(ledger.path) as conn:
        conn.execute("PRAGMA user_version = 1")
    with pytest.raises(LedgerError, match="earlier dpdesk.*ledger new"):
        Ledger.open()


def test_a_file_that_is_not_a_ledger_is_refused(tmp_path):
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE people (name TEXT)")
    with pytest.raises(LedgerError, match="not a dpdesk budget ledger"):
        Ledger.open(other)
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"this is not a database at all" * 100)
    with pytest.raises(LedgerError):
        Ledger.open(garbage)


@pytest.mark.parametrize("setup", ["read-only folder", "a file", "under a file"])
def test_an_unusable_dpdesk_home_is_a_clear_error(tmp_path, monkeypatch, setup, capsys):
    if setup == "read-only folder":
        if os.geteuid() == 0:
            pytest.skip("root writes into read-only folders")
        home = tmp_path / "ro"
        home.mkdir()
        home.chmod(0o500)
    elif setup == "a file":
        home = tmp_path / "file"
        home.write_text("x")
    else:
        (tmp_path / "file").write_text("x")
        home = tmp_path / "file" / "home"
    monkeypatch.setenv("DPDESK_HOME", str(home))
    assert cli.main(["ledger", "verify"]) == 2
    err = capsys.readouterr().err
    assert "DPDESK_HOME" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


# -- recording and totals ----------------------------------------------------------------------------
def test_record_stores_every_field_and_chains(ledger, data):
    release = secure_release(data, epsilon=0.25)
    first = ledger.record(release, data.origin.fingerprint, {"release.csv": HASH})
    genesis = ledger.entries()[0]
    assert first.id == 2 and first.prev_hash == genesis.hash and first.kind == "release"
    assert first.fingerprint == data.origin.fingerprint and first.dataset == "small"
    assert first.mechanism == "lpa" and first.epsilon == 0.25 and first.delta == 0.0
    assert first.parameters == {"bound": 3, "noise": "geometric", "clamp": False, "margin_share": 0.05,
                                "bound_holds": False}
    assert first.budget == release.budget.as_list()
    assert first.files == {"release.csv": HASH}
    assert first.software == f"dpdesk {dpdesk.__version__}" and first.time == release.created
    assert first.cap == DEFAULT_CAP and first.overrides == []
    kept = first.release_record()  # the released values, for re-export
    assert kept["values"] == np.asarray(release.values).tolist() and kept["labels"] == list(data.item_labels)
    second = record(ledger, data)
    assert second.id == 3 and second.prev_hash == first.hash
    assert ledger.head() == (3, second.hash)
    public = second.public_dict()
    assert json.loads(json.dumps(public)) == public  # plain JSON
    assert set(public) >= {"id", "time", "kind", "dataset", "fingerprint", "mechanism", "parameters", "epsilon",
                           "delta", "budget", "software", "files_sha256", "cap", "overrides", "prev_hash", "hash"}


def test_budgets_add_up_per_declared_dataset_not_per_file_content(ledger):
    """C3: the same people with one row changed are the same dataset (the old ledger keyed
    budgets by the exact content fingerprint, so a changed row started from zero)."""
    a = small_data("clinic", seed=1)
    changed = small_data("clinic", seed=1, rows=61)  # one more person
    assert a.origin.fingerprint != changed.origin.fingerprint
    for dataset, epsilon in ((a, 0.1), (a, 0.2), (changed, 0.3)):
        record(ledger, dataset, epsilon)
    b = small_data("survey", seed=2)
    record(ledger, b, 0.7)
    totals = ledger.totals()
    assert totals["clinic"].spent == pytest.approx(0.6) and totals["clinic"].releases == 3
    assert totals["survey"].spent == pytest.approx(0.7)
    assert [e.epsilon for e in ledger.entries(dataset="clinic")] == [0.1, 0.2, 0.3]
    assert ledger.status("clinic").spent == pytest.approx(0.6)


def test_every_dataset_has_a_default_cap(ledger, data, tmp_path):
    """C3: there was no cap by default (three releases at ε = 10 all went through)."""
    assert ledger.status("anything").cap == DEFAULT_CAP == 3.0
    release_to_files(data, "lpa", 1.5, {"bound": 3}, tmp_path / "a", ledger=ledger)
    release_to_files(data, "lpa", 1.5, {"bound": 3}, tmp_path / "b", ledger=ledger)
    with pytest.raises(BudgetError, match="cap ε = 3"):
        release_to_files(data, "lpa", 0.01, {"bound": 3}, tmp_path / "c", ledger=ledger)
    assert not (tmp_path / "c").exists()


def test_the_same_data_under_another_name_is_refused_unless_overridden(ledger, tmp_path):
    data = small_data("clinic-2025")
    release_to_files(data, "lpa", 0.5, {"bound": 3}, tmp_path / "a", ledger=ledger)
    renamed = small_data("fresh-name")  # the very same content under a new name
    with pytest.raises(BudgetError, match="already released as dataset 'clinic-2025'.*No noise was drawn"):
        release_to_files(renamed, "lpa", 0.5, {"bound": 3}, tmp_path / "b", ledger=ledger)
    assert not (tmp_path / "b").exists()
    release_to_files(renamed, "lpa", 0.5, {"bound": 3}, tmp_path / "b", ledger=ledger, override_name=True)
    entry = ledger.entries()[-1]
    assert entry.dataset == "fresh-name" and entry.overrides == ["dataset name"]
    assert ledger.verify() is None


def test_record_refuses_exploration_and_mismatched_data(ledger, data):
    seeded = dpdesk.release(data, "lpa", epsilon=0.5, bound=3, rng=7)
    with pytest.raises(LedgerError, match="exploration"):
        ledger.record(seeded, data.origin.fingerprint, {})
    other = small_data("other", seed=9)
    with pytest.raises(LedgerError, match="different dataset"):
        ledger.record(secure_release(data), other.origin.fingerprint, {})
    assert [e.kind for e in ledger.entries()] == ["genesis"]


# -- caps ----------------------------------------------------------------------------------------------
def test_cap_refuses_and_allows_up_to_the_cap(ledger, data):
    ledger.set_cap("small", 0.3, "policy: 0.3 a year")
    record(ledger, data, 0.1)
    record(ledger, data, 0.2)  # 0.1 + 0.2 = 0.30000000000000004 still fits 0.3
    with pytest.raises(BudgetError) as refused:
        ledger.check("small", 0.01)
    message = str(refused.value)
    assert "0.3" in message and "No noise was drawn" in message and "override" in message
    assert ledger.totals()["small"].cap == 0.3


def test_cap_changes_are_entries_of_the_chain_with_their_reason(ledger, data):
    cap = ledger.set_cap("small", 1.0, "board decision of 3 May")
    assert cap.kind == "cap" and cap.cap == 1.0 and cap.reason == "board decision of 3 May"
    assert ledger.status("small").cap == 1.0
    with pytest.raises(ParameterError, match="reason"):
        ledger.set_cap("small", 2.0, "  ")
    for bad in (-1, float("nan"), float("inf"), "lots"):
        with pytest.raises(ParameterError):
            ledger.set_cap("small", bad, "r")
    with pytest.raises(ParameterError):
        ledger.set_cap("", 1.0, "r")
    ledger.set_cap("small", None, "no cap for this open data")
    assert ledger.status("small").cap is None
    assert [e.kind for e in ledger.entries()] == ["genesis", "cap", "cap"] and ledger.verify() is None


def test_cap_refusal_happens_before_any_random_draw(ledger, data, tmp_path, monkeypatch):
    ledger.set_cap("small", 0.5, "test")
    record(ledger, data, 0.4)
    calls = []

    def no_randomness(self, count):
        calls.append(count)
        raise AssertionError("a random word was drawn")

    def no_run(*args, **kwargs):
        calls.append("run")
        raise AssertionError("the mechanism ran")

    monkeypatch.setattr(SecureRandom, "words", no_randomness)
    monkeypatch.setattr(LPA, "run", no_run)
    with pytest.raises(BudgetError):
        release_to_files(data, "lpa", 0.2, {"bound": 3}, tmp_path / "out", ledger=ledger)
    assert calls == []
    assert not (tmp_path / "out").exists()
    assert len(ledger.entries()) == 3
    # the CLI takes the same path, and refuses before it even reads the file
    csv = write_csv(tmp_path / "data.csv", data.origin)
    monkeypatch.setattr(Ledger, "open", classmethod(lambda cls, path=None: ledger))
    monkeypatch.setattr(dpdesk.data.loader, "open_source", lambda *a, **k: calls.append("read"))
    status = cli.main(["release", str(csv), "--mechanism", "lpa", "--epsilon", "0.2", "--bound", "3",
                       "--dataset", "small", *PUBLIC, "--out", str(tmp_path / "cli-out")])
    assert status == 2 and calls == []
    assert not (tmp_path / "cli-out").exists()


def test_override_is_recorded(ledger, data, tmp_path):
    ledger.set_cap("small", 0.5, "test")
    within = record(ledger, data, 0.3, override=True)
    assert within.cap == 0.5 and within.cap_overridden is False  # nothing was overridden
    with pytest.raises(BudgetError):
        release_to_files(data, "lpa", 0.3, {"bound": 3}, tmp_path / "refused", ledger=ledger)
    paths = release_to_files(data, "lpa", 0.3, {"bound": 3}, tmp_path / "over", ledger=ledger, override_cap=True)
    assert [p.name for p in paths] == ["release.csv", "release.json"]
    entry = ledger.entries()[-1]
    assert entry.cap_overridden is True and entry.cap == 0.5 and entry.epsilon == 0.3
    assert ledger.totals()["small"].spent == pytest.approx(0.6)
    assert ledger.verify() is None


def test_record_checks_the_cap_again_inside_its_transaction(ledger, data):
    ledger.set_cap("small", 0.5, "test")
    ledger.check("small", 0.3)  # passes now ...
    record(ledger, data, 0.3)  # ... but another release gets in first
    with pytest.raises(BudgetError, match="Nothing was released or recorded"):
        record(ledger, data, 0.3)
    assert len(ledger.entries()) == 3


def test_a_charged_refusal_is_recorded_as_spent(ledger, data):
    from dpdesk.privacy.budget import BudgetSplit

    entry = ledger.record_charged("small", data.origin.fingerprint, "filter", {},
                                  BudgetSplit.single(0.05, "estimate n"), "the estimate was too large")
    assert entry.kind == "charged" and entry.epsilon == 0.05
    assert ledger.status("small").spent == pytest.approx(0.05)


# -- tamper evidence ------------------------------------------------------------------------------------
def sqlite3_cli(database: Path, statement: str) -> None:
    tool = shutil.which("sqlite3")
    if tool is None:
        pytest.fail("The sqlite3 command-line tool is missing; install it (scripts/system-deps.sh test, "
                    "or apt-get install sqlite3). This test edits the ledger with it.")
    subprocess.run([tool, str(database), statement], check=True, capture_output=True, text=True)


@pytest.fixture
def five_entries(ledger, data):
    ledger.set_cap("small", 2.0, "test")  # entry 2
    for k in range(3):  # entries 3..5
        record(ledger, data, 0.1 + k / 100, {"release.csv": HASH})
    assert ledger.verify() is None and ledger.head()[0] == 5
    return ledger


@pytest.mark.parametrize("statement, broken, reason", [
    ("UPDATE entries SET epsilon = 0.001 WHERE id = 3", 3, "does not match its hash"),
    ("UPDATE entries SET cap = 100 WHERE kind = 'cap'", 2, "does not match its hash"),
    ("UPDATE entries SET overrides = '[\"cap\"]' WHERE id = 4", 4, "does not match its hash"),
    ("UPDATE entries SET files = '{}' WHERE id = 4", 4, "does not match its hash"),
    ("UPDATE entries SET dataset = 'x' WHERE id = 5", 5, "does not match its hash"),
    ("UPDATE entries SET payload = zeroblob(10) WHERE id = 3", 3, "does not match its hash"),
    ("DELETE FROM entries WHERE id = 2", 2, "missing"),
    ("DELETE FROM entries WHERE id = 5", 5, "deleted at the end"),
    ("UPDATE entries SET prev_hash = '" + "0" * 64 + "' WHERE id = 4", 4, "does not carry the hash"),
])
def test_tampering_with_the_sqlite3_tool_is_detected(five_entries, statement, broken, reason, capsys):
    sqlite3_cli(five_entries.path, statement)
    problem = five_entries.verify()
    assert problem is not None and problem.entry_id == broken and reason in problem.reason
    assert cli.main(["ledger", "verify"]) == 1
    assert f"entry #{broken}" in capsys.readouterr().err


def test_a_negative_epsilon_is_refused_by_the_schema_and_by_verify(five_entries):
    with sqlite3.connect(five_entries.path) as conn:
        conn.row_factory = sqlite3.Row
        row = dict(conn.execute("SELECT * FROM entries WHERE id = 5").fetchone())
        row.update(id=6, prev_hash=row["hash"], epsilon=-5.0)
        row["hash"] = entry_hash(row)
        columns = ", ".join(row)
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute(f"INSERT INTO entries ({columns}) VALUES ({', '.join('?' * len(row))})", list(row.values()))
        conn.execute("PRAGMA ignore_check_constraints = ON")
        conn.execute(f"INSERT INTO entries ({columns}) VALUES ({', '.join('?' * len(row))})", list(row.values()))
        conn.execute("UPDATE head SET last_id = 6, hash = ?", (row["hash"],))
    problem = five_entries.verify()
    assert problem.entry_id == 6 and "impossible budget" in problem.reason


def test_rebuilt_hash_still_breaks_the_chain(five_entries):
    """Editing a row and recomputing its hash moves the break to the next entry."""
    with sqlite3.connect(five_entries.path) as conn:
        conn.row_factory = sqlite3.Row
        row = dict(conn.execute("SELECT * FROM entries WHERE id = 3").fetchone())
        row["epsilon"] = 0.0001
        conn.execute("UPDATE entries SET epsilon = ?, hash = ? WHERE id = 3", (row["epsilon"], entry_hash(row)))
    problem = five_entries.verify()
    assert problem.entry_id == 4 and "does not carry the hash of entry #3" in problem.reason


def test_an_inserted_entry_is_detected(five_entries):
    with sqlite3.connect(five_entries.path) as conn:
        conn.row_factory = sqlite3.Row
        row = dict(conn.execute("SELECT * FROM entries WHERE id = 5").fetchone())
        row.update(id=6, prev_hash=row["hash"])
        row["hash"] = entry_hash(row)
        conn.execute(f"INSERT INTO entries ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", list(row.values()))
    problem = five_entries.verify()
    assert problem.entry_id == 6 and "outside dpdesk" in problem.reason


# The four ways to reset a ledger quietly (issue 14): each must be refused, not read as "intact".
def _empty_the_file(ledger):
    ledger.path.write_bytes(b"")


def _delete_the_file(ledger):
    ledger.path.unlink()


def _three_deletes(ledger):
    sqlite3_cli(ledger.path, "DELETE FROM entries; DELETE FROM head; DELETE FROM sqlite_sequence;")


def _rewind(ledger):
    sqlite3_cli(ledger.path, "DELETE FROM entries WHERE id = 5; UPDATE head SET last_id = 4, hash = "
                             "(SELECT hash FROM entries WHERE id = 4); UPDATE sqlite_sequence SET seq = 4;")


@pytest.mark.parametrize("reset, message", [
    (_empty_the_file, "missing or empty"),
    (_delete_the_file, "missing or empty"),
    (_three_deletes, "emptied"),
    (_rewind, "rewound"),
])
def test_a_reset_ledger_is_detected_and_refuses_releases(five_entries, data, tmp_path, reset, message, capsys):
    reset(five_entries)
    assert cli.main(["ledger", "verify"]) != 0
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    with pytest.raises(LedgerError, match=message):
        release_to_files(data, "lpa", 0.1, {"bound": 3}, tmp_path / "out", ledger=Ledger(five_entries.path))
    with pytest.raises(LedgerError):
        Ledger.open().check("small", 0.1)
    assert not (tmp_path / "out").exists()
    # starting over is an explicit, recorded act
    assert cli.main(["ledger", "new", "--reason", "restored machine, old ledger lost"]) == 0
    fresh = Ledger.open()
    genesis = fresh.entries()[0]
    assert genesis.reason == "restored machine, old ledger lost"
    assert genesis.parameters["replaces"]["entries"] == 5
    assert fresh.verify() is None and fresh.status("small").spent == 0


def test_the_head_file_remembers_a_crash_between_commit_and_head_update(five_entries, data):
    """The database one entry ahead of ledger.head is accepted (it extends what was remembered)."""
    head = (five_entries.head_path).read_text()
    record(five_entries, data, 0.1)
    five_entries.head_path.write_text(head)  # as if the process died before replacing the head file
    assert five_entries.verify() is None
    assert json.loads(five_entries.head_path.read_text())["entries"] == 6  # caught up


def test_a_damaged_or_foreign_head_file_is_refused(five_entries, data):
    five_entries.head_path.write_text("{not json")
    with pytest.raises(LedgerError, match="damaged"):
        five_entries.check("small", 0.1)
    five_entries.head_path.write_text(json.dumps({"ledger": "someone-else", "entries": 5, "hash": "x"}))
    assert "not the ledger dpdesk last used" in str(five_entries.verify())


def test_a_broken_ledger_refuses_releases(five_entries, data, tmp_path):
    sqlite3_cli(five_entries.path, "DELETE FROM entries WHERE id = 1")
    with pytest.raises(LedgerError, match="broken at entry #1"):
        five_entries.check("small", 0.1)
    with pytest.raises(LedgerError):
        record(five_entries, data)
    with pytest.raises(LedgerError):
        release_to_files(data, "lpa", 0.1, {"bound": 3}, tmp_path / "out", ledger=five_entries)
    assert not (tmp_path / "out").exists()


# -- exports carry their entry: a ledger is checked against what was published -------------------------
def test_exports_are_checked_against_the_ledger(dpdesk_home, data, tmp_path, capsys):
    ledger = Ledger.open()
    out = tmp_path / "published"
    release_to_files(data, "lpa", 0.2, {"bound": 3}, out, formats=("csv", "json"), ledger=ledger)
    reference = json.loads((out / "release.json").read_text())["ledger"]
    assert reference == {"entry": 2, "entry_hash": ledger.entries()[-1].hash, "ledger": ledger.ledger_id()}
    assert cli.main(["ledger", "verify", "--release", str(out)]) == 0
    assert "matches the ledger" in capsys.readouterr().out
    # someone deletes both the ledger and its head file, and a new ledger starts quietly ...
    ledger.path.unlink()
    ledger.head_path.unlink()
    Ledger.open()
    assert cli.main(["ledger", "verify", "--release", str(out)]) == 1
    assert "another ledger" in capsys.readouterr().err
    # ... and a changed release file is caught too
    (out / "release.csv").write_text("item,noisy_count\ni0,1\n")
    assert "changed after it was exported" in verify_export(Ledger.open(), out)


def test_a_recorded_release_is_exported_again_without_new_noise(dpdesk_home, data, tmp_path, monkeypatch,
                                                               capsys):
    first = tmp_path / "first"
    release_to_files(data, "lpa", 0.2, {"bound": 3}, first, formats=("csv", "json", "parquet"))
    entry = Ledger.open().entries()[-1].id

    def no_randomness(self, count):
        raise AssertionError("new noise was drawn")

    monkeypatch.setattr(SecureRandom, "words", no_randomness)
    again = tmp_path / "again"
    assert cli.main(["export", "--entry", str(entry), "--out", str(again), "--formats", "csv,json,parquet",
                     "--report", "html"]) == 0
    for name in ("release.csv", "release.json", "release.parquet"):
        assert (first / name).read_bytes() == (again / name).read_bytes(), name
    assert (again / "privacy-report.html").exists()
    assert cli.main(["ledger", "verify", "--release", str(first), str(again)]) == 0
    assert cli.main(["export", "--entry", "1", "--out", str(tmp_path / "x")]) == 2
    assert "genesis entry" in capsys.readouterr().err


# -- crash consistency -----------------------------------------------------------------------------------
def python_process(code: str, home: Path | None = None) -> subprocess.Popen:
    """Run ``code`` in a fresh Python with this checkout importable (and DPDESK_HOME=home)."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    if home is not None:
        env["DPDESK_HOME"] = str(home)
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def read_until(process: subprocess.Popen, marker: str) -> None:
    """Read the process's output until a line equals ``marker`` (fail if it ends first)."""
    lines = []
    for line in process.stdout:
        lines.append(line.strip())
        if line.strip() == marker:
            return
    raise AssertionError(f"the subprocess never printed {marker!r}: {lines} {process.stderr.read()}")


def test_kill_inside_the_record_transaction_leaves_the_ledger_consistent(dpdesk_home, data, tmp_path):
    ledger = Ledger.open()
    for _ in range(2):
        record(ledger, data, 0.25, {"release.csv": HASH})
    csv = write_csv(tmp_path / "data.csv", data.origin)
    process = python_process(f"""
        import time
        import dpdesk
        from dpdesk.privacy.ledger import Ledger

        advance = Ledger._advance_head if hasattr(Ledger, "_advance_head") else None
        import dpdesk.privacy.ledger as module
        original = module._advance_head

        def advance_then_hang(conn, last_id, last_hash):
            original(conn, last_id, last_hash)  # entry inserted and head moved, not committed
            print("inside-transaction", flush=True)
            time.sleep(120)

        module._advance_head = advance_then_hang
        data = dpdesk.declare(dpdesk.load({str(csv)!r}, name="small"), "from-data", items_are_public=True)
        from dpdesk.mechanisms.running import run
        release = run(data, "lpa", 0.25, {{"bound": 3}})
        Ledger.open().record(release, data.origin.fingerprint, {{"release.csv": "{HASH}"}})
    """, dpdesk_home)
    read_until(process, "inside-transaction")
    assert Path(str(ledger.path) + "-journal").exists()  # really mid-transaction
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL
    reopened = Ledger.open()
    assert reopened.verify() is None
    assert [e.id for e in reopened.entries()] == [1, 2, 3]
    assert record(reopened, data).id == 4
    assert reopened.verify() is None


def test_kill_during_release_loops_never_leaves_an_unrecorded_file(dpdesk_home, data, tmp_path):
    """SIGKILL at random moments of real releases: the chain verifies, every release file
    present under its final name is in the ledger (published ⇒ recorded), no public folder
    holds a half-written or temporary file, and no internal report is ever in one."""
    csv = write_csv(tmp_path / "data.csv", data.origin)
    out = tmp_path / "out"
    delays = random.Random(20240611)
    for round_number in range(2):
        process = python_process(f"""
            from pathlib import Path
            import dpdesk
            from dpdesk.workflow import release_to_files

            data = dpdesk.declare(dpdesk.load({str(csv)!r}, name="small"), "from-data", items_are_public=True)
            for k in range(10_000):
                release_to_files(data, "lpa", 0.0001, {{"bound": 3}}, Path({str(out)!r}) / "r{round_number}-{{}}".format(k),
                                 formats=("csv", "json", "parquet"), reports=("html",), internal_report=True)
                print("released", flush=True)
        """, dpdesk_home)
        read_until(process, "released")
        time.sleep(delays.uniform(0.05, 0.6))
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        ledger = Ledger.open()
        assert ledger.verify() is None
        recorded = {e.files.get("release.csv") for e in ledger.entries()}
        released = sorted(out.glob("r*/release.csv"))
        assert released and len(ledger.entries()) >= len(released)
        for path in released:
            assert sha256_bytes(path.read_bytes()) in recorded, path
        for folder in out.glob("r*"):
            names = sorted(p.name for p in folder.iterdir())
            assert names == ["privacy-report.html", "release.csv", "release.json", "release.parquet"], names
        assert not list(out.rglob("*NOT-FOR-PUBLICATION*"))


def test_concurrent_records_keep_one_chain(ledger, data):
    releases = [secure_release(data, 0.01) for _ in range(24)]
    errors = []
    fingerprint = data.origin.fingerprint

    def record_all(batch):
        try:
            for release in batch:
                Ledger.open(ledger.path).record(release, fingerprint, {"release.csv": HASH})
        except Exception as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=record_all, args=(releases[k::4],)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert [e.id for e in ledger.entries()] == list(range(1, 26))
    assert ledger.verify() is None
    assert ledger.totals()["small"].spent == pytest.approx(0.24)


def test_checks_while_another_process_records_never_see_a_broken_ledger(ledger, data):
    """A check reads the chain, the head row, SQLite's sequence and the head file: all from one
    moment. Read one by one, a release committed in between looked like entries deleted at
    the end, and a release next to a running one was refused with a false alarm."""
    fingerprint = data.origin.fingerprint
    releases = [secure_release(data, 0.001) for _ in range(40)]
    problems, stop = [], threading.Event()

    def keep_checking():
        reader = Ledger.open(ledger.path)
        while not stop.is_set():
            try:
                problem = reader.verify()
                reader.check("small", 0.001, fingerprint=fingerprint)
            except Exception as error:  # reported below
                problem = error
            if problem is not None:
                problems.append(problem)
                return

    readers = [threading.Thread(target=keep_checking) for _ in range(3)]
    for thread in readers:
        thread.start()
    writer = Ledger.open(ledger.path)
    for release in releases:
        writer.record(release, fingerprint, {"release.csv": HASH})
    stop.set()
    for thread in readers:
        thread.join()
    assert problems == []
    assert len(ledger.entries()) == 41 and ledger.verify() is None
    # the argument holds in rollback-journal mode; in WAL mode a writer commits during a read
    with sqlite3.connect(ledger.path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal"


# -- CLI ---------------------------------------------------------------------------------------------
def test_cli_ledger_commands(dpdesk_home, data, tmp_path, capsys):
    csv = write_csv(tmp_path / "data.csv", data.origin)
    assert cli.main(["release", str(csv), "--mechanism", "lpa", "--epsilon", "0.4", "--bound", "3", *PUBLIC,
                     "--out", str(tmp_path / "a")]) == 0
    capsys.readouterr()
    assert cli.main(["ledger", "list"]) == 0
    listing = capsys.readouterr().out
    assert "#2" in listing and "data (" in listing and "ε = 0.4" in listing and "of cap 3" in listing
    assert cli.main(["ledger", "cap", "data", "0.5", "--reason", "agreed with the board"]) == 0
    assert "set to ε = 0.5" in capsys.readouterr().out
    assert cli.main(["release", str(csv), "--mechanism", "lpa", "--epsilon", "0.2", "--bound", "3", *PUBLIC,
                     "--out", str(tmp_path / "b")]) == 2
    assert "cap" in capsys.readouterr().err
    assert cli.main(["release", str(csv), "--mechanism", "lpa", "--epsilon", "0.2", "--bound", "3", *PUBLIC,
                     "--out", str(tmp_path / "b"), "--override-cap"]) == 0
    capsys.readouterr()
    assert cli.main(["ledger", "list", "--json", "--dataset", "data"]) == 0
    entries = json.loads(capsys.readouterr().out)
    assert [e["kind"] for e in entries] == ["release", "cap", "release"]
    assert [e["overrides"] for e in entries] == [[], [], ["cap"]]
    assert entries[2]["files_sha256"]["release.csv"] == sha256_bytes((tmp_path / "b" / "release.csv").read_bytes())
    assert cli.main(["ledger", "list", "--dataset", "nobody"]) == 0
    assert "no releases for nobody" in capsys.readouterr().out
    assert cli.main(["ledger", "verify"]) == 0
    assert "intact (4 entries" in capsys.readouterr().out
    assert cli.main(["ledger", "cap", "data", "none", "--reason", "open data now"]) == 0
    assert "removed" in capsys.readouterr().out
    assert Ledger.open().status("data").cap is None
    with pytest.raises(SystemExit) as exited:
        cli.main(["ledger", "cap", "data", "lots", "--reason", "x"])
    assert exited.value.code == 2
    with pytest.raises(SystemExit):
        cli.main(["ledger", "cap", "data", "1"])  # the reason is required


def test_cli_ledger_list_warns_when_broken(dpdesk_home, data, capsys):
    ledger = Ledger.open()
    record(ledger, data)
    sqlite3_cli(ledger.path, "UPDATE entries SET epsilon = 0.0 WHERE id = 2")
    assert cli.main(["ledger", "list"]) == 0
    assert "broken at entry #2" in capsys.readouterr().err


def test_concurrent_first_use_creates_one_ledger(dpdesk_home, data):
    """Eight processes' worth of threads open a ledger that does not exist yet: one genesis,
    no ledger replaced by another (they used to race and overwrite each other's new file)."""
    barrier = threading.Barrier(8)
    errors, ids = [], []

    def first_use():
        barrier.wait()
        try:
            ledger = Ledger.open()
            ids.append(ledger.ledger_id())
            record(ledger, data, 0.01)
        except Exception as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=first_use) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and len(set(ids)) == 1
    ledger = Ledger.open()
    assert [e.kind for e in ledger.entries()] == ["genesis"] + ["release"] * 8 and ledger.verify() is None


def test_a_cap_under_a_name_never_used_says_so(dpdesk_home, data, tmp_path, capsys):
    """A misspelt name would cap nothing that exists and leave the real dataset uncapped."""
    csv = write_csv(tmp_path / "data.csv", data.origin)
    assert cli.main(["release", str(csv), "--mechanism", "lpa", "--epsilon", "0.4", "--bound", "3", *PUBLIC,
                     "--out", str(tmp_path / "a")]) == 0
    capsys.readouterr()
    assert cli.main(["ledger", "cap", "dta", "0.5", "--reason", "typo"]) == 0
    assert "nothing was recorded under the name dta before (names in the ledger: data)" in capsys.readouterr().err
    assert cli.main(["ledger", "cap", "data", "0.5", "--reason", "agreed"]) == 0
    assert "note" not in capsys.readouterr().err
