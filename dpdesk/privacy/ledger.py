"""The privacy budget ledger: every release and every cap, chained by hash, summed per dataset.

Where. One SQLite file, ``ledger.sqlite`` in :func:`dpdesk.paths.user_data_dir`
(``DPDESK_HOME`` overrides it), and beside it ``ledger.head``: a small JSON file with the
ledger's identity, its number of entries and the last entry's hash.

What. ``entries`` holds one row per event, each of a *kind*:

* ``genesis`` — the first entry: the ledger's identity (a random id) and why it was started
  (first use on this machine, or ``dpdesk ledger new --reason …``, which also records the
  head of the ledger it replaces);
* ``release`` — a secure release: the declared dataset name (the population the data is
  about), the content fingerprint of the data, mechanism, parameters, ε, δ, the budget
  split, software version, sha256 of the released data files, and the released values
  themselves (compressed; they are public once released, and ``dpdesk export --entry N``
  writes the files again from them without new noise);
* ``charged`` — a release that stopped after it used the data (its ε and δ are spent);
* ``cap`` — a dataset's ε cap set or changed, with the steward's reason.

Budget. The ε of a dataset's ``release`` and ``charged`` entries add up (sequential
composition), per declared dataset *name*, not per exact file content: the same people
with one row changed are the same population. Every dataset has a cap — ``DEFAULT_CAP``
until a ``cap`` entry changes it. :meth:`Ledger.check` refuses a release that would pass
the cap, before any noise is drawn, unless overridden; the override is recorded in the
entry. A data file whose fingerprint was already recorded under another dataset name is
refused unless that is overridden too (recorded): renaming must not reset the budget.

Integrity. Each entry carries the hash of the one before it (the genesis entry carries 64
zeros) and its own hash over all its columns (the released values through their sha256),
so an edited, inserted or deleted entry breaks the chain; ε ≥ 0 and 0 ≤ δ < 1 are enforced
by the schema and by :meth:`Ledger.verify`. Deleting entries at the end, emptying the file
or deleting it are caught by the head, kept twice: in the database (``head``, and SQLite's
``sqlite_sequence``) and in ``ledger.head`` outside it. A missing, emptied or rewound
ledger is refused with a clear message; starting over is the explicit, recorded act
``dpdesk ledger new --reason …``. Every export carries its entry's number and hash and the
ledger's identity, so ``dpdesk ledger verify --release DIR`` checks a ledger against any
release ever published from it — which catches even someone who rewrote both files.

Crash safety. Every change is one SQLite transaction (``BEGIN IMMEDIATE`` … ``COMMIT``,
``synchronous=FULL``); ``ledger.head`` is replaced atomically after the commit. A crash
between the two leaves a database one entry ahead of the head file, which is accepted (the
database extends what the head file remembers) and the head file caught up.

The fingerprint is a function of the true data (someone who knows everyone else could
test a person's membership with it), so it stays in this local file and never goes into a
public one.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
import os
import sqlite3
import tempfile
import uuid
import zlib
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .. import __version__, locks
from ..errors import BudgetError, LedgerError, ParameterError

LEDGER_FILE = "ledger.sqlite"
HEAD_FILE = "ledger.head"
SCHEMA_VERSION = 2
GENESIS_HASH = "0" * 64
DEFAULT_CAP = 3.0
_HASH_TAG = "dpdesk-ledger-entry-v2"
# relative slack when comparing a sum of ε with the cap, so 0.1 + 0.2 fits a cap of 0.3
_CAP_SLACK = 1e-9
KINDS = ("genesis", "release", "charged", "cap")
SPENDING_KINDS = ("release", "charged")
OVERRIDE_CAP, OVERRIDE_NAME = "cap", "dataset name"

_SCHEMA = """
CREATE TABLE entries (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    time TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('genesis', 'release', 'charged', 'cap')),
    dataset TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    mechanism TEXT NOT NULL,
    parameters TEXT NOT NULL,
    epsilon REAL NOT NULL CHECK (epsilon >= 0),
    delta REAL NOT NULL CHECK (delta >= 0 AND delta < 1),
    budget TEXT NOT NULL,
    software TEXT NOT NULL,
    files TEXT NOT NULL,
    payload BLOB,
    payload_sha256 TEXT NOT NULL,
    cap REAL CHECK (cap IS NULL OR cap >= 0),
    overrides TEXT NOT NULL,
    reason TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL
);
CREATE INDEX entries_dataset ON entries (dataset);
CREATE INDEX entries_fingerprint ON entries (fingerprint);
CREATE TABLE head (
    one INTEGER PRIMARY KEY CHECK (one = 1),
    ledger_id TEXT NOT NULL,
    last_id INTEGER NOT NULL,
    hash TEXT NOT NULL
);
"""

# the columns that make up an entry, in the order they are hashed (payload through its sha256)
_COLUMNS = ("id", "time", "kind", "dataset", "fingerprint", "mechanism", "parameters", "epsilon", "delta",
            "budget", "software", "files", "payload_sha256", "cap", "overrides", "reason", "prev_hash")


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


def pack_payload(record: dict | None) -> tuple[bytes | None, str]:
    """The stored form of a release's public content (zlib of canonical JSON) and its sha256."""
    if record is None:
        return None, hashlib.sha256(b"").hexdigest()
    # key order kept (not sorted): the files rendered again from it must be byte-identical
    text = json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=_plain)
    blob = zlib.compress(text.encode("utf-8"), 6)
    return blob, hashlib.sha256(blob).hexdigest()


