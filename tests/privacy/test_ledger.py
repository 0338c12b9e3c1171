"""The budget ledger: totals, caps (refused before any noise), overrides, tamper evidence,
crash consistency (SIGKILL of a real release process), concurrency, and the CLI."""

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
from dpdesk.privacy.ledger import GENESIS_HASH, Ledger, entry_hash
from dpdesk.privacy.randomness import SecureRandom
from dpdesk.report.export import sha256_bytes
from dpdesk.workflow import release_to_files

REPO = Path(__file__).resolve().parents[2]
HASH = "ab" * 32


def small_data(name="small", seed=0, rows=60, items=8, prefix="i"):
    """Random 0/1 data in which every person and every item appears (so a pairs CSV of it
    reads back as the same dataset, with the same fingerprint)."""
    rng = np.random.default_rng(seed)
    dense = rng.random((rows, items)) < 0.3
    dense[np.arange(rows), np.arange(rows) % items] = True
    return dpdesk.from_matrix(sp.csr_matrix(dense.astype(np.int64)), [f"{prefix}{j}" for j in range(items)], name=name)


def secure_release(data, epsilon=0.25, bound=3):
    return dpdesk.release(data, "lpa", epsilon=epsilon, bound=bound)


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
def test_open_uses_dpdesk_home_and_is_private(dpdesk_home):
    ledger = Ledger.open()
    assert ledger.path == dpdesk_home / "ledger.sqlite"
    assert ledger.path.exists()
    assert (ledger.path.stat().st_mode & 0o077) == 0
    assert ledger.entries() == [] and ledger.totals() == {} and ledger.verify() is None
    assert ledger.head() == (0, GENESIS_HASH)


def test_opening_listing_and_verifying_never_write(dpdesk_home, data, monkeypatch):
    """So a read-only ledger (a copy handed to an auditor) can be listed and verified."""
    ledger = Ledger.open()
    ledger.record(secure_release(data), data, {})
    before = ledger.path.read_bytes()

    def no_writes(self):
        raise AssertionError("a write transaction was opened")

    monkeypatch.setattr(Ledger, "_transaction", no_writes)
    again = Ledger.open()
    assert len(again.entries()) == 1 and again.verify() is None and again.totals()
    assert ledger.path.read_bytes() == before


def test_a_newer_ledger_format_is_refused(dpdesk_home):
    ledger = Ledger.open()
    with sqlite3.connect(ledger.path) as conn:
        conn.execute("PRAGMA user_version = 99")
    with pytest.raises(LedgerError, match="newer dpdesk"):
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


# -- recording and totals ----------------------------------------------------------------------------
def test_record_stores_every_field_and_chains(ledger, data):
    release = secure_release(data, epsilon=0.25)
    first = ledger.record(release, data, {"release.csv": HASH, "release.json": "cd" * 32})
    assert first.id == 1 and first.prev_hash == GENESIS_HASH
    assert first.fingerprint == data.fingerprint and first.dataset_name == "small"
    assert first.mechanism == "lpa" and first.epsilon == 0.25
    assert first.parameters == {"bound": 3, "noise": "geometric", "clamp": False}
    assert first.budget == release.budget.as_list()
    assert first.files == {"release.csv": HASH, "release.json": "cd" * 32}
    assert first.software == f"dpdesk {dpdesk.__version__}" and first.time == release.created
    assert first.cap is None and first.cap_overridden is False
    second = ledger.record(secure_release(data), data, {"release.csv": HASH})
    assert second.id == 2 and second.prev_hash == first.hash
    assert ledger.head() == (2, second.hash)
    public = second.public_dict()
    assert json.loads(json.dumps(public)) == public  # plain JSON
    assert set(public) >= {"id", "time", "dataset_name", "fingerprint", "mechanism", "parameters", "epsilon",
                           "budget", "software", "files_sha256", "cap", "cap_overridden", "prev_hash", "hash"}


def test_totals_by_sequential_composition(ledger):
    a, b = small_data("a", seed=1), small_data("b", seed=2)
    spent = {a.fingerprint: [0.1, 0.2, 0.3], b.fingerprint: [0.7]}
    for dataset in (a, b):
        for epsilon in spent[dataset.fingerprint]:
            ledger.record(secure_release(dataset, epsilon=epsilon), dataset, {"release.csv": HASH})
    totals = ledger.totals()
    assert totals[a.fingerprint] == ("a", math.fsum([0.1, 0.2, 0.3]), None)
    assert totals[b.fingerprint] == ("b", 0.7, None)
    assert [e.epsilon for e in ledger.entries(dataset=a.fingerprint[:10])] == [0.1, 0.2, 0.3]
    assert list(ledger.totals(dataset=b.fingerprint[:8])) == [b.fingerprint]
    assert ledger.status(a.fingerprint).spent == pytest.approx(0.6)


