"""The privacy budget ledger: every release, chained by hash, summed per dataset, capped.

One SQLite file (``ledger.sqlite`` in :func:`dpdesk.paths.user_data_dir`, which
``DPDESK_HOME`` overrides) holds

* ``entries`` — one row per release: time, dataset fingerprint and name, mechanism,
  parameters, ε and its split, software version, sha256 of the released files, the cap
  in force and whether it was overridden, the previous entry's hash and the entry's own
  hash (sha256 of all of the above and its id);
* ``head`` — the id and hash of the last entry, so that deleting entries at the end
  shows too;
* ``caps`` — the steward's ε cap per dataset fingerprint.

Integrity. Each entry carries the hash of the one before it (the first carries 64
zeros), so editing a row breaks its own hash, and removing or inserting one breaks the
chain or the run of ids; :meth:`Ledger.verify` names the first broken entry. The chain
makes tampering *visible*; someone who can rewrite the whole file can also rebuild a
consistent chain. Against that, note the head hash (``dpdesk ledger verify`` prints it)
somewhere else now and then: a later ledger must still contain an entry with that hash.

Budget. Releases of the same dataset compose sequentially, so a dataset's spent ε is the
sum of its entries' ε. :meth:`Ledger.check` refuses a release that would take the sum
past the dataset's cap — the workflow calls it before any noise is drawn — unless it is
explicitly overridden; :meth:`Ledger.record` checks again inside its transaction (another
process may have recorded a release meanwhile) and records whether the cap was overridden.
A ledger whose chain is broken refuses new releases: its totals cannot be trusted.

Crash safety. Every change is one SQLite transaction (``BEGIN IMMEDIATE`` … ``COMMIT``,
rollback journal, ``synchronous=FULL``): a crash or ``kill -9`` at any point leaves
either the whole entry with the head moved, or neither.

The fingerprint is a function of the true data (someone who knows everyone else could
test a person's membership with it), so it stays in this local file and never goes into
a public one.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
import os
import re
import sqlite3
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .. import __version__
from ..errors import BudgetError, LedgerError, ParameterError

LEDGER_FILE = "ledger.sqlite"
SCHEMA_VERSION = 1
GENESIS_HASH = "0" * 64
_HASH_TAG = "dpdesk-ledger-entry-v1"
# relative slack when comparing a sum of ε with the cap, so 0.1 + 0.2 fits a cap of 0.3
_CAP_SLACK = 1e-9
_HEX = re.compile(r"^[0-9a-f]+$")
_MIN_PREFIX = 6

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    time TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    dataset_name TEXT NOT NULL,
    mechanism TEXT NOT NULL,
    parameters TEXT NOT NULL,
    epsilon REAL NOT NULL,
    budget TEXT NOT NULL,
    software TEXT NOT NULL,
    files TEXT NOT NULL,
    cap REAL,
    cap_overridden INTEGER NOT NULL,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS entries_fingerprint ON entries (fingerprint);
CREATE TABLE IF NOT EXISTS head (
    one INTEGER PRIMARY KEY CHECK (one = 1),
    last_id INTEGER NOT NULL,
    hash TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS caps (
    fingerprint TEXT PRIMARY KEY,
    epsilon REAL NOT NULL,
    time TEXT NOT NULL
);
"""

# the columns that make up an entry, in the order they are hashed
_COLUMNS = ("id", "time", "fingerprint", "dataset_name", "mechanism", "parameters", "epsilon", "budget",
            "software", "files", "cap", "cap_overridden", "prev_hash")


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).astimezone().isoformat(timespec="seconds")


def _json(value) -> str:
    """Canonical JSON (sorted keys, no spaces); numpy scalars and arrays become plain numbers."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=_plain)


def _plain(value):
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return value.tolist()
    return str(value)


def entry_hash(row: dict) -> str:
    """sha256 of an entry's stored columns (id and previous hash included)."""
    payload = [_HASH_TAG] + [row[column] for column in _COLUMNS]
    return hashlib.sha256(_json(payload).encode("utf-8")).hexdigest()