@dataclass(frozen=True)
class Entry:
    """One ledger entry (as stored; JSON columns decoded; the payload left packed)."""

    id: int
    time: str
    kind: str
    dataset: str
    fingerprint: str
    mechanism: str
    parameters: dict
    epsilon: float
    delta: float
    budget: list
    software: str
    files: dict
    cap: float | None
    overrides: list
    reason: str
    prev_hash: str
    hash: str
    payload: bytes | None = None

    @property
    def dataset_name(self) -> str:
        return self.dataset

    @property
    def cap_overridden(self) -> bool:
        return OVERRIDE_CAP in self.overrides

    def release_record(self) -> dict | None:
        """The released content kept for re-export (``None`` for entries without one)."""
        if self.payload is None:
            return None
        return json.loads(zlib.decompress(self.payload).decode("utf-8"))

    def public_dict(self) -> dict:
        """Every field but the packed values, as plain JSON (``dpdesk ledger list --json``).

        Nothing here is computed from the true data except the fingerprint, which is why
        this ledger stays on the steward's machine.
        """
        return {
            "id": self.id, "time": self.time, "kind": self.kind, "dataset": self.dataset,
            "fingerprint": self.fingerprint, "mechanism": self.mechanism, "parameters": self.parameters,
            "epsilon": self.epsilon, "delta": self.delta, "budget": self.budget, "software": self.software,
            "files_sha256": self.files, "cap": self.cap, "overrides": self.overrides, "reason": self.reason,
            "prev_hash": self.prev_hash, "hash": self.hash,
        }


@dataclass(frozen=True)
class LedgerProblem:
    """What is wrong with a ledger: the first broken entry (0: the ledger as a whole) and why."""

    entry_id: int
    reason: str

    def __str__(self) -> str:
        return f"entry #{self.entry_id}: {self.reason}" if self.entry_id else self.reason


@dataclass(frozen=True)
class BudgetStatus:
    """A dataset's spent ε (and δ) and its cap (``None``: removed by the steward)."""

    dataset: str
    spent: float
    cap: float | None
    delta: float = 0.0
    releases: int = 0

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
        id=int(row["id"]), time=str(row["time"]), kind=str(row["kind"]), dataset=str(row["dataset"]),
        fingerprint=str(row["fingerprint"]), mechanism=str(row["mechanism"]),
        parameters=load(row["parameters"], {}), epsilon=float(row["epsilon"]), delta=float(row["delta"]),
        budget=load(row["budget"], []), software=str(row["software"]), files=load(row["files"], {}),
        cap=None if row["cap"] is None else float(row["cap"]), overrides=load(row["overrides"], []),
        reason=str(row["reason"]), prev_hash=str(row["prev_hash"]), hash=str(row["hash"]),
        payload=row["payload"])