def test_record_refuses_exploration_and_mismatched_data(ledger, data):
    seeded = dpdesk.release(data, "lpa", epsilon=0.5, bound=3, rng=7)
    with pytest.raises(LedgerError, match="exploration"):
        ledger.record(seeded, data, {})
    other = small_data("other", seed=9)
    with pytest.raises(LedgerError, match="different dataset"):
        ledger.record(secure_release(data), other, {})
    assert ledger.entries() == []


# -- caps ----------------------------------------------------------------------------------------------
def test_cap_refuses_and_allows_up_to_the_cap(ledger, data):
    ledger.set_cap(data.fingerprint, 0.3)
    ledger.record(secure_release(data, 0.1), data, {})
    ledger.record(secure_release(data, 0.2), data, {})  # 0.1 + 0.2 = 0.30000000000000004 still fits 0.3
    with pytest.raises(BudgetError) as refused:
        ledger.check(data.fingerprint, 0.01)
    message = str(refused.value)
    assert "0.3" in message and "No noise was drawn" in message and "override" in message
    assert ledger.totals()[data.fingerprint][2] == 0.3


def test_cap_refusal_happens_before_any_random_draw(ledger, data, tmp_path, monkeypatch):
    ledger.set_cap(data.fingerprint, 0.5)
    ledger.record(secure_release(data, 0.4), data, {})
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
    assert len(ledger.entries()) == 1
    # the CLI takes the same path: exit status 2, the refusal on stderr, no noise
    csv = write_csv(tmp_path / "data.csv", data)
    monkeypatch.setattr(Ledger, "open", classmethod(lambda cls, path=None: ledger))
    # the CLI reads the file again; its fingerprint is the same dataset's
    assert dpdesk.load(csv).fingerprint == data.fingerprint
    status = cli.main(["release", str(csv), "--mechanism", "lpa", "--epsilon", "0.2", "--bound", "3",
                       "--out", str(tmp_path / "cli-out")])
    assert status == 2 and calls == []
    assert not (tmp_path / "cli-out").exists()


def test_override_is_recorded(ledger, data, tmp_path):
    ledger.set_cap(data.fingerprint, 0.5)
    within = ledger.record(secure_release(data, 0.3), data, {}, override=True)
    assert within.cap == 0.5 and within.cap_overridden is False  # nothing was overridden
    with pytest.raises(BudgetError):
        release_to_files(data, "lpa", 0.3, {"bound": 3}, tmp_path / "refused", ledger=ledger)
    paths = release_to_files(data, "lpa", 0.3, {"bound": 3}, tmp_path / "over", ledger=ledger, override_cap=True)
    assert [p.name for p in paths] == ["release.csv", "release.json"]
    entry = ledger.entries()[-1]
    assert entry.cap_overridden is True and entry.cap == 0.5 and entry.epsilon == 0.3
    assert ledger.totals()[data.fingerprint][1] == pytest.approx(0.6)
    assert ledger.verify() is None


def test_record_checks_the_cap_again_inside_its_transaction(ledger, data):
    ledger.set_cap(data.fingerprint, 0.5)
    ledger.check(data.fingerprint, 0.3)  # passes now ...
    ledger.record(secure_release(data, 0.3), data, {})  # ... but another release gets in first
    with pytest.raises(BudgetError, match="Nothing was released or recorded"):
        ledger.record(secure_release(data, 0.3), data, {})
    assert len(ledger.entries()) == 1


def test_set_cap_resolves_prefixes_and_checks_values(ledger, data):
    with pytest.raises(ParameterError, match="knows no dataset"):
        ledger.set_cap(data.fingerprint[:12], 1.0)  # unknown datasets need the full fingerprint
    assert ledger.set_cap(data.fingerprint, 1.0) == data.fingerprint
    assert ledger.set_cap(data.fingerprint[:8].upper(), 2.0) == data.fingerprint
    assert ledger.status(data.fingerprint).cap == 2.0
    for bad in (-1, float("nan"), float("inf"), "lots"):
        with pytest.raises(ParameterError):
            ledger.set_cap(data.fingerprint, bad)
    with pytest.raises(ParameterError):
        ledger.set_cap("not-hex!", 1.0)
    with pytest.raises(ParameterError, match="at least 6"):
        ledger.set_cap(data.fingerprint[:3], 1.0)
    ledger.set_cap(data.fingerprint, None)
    assert ledger.status(data.fingerprint).cap is None