def exceeds_cap(spent: float, epsilon: float, cap: float | None) -> bool:
    return cap is not None and spent + epsilon > cap * (1 + _CAP_SLACK) + 1e-12


@dataclass(frozen=True)
class Entry:
    """One recorded release (as stored; ``parameters``, ``budget`` and ``files`` decoded)."""

    id: int
    time: str
    fingerprint: str
    dataset_name: str
    mechanism: str
    parameters: dict
    epsilon: float
    budget: list
    software: str
    files: dict
    cap: float | None
    cap_overridden: bool
    prev_hash: str
    hash: str

    def public_dict(self) -> dict:
        """Every field as plain JSON values (what ``dpdesk ledger list --json`` prints).

        Nothing here is computed from the true data except the fingerprint, which is why
        this ledger stays on the steward's machine.
        """
        return {
            "id": self.id, "time": self.time, "dataset_name": self.dataset_name, "fingerprint": self.fingerprint,
            "mechanism": self.mechanism, "parameters": self.parameters, "epsilon": self.epsilon,
            "budget": self.budget, "software": self.software, "files_sha256": self.files, "cap": self.cap,
            "cap_overridden": self.cap_overridden, "prev_hash": self.prev_hash, "hash": self.hash,
        }


@dataclass(frozen=True)
class LedgerProblem:
    """The first broken entry of a ledger and what is wrong with it."""

    entry_id: int
    reason: str

    def __str__(self) -> str:
        return f"entry #{self.entry_id}: {self.reason}"


@dataclass(frozen=True)
class BudgetStatus:
    """A dataset's spent ε and cap (``None``: no cap set)."""

    fingerprint: str
    spent: float
    cap: float | None

    @property
    def remaining(self) -> float | None:
        return None if self.cap is None else max(0.0, self.cap - self.spent)


def _decode(row: sqlite3.Row) -> Entry:
    def load(text, empty):
        try:
            return json.loads(text)
        except (TypeError, ValueError):
            return empty

    return Entry(
        id=int(row["id"]), time=str(row["time"]), fingerprint=str(row["fingerprint"]),
        dataset_name=str(row["dataset_name"]), mechanism=str(row["mechanism"]),
        parameters=load(row["parameters"], {}), epsilon=float(row["epsilon"]), budget=load(row["budget"], []),
        software=str(row["software"]), files=load(row["files"], {}),
        cap=None if row["cap"] is None else float(row["cap"]), cap_overridden=bool(row["cap_overridden"]),
        prev_hash=str(row["prev_hash"]), hash=str(row["hash"]))