class Ledger:
    """The budget ledger: one SQLite file and its head file; a new connection per operation."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.head_path = self.path.with_name(HEAD_FILE)

    @classmethod
    def open(cls, path: str | Path | None = None) -> "Ledger":
        """The ledger at ``path`` (default: in the user's data directory).

        A new ledger is started only where there is neither a ledger nor a head file (first
        use); a missing, emptied or rewound ledger is refused (``LedgerError``).
        """
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
        except sqlite3.IntegrityError as error:
            raise LedgerError(f"The budget ledger {self.path} refused an entry ({error}).") from None
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
            self._write_head_file(conn)

    # -- the head outside the database -----------------------------------------------------
    def _read_head_file(self) -> dict | None:
        try:
            text = self.head_path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except OSError as error:
            raise LedgerError(f"Cannot read {self.head_path}: {error.strerror or error}.") from None
        try:
            head = json.loads(text)
            if not (isinstance(head, dict) and isinstance(head.get("ledger"), str)
                    and isinstance(head.get("entries"), int) and isinstance(head.get("hash"), str)):
                raise ValueError
        except ValueError:
            raise LedgerError(f"{self.head_path} (the record of the ledger's last entry) is damaged. The ledger "
                              "cannot be checked against it, so no release is made. Restore it from a backup, or "
                              "start a new ledger with `dpdesk ledger new --reason …` (recorded).") from None
        return head

    def _write_head_file(self, conn) -> None:
        row = conn.execute("SELECT ledger_id, last_id, hash FROM head WHERE one = 1").fetchone()
        if row is None:
            return
        content = json.dumps({"ledger": row[0], "entries": int(row[1]), "hash": row[2], "updated": _now()},
                             indent=2).encode("utf-8")
        try:
            fd, temporary = tempfile.mkstemp(dir=self.head_path.parent, prefix=".ledger.head.", suffix=".part")
            with os.fdopen(fd, "wb") as handle:
                handle.write(content)
                handle.flush()
                os.fsync(handle.fileno())
            _replace_while_read(temporary, self.head_path)
        except OSError as error:
            raise LedgerError(f"The release was recorded in the ledger, but its head file {self.head_path} "
                              f"cannot be written ({error.strerror or error}).") from None

    # -- creating ----------------------------------------------------------------------------
    def _initialise(self) -> None:
        folder = self.path.parent
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            raise LedgerError(f"dpdesk keeps its budget ledger in {folder}, but that is a file, not a folder. "
                              "Set DPDESK_HOME to a folder you can write to.") from None
        except OSError as error:
            raise LedgerError(f"Cannot create dpdesk's folder {folder} for the budget ledger "
                              f"({error.strerror or error}). Set DPDESK_HOME to a folder you can write to.") from None
        if not folder.is_dir():
            raise LedgerError(f"dpdesk keeps its budget ledger in {folder}, but that is not a folder. "
                              "Set DPDESK_HOME to a folder you can write to.")
        if self._state() == "ready":
            return
        with self._creation_lock():  # another process may be creating it right now
            self._initialise_locked()

    def _initialise_locked(self) -> None:
        head = self._read_head_file()
        state = self._state()
        if state == "ready":
            return
        if state == "old":
            raise LedgerError(
                f"The budget ledger {self.path} was written by an earlier dpdesk (format 1), which kept budgets "
                "per file content rather than per dataset. Keep it as evidence and start a ledger of the new "
                "format with `dpdesk ledger new --reason \"upgrade to dpdesk 0.2\"` (the old file is kept beside it).")
        if state == "foreign":
            raise LedgerError(f"{self.path} is not a dpdesk budget ledger.")
        # "absent": no file, an empty file, or an SQLite file without tables
        if head is not None:
            raise LedgerError(
                f"The budget ledger {self.path} is missing or empty, but dpdesk's record ({self.head_path.name}) "
                f"says it held {head['entries']} entries (last hash {head['hash'][:16]}…). Releases are refused: "
                "the budget already spent would be forgotten. Restore the ledger from a backup. If you really mean "
                "to start over, run `dpdesk ledger new --reason \"…\"` — the reason and the old head are recorded.")
        self._create("first use of dpdesk on this machine", previous=None)

    @contextmanager
    def _creation_lock(self):
        """Serialise creating (or replacing) the ledger file between processes and threads."""
        with locks.held(self.path.with_name(self.path.name + ".lock")):
            yield

    def _state(self) -> str:
        """``absent`` (no ledger, or an empty file), ``ready``, ``old`` (format 1) or ``foreign``."""
        if not self.path.exists():
            return "absent"
        if self.path.is_dir():
            raise LedgerError(f"{self.path} is a folder, not the budget ledger file.")
        if self.path.stat().st_size == 0:
            return "absent"
        with self._connect() as conn:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if version == SCHEMA_VERSION and "entries" in tables:
            return "ready"
        if version == 1:
            return "old"
        if version > SCHEMA_VERSION:
            raise LedgerError(f"The budget ledger {self.path} was written by a newer dpdesk (format {version}); "
                              "update dpdesk to use it.")
        if tables - {"sqlite_sequence"}:
            return "foreign"
        return "absent"

    def _create(self, reason: str, previous: dict | None) -> None:
        """A new ledger file with its genesis entry, written aside and moved into place."""
        ledger_id = str(uuid.uuid4())
        fd, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".ledger.", suffix=".new")
        os.close(fd)
        os.chmod(temporary, 0o600)  # owner only: fingerprints identify datasets
        staged = Ledger(temporary)
        try:
            with staged._connect() as conn:
                conn.execute("BEGIN IMMEDIATE")
                for statement in filter(str.strip, _SCHEMA.split(";")):
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                parameters = {"ledger": ledger_id}
                if previous is not None:
                    parameters["replaces"] = previous
                row = _row(1, "genesis", reason=reason, parameters=parameters, prev_hash=GENESIS_HASH)
                _append(conn, row)
                conn.execute("INSERT INTO head (one, ledger_id, last_id, hash) VALUES (1, ?, 1, ?)",
                             (ledger_id, row["hash"]))
                conn.execute("COMMIT")
            os.replace(temporary, self.path)
        except BaseException:
            if os.path.exists(temporary):
                os.unlink(temporary)
            raise
        with self._connect() as conn:
            self._write_head_file(conn)

    def start_new(self, reason: str) -> Entry:
        """Retire the current ledger (kept beside it) and start a new one, recording why.

        The genesis entry of the new ledger records the reason and what the head file knew
        of the old one, so the break in the chain is itself on record.
        """
        reason = (reason or "").strip()
        if not reason:
            raise ParameterError("Starting a new ledger needs a reason (--reason \"…\"); it is recorded.")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._creation_lock():
            return self._start_new_locked(reason)

    def _start_new_locked(self, reason: str) -> Entry:
        try:
            previous = self._read_head_file()
        except LedgerError:
            previous = {"note": "the old head file was damaged"}
        if self.path.exists() and self.path.stat().st_size > 0:
            stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
            retired = self.path.with_name(f"{self.path.name}.retired-{stamp}")
            os.replace(self.path, retired)
            previous = dict(previous or {}, retired_file=retired.name)
        elif self.path.exists():
            self.path.unlink()
        self._create(reason, previous)
        return self.entries()[0]

    # -- budget ------------------------------------------------------------------------------
    def _budget(self, conn, dataset: str) -> tuple[float, float, float | None, int]:
        """(spent ε, spent δ, cap, number of spending entries) of a dataset, by its declared name."""
        rows = conn.execute(f"SELECT epsilon, delta FROM entries WHERE dataset = ? AND kind IN "
                            f"({', '.join('?' * len(SPENDING_KINDS))})", (dataset, *SPENDING_KINDS)).fetchall()
        cap_row = conn.execute("SELECT cap FROM entries WHERE dataset = ? AND kind = 'cap' ORDER BY id DESC LIMIT 1",
                               (dataset,)).fetchone()
        cap = DEFAULT_CAP if cap_row is None else (None if cap_row[0] is None else float(cap_row[0]))
        return math.fsum(r[0] for r in rows), math.fsum(r[1] for r in rows), cap, len(rows)

    def status(self, dataset: str) -> BudgetStatus:
        """How much ε (and δ) this dataset has spent, and its cap."""
        dataset = check_dataset_name(dataset)
        with self._connect() as conn:
            spent, delta, cap, count = self._budget(conn, dataset)
        return BudgetStatus(dataset, spent, cap, delta, count)

    def _names_of(self, conn, keys) -> set[str]:
        """The dataset names under which data with any of ``keys`` (fingerprint, source) was spent on."""
        keys = {k for k in keys if k}
        if not keys:
            return set()
        rows = conn.execute(f"SELECT DISTINCT dataset, fingerprint FROM entries WHERE kind IN "
                            f"({', '.join('?' * len(SPENDING_KINDS))})", SPENDING_KINDS).fetchall()
        return {name for name, stored in rows if keys & set(stored.split())}

    @contextmanager
    def reserve(self, dataset: str, keys=(), *, cancel=None, waiting=None):
        """Hold a dataset (and its data's keys) from the cap check to the record, across processes.

        Two releases of one dataset checked at once would both see the same spending and
        together pass the cap; a release that is charged after it used the data (a discovery
        that found nothing) would too. Under the reservation, one waits for the other to be
        recorded: its check then sees the other's ε. The same data under two names at once
        is held by its keys (taken after the name, in sorted order, so two waits never
        cross). ``waiting()`` is called once if another release holds it; ``cancel`` stops
        the wait. The operating system drops the locks if the process dies.
        """
        folder = self.path.parent / "locks"
        where = os.path.realpath(self.path)
        paths = [locks.lock_path(folder, f"{where} · dataset · {check_dataset_name(dataset)}")]
        paths += [locks.lock_path(folder, f"{where} · data · {key}") for key in sorted({k for k in keys if k})]
        held = []
        try:
            for path in paths:
                held.append(_wait_for_lock(path, cancel, waiting))
                waiting = None
            yield self
        finally:
            for handle in reversed(held):
                locks.release(handle)

    def check(self, dataset: str, epsilon: float, *, fingerprint: str | None = None, source: str | None = None,
              override: bool = False, override_name: bool = False) -> BudgetStatus:
        """Refuse (``BudgetError``) a release of ``epsilon`` that would exceed the dataset's cap.

        Call it before any noise is drawn (with ``fingerprint`` once the data is read, and
        ``source``, the digest of the raw source — :func:`dpdesk.data.fingerprint.source_digest` —
        so that the same file read another way is the same data too).
        With ``override`` the release may go past the cap, with ``override_name`` the data
        may be released under a name other than the one it was recorded under; both are
        recorded in the entry. A broken ledger refuses every release (``LedgerError``).
        """
        dataset = check_dataset_name(dataset)
        self._initialise()
        with self._connect() as conn:
            self._require_intact(conn)
            spent, delta, cap, count = self._budget(conn, dataset)
            others = self._names_of(conn, {fingerprint, source}) - {dataset}
        if others and not override_name:
            raise BudgetError(_renamed(dataset, others))
        if exceeds_cap(spent, epsilon, cap) and not override:
            raise BudgetError(_refusal(dataset, epsilon, spent, cap, "No noise was drawn."))
        return BudgetStatus(dataset, spent, cap, delta, count)

    def record(self, release, fingerprint: str, hashes: dict, *, source: str | None = None, override: bool = False,
               override_name: bool = False, record: dict | None = None) -> Entry:
        """Record a secure release (one transaction) and return its entry.

        ``hashes`` maps each released data file's name to its sha256; ``record`` is the
        release's public content (:meth:`Release.to_record`) kept for re-export. The cap
        and the name are checked again inside the transaction (another process may have
        recorded a release meanwhile).
        """
        if release.exploration:
            raise LedgerError("Only releases made with secure randomness are recorded; this one was made "
                              "in exploration mode (with a seed).")
        if release.dataset_fingerprint is not None and release.dataset_fingerprint != fingerprint:
            raise LedgerError("This release was made from a different dataset than the one given to record it.")
        dataset = check_dataset_name(release.dataset_name)
        epsilon, delta = float(release.epsilon), float(release.delta)
        payload, payload_sha = pack_payload(record if record is not None else release.to_record())
        self._initialise()
        with self._transaction() as conn:
            last_id, last_hash = self._require_intact(conn)
            spent, _, cap, _ = self._budget(conn, dataset)
            others = self._names_of(conn, {fingerprint, source}) - {dataset}
            if others and not override_name:
                raise BudgetError(_renamed(dataset, others))
            exceeded = exceeds_cap(spent, epsilon, cap)
            if exceeded and not override:  # another release was recorded since the check
                raise BudgetError(_refusal(dataset, epsilon, spent, cap, "Nothing was released or recorded."))
            overrides = ([OVERRIDE_CAP] if exceeded else []) + ([OVERRIDE_NAME] if others else [])
            row = _row(last_id + 1, "release", time=release.created or _now(), dataset=dataset,
                       fingerprint=_keys(fingerprint, source), mechanism=release.mechanism, parameters=release.params,
                       epsilon=epsilon, delta=delta, budget=release.budget.as_list(),
                       software=str(release.report.get("software") or f"dpdesk {__version__}"),
                       files=dict(hashes), payload=payload, payload_sha256=payload_sha, cap=cap,
                       overrides=overrides, prev_hash=last_hash)
            _append(conn, row)
            _advance_head(conn, row["id"], row["hash"])
            stored = conn.execute("SELECT * FROM entries WHERE id = ?", (row["id"],)).fetchone()
        return _decode(stored)

    def record_charged(self, dataset: str, fingerprint: str, mechanism: str, params: dict, budget,
                       reason: str, *, source: str | None = None, override: bool = False) -> Entry:
        """Record the ε and δ spent by a release that stopped after it used the data.

        It is recorded whatever the cap says — the data was used, the ε is spent — but a
        charge past the cap without the steward's override (possible only outside
        :meth:`reserve`) is recorded as what it is: an override of the cap.
        """
        dataset = check_dataset_name(dataset)
        self._initialise()
        with self._transaction() as conn:
            last_id, last_hash = self._require_intact(conn)
            spent, _, cap, _ = self._budget(conn, dataset)
            exceeded = exceeds_cap(spent, float(budget.spent), cap)
            row = _row(last_id + 1, "charged", dataset=dataset, fingerprint=_keys(fingerprint, source),
                       mechanism=mechanism, parameters=params, epsilon=float(budget.spent),
                       delta=float(budget.delta), budget=budget.as_list(), cap=cap,
                       overrides=[OVERRIDE_CAP] if exceeded else [], reason=reason, prev_hash=last_hash)
            _append(conn, row)
            _advance_head(conn, row["id"], row["hash"])
            stored = conn.execute("SELECT * FROM entries WHERE id = ?", (row["id"],)).fetchone()
        return _decode(stored)

    def set_cap(self, dataset: str, epsilon: float | None, reason: str) -> Entry:
        """Set (or with ``None`` remove) a dataset's ε cap, recording the reason in the chain.

        A cap below what was already spent is allowed: it refuses every further release.
        """
        dataset = check_dataset_name(dataset)
        reason = (reason or "").strip()
        if not reason:
            raise ParameterError("Changing a cap needs a reason (--reason \"…\"); it is recorded in the ledger.")
        if epsilon is not None:
            try:
                epsilon = float(epsilon)
            except (TypeError, ValueError):
                raise ParameterError(f"The cap must be a number, not {epsilon!r}.") from None
            if not math.isfinite(epsilon) or epsilon < 0:
                raise ParameterError(f"The cap must be a finite ε of at least 0, not {epsilon:g}.")
        self._initialise()
        with self._transaction() as conn:
            last_id, last_hash = self._require_intact(conn)
            row = _row(last_id + 1, "cap", dataset=dataset, cap=epsilon, reason=reason, prev_hash=last_hash)
            _append(conn, row)
            _advance_head(conn, row["id"], row["hash"])
            stored = conn.execute("SELECT * FROM entries WHERE id = ?", (row["id"],)).fetchone()
        return _decode(stored)

    # -- reading -------------------------------------------------------------------------------
    def entries(self, dataset: str | None = None, *, kinds=None) -> list[Entry]:
        """All entries in order, or those of one dataset (by declared name); ``kinds`` filters."""
        with self._connect() as conn:
            if dataset is None:
                rows = conn.execute("SELECT * FROM entries ORDER BY id").fetchall()
            else:
                rows = conn.execute("SELECT * FROM entries WHERE dataset = ? ORDER BY id", (dataset,)).fetchall()
        found = [_decode(r) for r in rows]
        return [e for e in found if e.kind in kinds] if kinds else found

    def entry(self, entry_id: int) -> Entry:
        with self._connect() as conn:
            self._require_intact(conn)
            row = conn.execute("SELECT * FROM entries WHERE id = ?", (int(entry_id),)).fetchone()
        if row is None:
            raise ParameterError(f"The ledger has no entry #{entry_id} (`dpdesk ledger list` shows them).")
        return _decode(row)

    def totals(self) -> dict[str, BudgetStatus]:
        """``{dataset name: status}`` for every dataset the ledger knows."""
        with self._connect() as conn:
            names = [r[0] for r in conn.execute("SELECT DISTINCT dataset FROM entries WHERE kind != 'genesis' "
                                                "ORDER BY dataset")]
            out = {}
            for name in names:
                spent, delta, cap, count = self._budget(conn, name)
                out[name] = BudgetStatus(name, spent, cap, delta, count)
        return out

    # -- integrity -----------------------------------------------------------------------------
    def head(self) -> tuple[int, str]:
        """The last entry's id and hash."""
        with self._connect() as conn:
            row = conn.execute("SELECT last_id, hash FROM head WHERE one = 1").fetchone()
        return (0, GENESIS_HASH) if row is None else (int(row[0]), str(row[1]))

    def ledger_id(self) -> str:
        with self._connect() as conn:
            row = conn.execute("SELECT ledger_id FROM head WHERE one = 1").fetchone()
        return "" if row is None else str(row[0])

    def verify(self) -> LedgerProblem | None:
        """``None`` when the chain and both heads are intact, else the first problem."""
        with self._connect() as conn:
            return self._check(conn)[0]

    def _check(self, conn) -> tuple[LedgerProblem | None, int, str]:
        """The first problem (or None) with the last entry's id and hash, all read at one moment.

        The chain, the head row, SQLite's sequence and the head file must be read from one
        state: read statement by statement (autocommit), a release another process committed
        in between looked like entries deleted at the end. Outside a write transaction the
        check therefore holds a read transaction: in SQLite's rollback-journal mode (the
        ledger's) no writer commits while it is held, and the head file, replaced only after
        a commit, is then never ahead of what the check reads.
        """
        if conn.in_transaction:  # a write transaction (BEGIN IMMEDIATE): already one state
            return self._check_state(conn)
        conn.execute("BEGIN")
        try:
            return self._check_state(conn)
        finally:
            if conn.in_transaction:
                conn.execute("COMMIT")

    def _check_state(self, conn) -> tuple[LedgerProblem | None, int, str]:
        problem, last_id, last_hash, ledger_id = _find_problem(conn)
        if problem is not None:
            return problem, 0, ""
        try:
            head = self._read_head_file()
        except LedgerError as error:
            return LedgerProblem(0, str(error)), 0, ""
        if head is None:
            # a ledger without its head file: recreate it from the (intact) chain
            self._write_head_file(conn)
            return None, last_id, last_hash
        if head["ledger"] != ledger_id:
            return LedgerProblem(0, f"this is not the ledger dpdesk last used here: {self.head_path.name} names "
                                    f"ledger {head['ledger'][:8]}…, the file holds ledger {ledger_id[:8]}… (a different "
                                    "ledger file was put in its place)"), 0, ""
        if head["entries"] > last_id:
            return LedgerProblem(last_id + 1, f"it is missing: dpdesk's record ({self.head_path.name}) says the ledger "
                                              f"held {head['entries']} entries and only {last_id} remain (rewound or "
                                              "restored from an old copy)"), 0, ""
        recorded = conn.execute("SELECT hash FROM entries WHERE id = ?", (head["entries"],)).fetchone()
        if recorded is None or recorded[0] != head["hash"]:
            return LedgerProblem(int(head["entries"]), f"its hash differs from the one dpdesk's record "
                                                       f"({self.head_path.name}) remembers: it was replaced"), 0, ""
        if head["entries"] < last_id:  # a crash after a commit: the database extends the record
            self._write_head_file(conn)
        return None, last_id, last_hash

    def _require_intact(self, conn) -> tuple[int, str]:
        problem, last_id, last_hash = self._check(conn)
        if problem is not None:
            raise LedgerError(
                f"The budget ledger {self.path} is broken at {problem}. The privacy budget it records can no "
                "longer be trusted, so no release is made. Restore the ledger from a backup (or keep it as "
                "evidence and start a new one with `dpdesk ledger new --reason \"…\"`, which is recorded).")
        return last_id, last_hash

    def verify_reference(self, reference: dict) -> str | None:
        """Check an exported release's reference (:func:`dpdesk.report.export.read_export_reference`)
        against this ledger: ``None`` if it matches, else why not."""
        if reference["ledger"] != self.ledger_id():
            return (f"it was recorded in another ledger ({reference['ledger'][:8]}…), not this one "
                    f"({self.ledger_id()[:8]}…): this ledger was replaced since")
        with self._connect() as conn:
            row = conn.execute("SELECT * FROM entries WHERE id = ?", (reference["entry"],)).fetchone()
        if row is None:
            return f"its entry #{reference['entry']} is missing from the ledger (deleted or rewound)"
        entry = _decode(row)
        if entry.hash != reference["entry_hash"]:
            return f"entry #{entry.id} of the ledger is not the one it was recorded as (its hash differs)"
        for name, digest in reference.get("files", {}).items():
            if entry.files.get(name) not in (None, digest):
                return f"{name} differs from what entry #{entry.id} recorded"
        return None


def _row(entry_id: int, kind: str, *, time: str | None = None, dataset: str = "", fingerprint: str = "",
         mechanism: str = "", parameters=None, epsilon: float = 0.0, delta: float = 0.0, budget=None,
         software: str | None = None, files=None, payload: bytes | None = None, payload_sha256: str | None = None,
         cap: float | None = None, overrides=None, reason: str = "", prev_hash: str) -> dict:
    row = {
        "id": entry_id, "time": time or _now(), "kind": kind, "dataset": dataset, "fingerprint": fingerprint,
        "mechanism": mechanism, "parameters": _json(parameters or {}), "epsilon": float(epsilon),
        "delta": float(delta), "budget": _json(budget or []), "software": software or f"dpdesk {__version__}",
        "files": _json(files or {}), "payload": payload,
        "payload_sha256": payload_sha256 or pack_payload(None)[1], "cap": cap, "overrides": _json(overrides or []),
        "reason": reason, "prev_hash": prev_hash,
    }
    row["hash"] = entry_hash(row)
    return row


def _append(conn, row: dict) -> None:
    columns = _COLUMNS + ("payload", "hash")
    conn.execute(f"INSERT INTO entries ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                 [row[c] for c in columns])


def _advance_head(conn, last_id: int, last_hash: str) -> None:
    conn.execute("UPDATE head SET last_id = ?, hash = ? WHERE one = 1", (last_id, last_hash))


def _find_problem(conn) -> tuple[LedgerProblem | None, int, str, str]:
    """Walk the chain: (first problem or None, last id, last hash, ledger id)."""
    expected_id, previous, ledger_id = 1, GENESIS_HASH, ""
    for row in conn.execute("SELECT * FROM entries ORDER BY id"):
        stored = dict(row)
        if stored["id"] != expected_id:
            return LedgerProblem(expected_id, "it is missing: it was deleted from the ledger"), 0, "", ""
        if stored["prev_hash"] != previous:
            return LedgerProblem(expected_id, f"it does not carry the hash of entry #{expected_id - 1}: an entry "
                                              "before it was replaced, or this one was changed"), 0, "", ""
        try:
            intact = entry_hash(stored) == stored["hash"]
            blob = stored["payload"]
            intact = intact and hashlib.sha256(blob if blob is not None else b"").hexdigest() == \
                stored["payload_sha256"]
        except (TypeError, ValueError):
            intact = False
        if not intact:
            return LedgerProblem(expected_id, "its content does not match its hash: it was edited after "
                                              "it was recorded"), 0, "", ""
        if stored["kind"] not in KINDS or not (stored["epsilon"] >= 0 and 0 <= stored["delta"] < 1):
            return LedgerProblem(expected_id, "it records an impossible budget (ε below 0 or δ outside [0, 1))"), \
                0, "", ""
        if (expected_id == 1) != (stored["kind"] == "genesis"):
            return LedgerProblem(expected_id, "the ledger's first entry must be its genesis, and only the "
                                              "first"), 0, "", ""
        if expected_id == 1:
            try:
                ledger_id = str(json.loads(stored["parameters"])["ledger"])
            except (ValueError, KeyError, TypeError):
                return LedgerProblem(1, "the genesis entry does not name the ledger"), 0, "", ""
        previous = stored["hash"]
        expected_id += 1
    last_id = expected_id - 1
    if last_id == 0:
        return LedgerProblem(1, "the ledger has no entries at all, not even its genesis: it was emptied"), 0, "", ""
    head = conn.execute("SELECT ledger_id, last_id, hash FROM head WHERE one = 1").fetchone()
    if head is None:
        return LedgerProblem(0, "the ledger's head record was deleted"), 0, "", ""
    sequence = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'entries'").fetchone()
    highest_ever = max(int(head[1]), int(sequence[0]) if sequence else 0)
    if highest_ever > last_id:
        return LedgerProblem(last_id + 1, f"it is missing: the ledger had {highest_ever} entries and only "
                                          f"{last_id} remain (deleted at the end)"), 0, "", ""
    if head[1] < last_id:
        return LedgerProblem(int(head[1]) + 1, "it was added outside dpdesk (the ledger's head does not "
                                               "include it)"), 0, "", ""
    if head[2] != previous:
        return LedgerProblem(last_id, "the last entry was replaced (its hash differs from the one the "
                                      "ledger's head remembers)"), 0, "", ""
    if head[0] != ledger_id:
        return LedgerProblem(0, "the ledger's head names another ledger than its genesis entry"), 0, "", ""
    return None, last_id, previous, ledger_id


def _replace_while_read(source, target, attempts: int = 40) -> None:
    """``os.replace``, tried again for a moment when Windows refuses it: a file another process has
    open (reading the head to check the ledger) cannot be replaced there until it is closed."""
    import time

    for attempt in range(attempts):
        try:
            os.replace(source, target)
            return
        except PermissionError:
            if attempt == attempts - 1:
                raise
            time.sleep(0.05)


def _keys(fingerprint: str, source: str | None) -> str:
    """The fingerprint column: the content fingerprint, then the raw source's digest when known."""
    return fingerprint if not source or source == fingerprint else f"{fingerprint} {source}"


def _wait_for_lock(path, cancel, waiting):
    """A lock of :meth:`Ledger.reserve`: at once if free, else after ``waiting()``, polling for Cancel."""
    import time

    try:
        return locks.acquire(path, blocking=False)
    except locks.LockBusy:
        pass
    if waiting is not None:
        waiting()
    while True:
        if cancel is not None:
            cancel.check()
        try:
            return locks.acquire(path, blocking=False)
        except locks.LockBusy:
            time.sleep(0.05)


def check_dataset_name(name) -> str:
    """A declared dataset name: the population the data is about (the ledger's key)."""
    text = str(name or "").strip()
    if not text:
        raise ParameterError("Name the dataset: which people is this data about? (--dataset NAME; the budget "
                             "ledger adds up every release about the same people under that name).")
    if len(text) > 200 or any(ord(c) < 32 for c in text):
        raise ParameterError("The dataset name must be one line of at most 200 characters.")
    return text


def _renamed(dataset: str, others: set[str]) -> str:
    names = ", ".join(f"'{n}'" for n in sorted(others))
    return (f"This data (the same content, or the same file read another way) was already released as dataset "
            f"{names}, and releases about the same people must "
            f"share one budget. Release it under that name (--dataset {sorted(others)[0]!r}), or, if '{dataset}' "
            "really is the right name, say so explicitly (--override-dataset-check; recorded in the ledger). "
            "No noise was drawn.")


def _refusal(dataset: str, epsilon: float, spent: float, cap: float, outcome: str) -> str:
    return (f"This release would spend ε = {epsilon:g} on dataset '{dataset}', which has already spent "
            f"ε = {spent:.6g} of its cap ε = {cap:g}: the total would be {spent + epsilon:.6g}. {outcome} Choose a "
            f"smaller ε, raise the cap (dpdesk ledger cap {dataset!r} EPSILON --reason \"…\"), or override the cap "
            "explicitly (--override-cap on the command line, the checkbox in the app) — the override is recorded "
            "in the ledger.")