# -- tamper evidence ------------------------------------------------------------------------------------
def sqlite3_cli(database: Path, statement: str) -> None:
    tool = shutil.which("sqlite3")
    if tool is None:
        pytest.fail("The sqlite3 command-line tool is missing; install it (scripts/system-deps.sh test, "
                    "or apt-get install sqlite3). This test edits the ledger with it.")
    subprocess.run([tool, str(database), statement], check=True, capture_output=True, text=True)


@pytest.fixture
def five_entries(ledger, data):
    for k in range(5):
        ledger.record(secure_release(data, 0.1 + k / 100), data, {"release.csv": HASH})
    assert ledger.verify() is None
    return ledger


@pytest.mark.parametrize("statement, broken, reason", [
    ("UPDATE entries SET epsilon = 0.001 WHERE id = 3", 3, "does not match its hash"),
    ("UPDATE entries SET cap_overridden = 1 WHERE id = 2", 2, "does not match its hash"),
    ("UPDATE entries SET files = '{}' WHERE id = 4", 4, "does not match its hash"),
    ("UPDATE entries SET dataset_name = 'x' WHERE id = 1", 1, "does not match its hash"),
    ("DELETE FROM entries WHERE id = 2", 2, "missing"),
    ("DELETE FROM entries WHERE id = 5", 5, "deleted at the end"),
    ("DELETE FROM entries WHERE id >= 4; UPDATE head SET last_id = 3, hash = (SELECT hash FROM entries WHERE id = 3)",
     4, "deleted at the end"),
    ("DELETE FROM entries", 1, "deleted at the end"),
    ("UPDATE entries SET prev_hash = '" + "0" * 64 + "' WHERE id = 4", 4, "does not carry the hash"),
])
def test_tampering_with_the_sqlite3_tool_is_detected(five_entries, statement, broken, reason, capsys):
    sqlite3_cli(five_entries.path, statement)
    problem = five_entries.verify()
    assert problem is not None and problem.entry_id == broken and reason in problem.reason
    assert cli.main(["ledger", "verify"]) == 1
    assert f"entry #{broken}" in capsys.readouterr().err


def test_rebuilt_hash_still_breaks_the_chain(five_entries):
    """Editing a row and recomputing its hash moves the break to the next entry."""
    with sqlite3.connect(five_entries.path) as conn:
        conn.row_factory = sqlite3.Row
        row = dict(conn.execute("SELECT * FROM entries WHERE id = 2").fetchone())
        row["epsilon"] = 0.0001
        conn.execute("UPDATE entries SET epsilon = ?, hash = ? WHERE id = 2", (row["epsilon"], entry_hash(row)))
    problem = five_entries.verify()
    assert problem.entry_id == 3 and "does not carry the hash of entry #2" in problem.reason


def test_an_inserted_entry_is_detected(five_entries):
    with sqlite3.connect(five_entries.path) as conn:
        conn.row_factory = sqlite3.Row
        row = dict(conn.execute("SELECT * FROM entries WHERE id = 5").fetchone())
        row.update(id=6, prev_hash=row["hash"])
        row["hash"] = entry_hash(row)
        conn.execute(f"INSERT INTO entries ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", list(row.values()))
    problem = five_entries.verify()
    assert problem.entry_id == 6 and "outside dpdesk" in problem.reason


def test_a_broken_ledger_refuses_releases(five_entries, data, tmp_path):
    sqlite3_cli(five_entries.path, "DELETE FROM entries WHERE id = 1")
    with pytest.raises(LedgerError, match="broken at entry #1"):
        five_entries.check(data.fingerprint, 0.1)
    with pytest.raises(LedgerError):
        five_entries.record(secure_release(data), data, {})
    with pytest.raises(LedgerError):
        release_to_files(data, "lpa", 0.1, {"bound": 3}, tmp_path / "out", ledger=five_entries)
    assert not (tmp_path / "out").exists()


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
        ledger.record(secure_release(data), data, {"release.csv": HASH})
    csv = write_csv(tmp_path / "data.csv", data)
    process = python_process(f"""
        import time
        import dpdesk
        from dpdesk.privacy.ledger import Ledger

        advance = Ledger._advance_head

        def advance_then_hang(self, conn, last_id, last_hash):
            advance(self, conn, last_id, last_hash)  # entry inserted and head moved, not committed
            print("inside-transaction", flush=True)
            time.sleep(120)

        Ledger._advance_head = advance_then_hang
        data = dpdesk.load({str(csv)!r})
        release = dpdesk.release(data, "lpa", epsilon=0.25, bound=3)
        Ledger.open().record(release, data, {{"release.csv": "{HASH}"}})
    """, dpdesk_home)
    read_until(process, "inside-transaction")
    assert Path(str(ledger.path) + "-journal").exists()  # really mid-transaction
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL
    reopened = Ledger.open()
    assert reopened.verify() is None
    assert [e.id for e in reopened.entries()] == [1, 2]
    assert reopened.record(secure_release(data), data, {}).id == 3
    assert reopened.verify() is None