class Ledger:
    """The budget ledger in one SQLite file; a new connection per operation (thread-safe)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)

    @classmethod
    def open(cls, path: str | Path | None = None) -> "Ledger":
        """The ledger at ``path`` (default: ``ledger.sqlite`` in the user's data directory), created if new."""
        if path is None:
            from ..paths import user_data_dir

            path = user_data_dir() / LEDGER_FILE
        ledger = cls(path)
        ledger._initialise()
        return ledger

    # -- connections -----------------------------------------------------------------------
    @contextmanager
    def _connect(self):
        try:
            conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        except sqlite3.Error as error:
            raise LedgerError(f"Cannot open the budget ledger {self.path}: {error}.") from None
        conn.row_factory = sqlite3.Row
        try:
            conn.execute("PRAGMA synchronous = FULL")
            yield conn
        except sqlite3.DatabaseError as error:
            raise LedgerError(f"The budget ledger {self.path} cannot be read or written ({error}). "
                              "If it is damaged, restore it from a backup.") from None
        finally:
            conn.close()

    @contextmanager
    def _transaction(self):
        """One write transaction; ``BEGIN IMMEDIATE`` also serialises concurrent releases."""
        with self._connect() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                if conn.in_transaction:  # SQLite may have rolled back already (e.g. disk full)
                    conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def _initialise(self) -> None:
        if not self.path.exists():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            try:  # owner only from the start: fingerprints identify datasets
                os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            except FileExistsError:  # another process created it meanwhile
                pass
        with self._connect() as conn:
            if conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION:
                return  # nothing to write: a read-only ledger can still be listed and verified
        with self._transaction() as conn:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if version == 0 and tables - {"sqlite_sequence"}:
                raise LedgerError(f"{self.path} is an SQLite file but not a dpdesk budget ledger.")
            if version > SCHEMA_VERSION:
                raise LedgerError(f"The budget ledger {self.path} was written by a newer dpdesk "
                                  f"(format {version}); update dpdesk to use it.")
            for statement in filter(str.strip, _SCHEMA.split(";")):
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    # -- budget ------------------------------------------------------------------------------
    def _spent_and_cap(self, conn, fingerprint: str) -> tuple[float, float | None]:
        values = [r[0] for r in conn.execute("SELECT epsilon FROM entries WHERE fingerprint = ?", (fingerprint,))]
        cap_row = conn.execute("SELECT epsilon FROM caps WHERE fingerprint = ?", (fingerprint,)).fetchone()
        return math.fsum(values), (None if cap_row is None else float(cap_row[0]))

    def status(self, fingerprint: str) -> BudgetStatus:
        """How much ε this dataset has spent, and its cap."""
        with self._connect() as conn:
            spent, cap = self._spent_and_cap(conn, fingerprint)
        return BudgetStatus(fingerprint, spent, cap)

    def check(self, fingerprint: str, epsilon: float, override: bool = False) -> BudgetStatus:
        """Refuse (``BudgetError``) a release of ``epsilon`` that would exceed the dataset's cap.

        Call it before any noise is drawn. With ``override`` the release may go past the
        cap (:meth:`record` then marks the entry). A broken ledger refuses every release
        (``LedgerError``), because its totals cannot be trusted.
        """
        with self._connect() as conn:
            self._require_intact(conn)
            spent, cap = self._spent_and_cap(conn, fingerprint)
        if exceeds_cap(spent, epsilon, cap) and not override:
            raise BudgetError(_refusal(fingerprint, epsilon, spent, cap, "No noise was drawn."))
        return BudgetStatus(fingerprint, spent, cap)

    def record(self, release, data, hashes: dict, override: bool = False) -> Entry:
        """Record a secure release of ``data`` (one transaction) and return its entry.

        ``hashes`` maps each released file's name to its sha256. The cap is checked again
        inside the transaction; ``cap_overridden`` is set when the release went past it.
        """
        if release.exploration:
            raise LedgerError("Only releases made with secure randomness are recorded; this one was made "
                              "in exploration mode (with a seed).")
        fingerprint = data.fingerprint
        if release.dataset_fingerprint is not None and release.dataset_fingerprint != fingerprint:
            raise LedgerError("This release was made from a different dataset than the one given to record it.")
        epsilon = float(release.epsilon)
        with self._transaction() as conn:
            last_id, last_hash = self._require_intact(conn)
            spent, cap = self._spent_and_cap(conn, fingerprint)
            exceeded = exceeds_cap(spent, epsilon, cap)
            if exceeded and not override:  # another release was recorded since the check
                raise BudgetError(_refusal(fingerprint, epsilon, spent, cap, "Nothing was released or recorded."))
            row = {
                "id": last_id + 1,
                "time": release.created or _now(),
                "fingerprint": fingerprint,
                "dataset_name": str(getattr(data, "name", "") or release.dataset_name or ""),
                "mechanism": release.mechanism,
                "parameters": _json(release.params),
                "epsilon": epsilon,
                "budget": _json(release.budget.as_list()),
                "software": str(release.report.get("software") or f"dpdesk {__version__}"),
                "files": _json(dict(hashes)),
                "cap": cap,
                "cap_overridden": int(bool(exceeded and override)),
                "prev_hash": last_hash,
            }
            row["hash"] = entry_hash(row)
            self._append(conn, row)
            self._advance_head(conn, row["id"], row["hash"])
            stored = conn.execute("SELECT * FROM entries WHERE id = ?", (row["id"],)).fetchone()
        return _decode(stored)

    def _append(self, conn, row: dict) -> None:
        columns = _COLUMNS + ("hash",)
        conn.execute(f"INSERT INTO entries ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                     [row[c] for c in columns])

    def _advance_head(self, conn, last_id: int, last_hash: str) -> None:
        conn.execute("INSERT INTO head (one, last_id, hash) VALUES (1, ?, ?) "
                     "ON CONFLICT (one) DO UPDATE SET last_id = excluded.last_id, hash = excluded.hash",
                     (last_id, last_hash))

    # -- reading -------------------------------------------------------------------------------
    def _resolve(self, conn, dataset: str) -> str:
        """A full fingerprint from a full one or from a prefix that names one known dataset."""
        text = dataset.strip().lower()
        if not _HEX.match(text):
            raise ParameterError(f"'{dataset}' is not a dataset fingerprint (a string of hexadecimal digits; "
                                 "`dpdesk inspect FILE` shows it).")
        if len(text) == 64:
            return text
        if len(text) < _MIN_PREFIX:
            raise ParameterError(f"Give at least {_MIN_PREFIX} characters of the fingerprint, not '{dataset}'.")
        known = {r[0] for r in conn.execute(
            "SELECT fingerprint FROM entries WHERE substr(fingerprint, 1, ?) = ? "
            "UNION SELECT fingerprint FROM caps WHERE substr(fingerprint, 1, ?) = ?",
            (len(text), text, len(text), text))}
        if len(known) == 1:
            return known.pop()
        if not known:
            raise ParameterError(f"The ledger knows no dataset whose fingerprint starts with '{dataset}'. "
                                 "Give the full fingerprint (`dpdesk inspect FILE` shows it).")
        raise ParameterError(f"Several datasets' fingerprints start with '{dataset}'; give more characters.")

    def entries(self, dataset: str | None = None) -> list[Entry]:
        """All entries in order, or those of one dataset (fingerprint or a prefix of it)."""
        with self._connect() as conn:
            if dataset is None:
                rows = conn.execute("SELECT * FROM entries ORDER BY id").fetchall()
            else:
                prefix = self._prefix(dataset)
                rows = conn.execute("SELECT * FROM entries WHERE substr(fingerprint, 1, ?) = ? ORDER BY id",
                                    (len(prefix), prefix)).fetchall()
        return [_decode(r) for r in rows]

    @staticmethod
    def _prefix(dataset: str) -> str:
        text = dataset.strip().lower()
        if not text or not _HEX.match(text):
            raise ParameterError(f"'{dataset}' is not a dataset fingerprint (a string of hexadecimal digits).")
        return text

    def totals(self, dataset: str | None = None) -> dict[str, tuple[str, float, float | None]]:
        """``{fingerprint: (dataset name, total ε, cap or None)}`` by sequential composition."""
        with self._connect() as conn:
            rows = conn.execute("SELECT fingerprint, dataset_name, epsilon FROM entries ORDER BY id").fetchall()
            caps = {r[0]: float(r[1]) for r in conn.execute("SELECT fingerprint, epsilon FROM caps")}
        prefix = self._prefix(dataset) if dataset is not None else ""
        spent: dict[str, list[float]] = {}
        names: dict[str, str] = {}
        for fingerprint, name, epsilon in rows:
            if fingerprint.startswith(prefix):
                spent.setdefault(fingerprint, []).append(float(epsilon))
                names[fingerprint] = name  # the latest name given to this dataset
        for fingerprint in caps:
            if fingerprint.startswith(prefix):
                spent.setdefault(fingerprint, [])
        return {fp: (names.get(fp, ""), math.fsum(values), caps.get(fp)) for fp, values in spent.items()}

    def set_cap(self, fingerprint: str, epsilon: float | None) -> str:
        """Set (or with ``None`` remove) a dataset's ε cap; returns the full fingerprint.

        ``fingerprint`` may be a prefix of at least six characters that names one dataset
        the ledger knows. A cap below what was already spent is allowed: it refuses every
        further release of that dataset.
        """
        if epsilon is not None:
            try:
                epsilon = float(epsilon)
            except (TypeError, ValueError):
                raise ParameterError(f"The cap must be a number, not {epsilon!r}.") from None
            if not math.isfinite(epsilon) or epsilon < 0:
                raise ParameterError(f"The cap must be a finite ε of at least 0, not {epsilon:g}.")
        with self._transaction() as conn:
            full = self._resolve(conn, fingerprint)
            if epsilon is None:
                conn.execute("DELETE FROM caps WHERE fingerprint = ?", (full,))
            else:
                conn.execute("INSERT INTO caps (fingerprint, epsilon, time) VALUES (?, ?, ?) ON CONFLICT "
                             "(fingerprint) DO UPDATE SET epsilon = excluded.epsilon, time = excluded.time",
                             (full, epsilon, _now()))
        return full

    # -- integrity -----------------------------------------------------------------------------
    def head(self) -> tuple[int, str]:
        """The last entry's id and hash (0 and 64 zeros for an empty ledger)."""
        with self._connect() as conn:
            row = conn.execute("SELECT last_id, hash FROM head WHERE one = 1").fetchone()
        return (0, GENESIS_HASH) if row is None else (int(row[0]), str(row[1]))

    def verify(self) -> LedgerProblem | None:
        """``None`` when the chain is intact, else the first broken entry and why."""
        with self._connect() as conn:
            return _find_problem(conn)[0]

    def _require_intact(self, conn) -> tuple[int, str]:
        problem, last_id, last_hash = _find_problem(conn)
        if problem is not None:
            raise LedgerError(
                f"The budget ledger {self.path} is broken at {problem}. The privacy budget it records can no "
                "longer be trusted, so no release is made. Restore the ledger from a backup (or move it aside "
                "to keep it as evidence, start a new one and set the caps again).")
        return last_id, last_hash


def _find_problem(conn) -> tuple[LedgerProblem | None, int, str]:
    """Walk the chain: (first problem or None, last id, last hash)."""
    expected_id, previous = 1, GENESIS_HASH
    for row in conn.execute("SELECT * FROM entries ORDER BY id"):
        stored = dict(row)
        if stored["id"] != expected_id:
            return LedgerProblem(expected_id, "it is missing: it was deleted from the ledger"), 0, ""
        if stored["prev_hash"] != previous:
            return LedgerProblem(expected_id, f"it does not carry the hash of entry #{expected_id - 1}: an entry "
                                              "before it was replaced, or this one was changed"), 0, ""
        try:
            intact = entry_hash(stored) == stored["hash"]
        except (TypeError, ValueError):
            intact = False
        if not intact:
            return LedgerProblem(expected_id, "its content does not match its hash: it was edited after "
                                              "it was recorded"), 0, ""
        previous = stored["hash"]
        expected_id += 1
    last_id = expected_id - 1
    head = conn.execute("SELECT last_id, hash FROM head WHERE one = 1").fetchone()
    head_id, head_hash = (0, GENESIS_HASH) if head is None else (head[0], head[1])
    sequence = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'entries'").fetchone()
    highest_ever = max(int(head_id), int(sequence[0]) if sequence else 0)
    if highest_ever > last_id:
        return LedgerProblem(last_id + 1, f"it is missing: the ledger had {highest_ever} entries and only "
                                          f"{last_id} remain (deleted at the end)"), 0, ""
    if head_id < last_id:
        return LedgerProblem(int(head_id) + 1, "it was added outside dpdesk (the ledger's head does not "
                                               "include it)"), 0, ""
    if head_hash != previous:
        return LedgerProblem(last_id, "the last entry was replaced (its hash differs from the one the "
                                      "ledger's head remembers)"), 0, ""
    return None, last_id, previous


def _refusal(fingerprint: str, epsilon: float, spent: float, cap: float, outcome: str) -> str:
    return (f"This release would spend ε = {epsilon:g} on a dataset (fingerprint {fingerprint[:12]}) that has "
            f"already spent ε = {spent:.6g} of its cap ε = {cap:g}: the total would be {spent + epsilon:.6g}. "
            f"{outcome} Choose a smaller ε, raise the cap (dpdesk ledger cap {fingerprint[:12]} EPSILON), or "
            "override the cap explicitly — the override is recorded in the ledger.")