def test_kill_during_release_loops_never_leaves_an_unrecorded_file(dpdesk_home, data, tmp_path):
    """SIGKILL at random moments of real releases: the chain verifies, and every release file
    present under its final name is in the ledger (published ⇒ recorded)."""
    csv = write_csv(tmp_path / "data.csv", data)
    out = tmp_path / "out"
    delays = random.Random(20240611)
    for round_number in range(2):
        process = python_process(f"""
            from pathlib import Path
            import dpdesk
            from dpdesk.workflow import release_to_files

            data = dpdesk.load({str(csv)!r})
            for k in range(10_000):
                release_to_files(data, "lpa", 0.001, {{"bound": 3}}, Path({str(out)!r}) / "r{round_number}-{{}}".format(k),
                                 formats=("csv", "json", "parquet"))
                print("released", flush=True)
        """, dpdesk_home)
        read_until(process, "released")
        time.sleep(delays.uniform(0.05, 0.6))
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        ledger = Ledger.open()
        assert ledger.verify() is None
        recorded = {e.files.get("release.csv") for e in ledger.entries()}
        released = sorted(out.glob("*/release.csv"))
        assert released and len(ledger.entries()) >= len(released)
        for path in released:
            assert sha256_bytes(path.read_bytes()) in recorded, path
        assert not list(out.glob("*/release.*.part"))  # temporaries are hidden names, never final ones


def test_concurrent_records_keep_one_chain(ledger, data):
    releases = [secure_release(data, 0.01) for _ in range(24)]
    errors = []

    def record(batch):
        try:
            for release in batch:
                Ledger.open(ledger.path).record(release, data, {"release.csv": HASH})
        except Exception as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=record, args=(releases[k::4],)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert [e.id for e in ledger.entries()] == list(range(1, 25))
    assert ledger.verify() is None
    assert ledger.totals()[data.fingerprint][1] == pytest.approx(0.24)


# -- CLI ---------------------------------------------------------------------------------------------
def test_cli_ledger_commands(dpdesk_home, data, tmp_path, capsys):
    csv = write_csv(tmp_path / "data.csv", data)
    assert cli.main(["release", str(csv), "--mechanism", "lpa", "--epsilon", "0.4", "--bound", "3",
                     "--out", str(tmp_path / "a")]) == 0
    capsys.readouterr()
    fingerprint = data.fingerprint
    assert cli.main(["ledger", "list"]) == 0
    listing = capsys.readouterr().out
    assert "#1" in listing and fingerprint[:12] in listing and "ε = 0.4" in listing and "no cap set" in listing
    assert cli.main(["ledger", "cap", fingerprint[:10], "0.5"]) == 0
    assert "set to ε = 0.5" in capsys.readouterr().out
    assert cli.main(["release", str(csv), "--mechanism", "lpa", "--epsilon", "0.2", "--bound", "3",
                     "--out", str(tmp_path / "b")]) == 2
    assert "cap" in capsys.readouterr().err
    assert cli.main(["release", str(csv), "--mechanism", "lpa", "--epsilon", "0.2", "--bound", "3",
                     "--out", str(tmp_path / "b"), "--override-cap"]) == 0
    capsys.readouterr()
    assert cli.main(["ledger", "list", "--json", "--dataset", fingerprint[:8]]) == 0
    entries = json.loads(capsys.readouterr().out)
    assert [e["cap_overridden"] for e in entries] == [False, True]
    assert entries[1]["files_sha256"]["release.csv"] == sha256_bytes(
        (tmp_path / "b" / "release.csv").read_bytes())
    assert cli.main(["ledger", "list", "--dataset", "ffffff"]) == 0
    assert "no releases for ffffff" in capsys.readouterr().out
    assert cli.main(["ledger", "verify"]) == 0
    assert "intact (2 entries" in capsys.readouterr().out
    assert cli.main(["ledger", "cap", fingerprint, "none"]) == 0
    assert "removed" in capsys.readouterr().out
    assert Ledger.open().status(fingerprint).cap is None
    with pytest.raises(SystemExit) as exited:
        cli.main(["ledger", "cap", fingerprint, "lots"])
    assert exited.value.code == 2


def test_cli_ledger_list_warns_when_broken(dpdesk_home, data, capsys):
    ledger = Ledger.open()
    ledger.record(secure_release(data), data, {})
    sqlite3_cli(ledger.path, "UPDATE entries SET epsilon = 0.0 WHERE id = 1")
    assert cli.main(["ledger", "list"]) == 0
    assert "broken at entry #1" in capsys.readouterr().err
