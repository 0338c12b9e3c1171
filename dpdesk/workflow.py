"""The steward's workflow steps, shared by the CLI and the GUI (neither holds DP logic).

:func:`release_to_files` is the one way a release leaves dpdesk, in this order:

1. **Before the data is read** (:func:`check_request`): mechanism, ε and parameters; the
   declared item (or cell) domain — a release publishes it, so it must be declared; the
   checks a mechanism makes against the domain (e.g. FPA's ρ against d); the dataset's
   budget cap in the ledger; the output folder (a folder, writable, no clashing files, and
   a lock against another release to it). Every refusal here is decided from declared
   inputs and spends nothing.
2. Read the data; the ledger checks that this content was not already released under
   another dataset name (renaming must not reset the budget).
3. Apply the declared domain (:mod:`dpdesk.data.domain`): items outside it are dropped,
   or, for ``discover``, the domain is chosen privately with a δ, by the route
   :func:`discovery_plan` settles from declared inputs (one pass with the counts, or a share
   of ε first; :mod:`dpdesk.evaluation.discovery`).
4. Run the mechanism with the operating system's CSPRNG.
5. Record the release in the ledger — the ε is spent from here on, and the released
   values are kept in the entry, so ``dpdesk export --entry N`` can always write the files
   again without new noise.
6. Write the files: staged outside the public folder, moved in at the end; the internal
   report never goes into the public folder.

A step that stops after the data was used (a mechanism's :class:`~dpdesk.errors.ChargedRefusal`,
or a discovered domain that leaves nothing to release) is recorded as spent, and says so.
A crash before 5 publishes and spends nothing; after 5, every error says the ε was
recorded and how to write the files.
"""

from __future__ import annotations

import hashlib
import math
from glob import escape as glob_escape
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import scipy.sparse as sp

from . import locks
from . import mechanisms as registry
from .data.domain import (DOMAINS_CHOICES_TEXT, HOW_DISCOVERED, HOW_LIST, HOW_PUBLIC_DATA, ITEMS_CHOICES_TEXT,
                          CellDomain, DomainDeclaration, PublicView, cell_domain_of, check_identifier_labels,
                          declared_cell_domain, declared_domain, project, public_data_domain, read_domains_file,
                          restrict_cells)
from .data.loader import unit_of_privacy
from .errors import ChargedRefusal, DpdeskError, EmptyData, ExportError, ParameterError
from .evaluation.discovery import DiscoveryPlan, cell_discovery_share, chance_text, plan_discovery
from .mechanisms.publish import publish, unrounded_release
from .data.fingerprint import source_digest
from .mechanisms.running import content_fingerprint, origin_of, run
from .privacy.budget import BudgetSplit, check_epsilon
from .mechanisms.discovery import ONE_PASS, ONE_PASS_NOTE, discover_cell_domains, discover_items, stability_histogram
from .report.export import (RAW_PREFIX, RELEASE_FORMATS, render_release, require_recorded, require_release,
                            sha256_bytes)
from .tasks import CancelToken, ProgressFn, no_progress

DEFAULT_CHOSEN = "chosen before looking at results"
CHOSEN_ON_TRUE_DATA = "chosen after comparing mechanisms on the true data (this choice used the data)"
CHOSEN_ON_STANDIN = "chosen after comparing mechanisms on stand-in data (no true data used)"
NOT_COMPARED = "no comparison was run in dpdesk for this release"
REPORT_FILES = {"html": "privacy-report.html", "pdf": "privacy-report.pdf"}
# the internal report is always written as HTML, and also as PDF when the public one is
INTERNAL_REPORT_FILES = {"html": "internal-report-NOT-FOR-PUBLICATION.html",
                         "pdf": "internal-report-NOT-FOR-PUBLICATION.pdf"}
INTERNAL_REPORT_FILE = INTERNAL_REPORT_FILES["html"]
DATA_FILES = ("release.csv", "release.parquet")  # their hashes go into the ledger entry
STAGING_PREFIX = ".dpdesk-staging-"


def output_names(formats, reports) -> list[str]:
    """The public files an export writes (the internal report goes elsewhere)."""
    formats, reports = list(formats), list(reports)
    if not formats:
        raise ParameterError("Choose at least one release format (csv, json, parquet).")
    unknown = [f for f in formats if f not in RELEASE_FORMATS]
    if unknown:
        raise ParameterError(f"Unknown release format(s): {', '.join(unknown)}; choose from "
                             + ", ".join(RELEASE_FORMATS) + ".")
    names = [f"release.{f}" for f in formats]
    for r in reports:
        if r not in REPORT_FILES:
            raise ParameterError(f"Unknown report format '{r}'; choose html and/or pdf.")
        names.append(REPORT_FILES[r])
    return names


def default_dataset_name(path) -> str:
    """The dataset name when none is declared: the file's name without extension(s)."""
    name = Path(str(path)).name
    for suffix in (".gz",):
        name = name.removesuffix(suffix)
    stem = name.rsplit(".", 1)[0] if "." in name.strip(".") else name
    return stem or name


def internal_reports_dir() -> Path:
    """Where internal reports go by default: the steward's dpdesk folder, never a public one."""
    from .paths import user_data_dir

    return user_data_dir() / "internal-reports"


# --- the output folder: checked and locked before any noise -----------------------------------------

@dataclass
class ExportTarget:
    """An output folder checked for an export and locked against other releases to it.

    Use as a context manager (or call :meth:`close`): the lock is held until then.
    """

    folder: Path
    names: list[str]
    force: bool = False
    _lock: object = field(default=None, repr=False)

    def __enter__(self) -> "ExportTarget":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._lock is not None:
            locks.release(self._lock)
            self._lock = None


def prepare_export(out_dir, names, *, force: bool = False) -> ExportTarget:
    """Check the output folder for ``names`` and lock it; ``ExportError`` (nothing spent) if unusable.

    The folder may exist (then it must be a writable folder) or be creatable; no file of
    ``names`` may exist unless ``force``; no other release may be writing to it.
    """
    folder = Path(out_dir).expanduser()
    absolute = Path(os.path.abspath(folder))
    try:
        # the files are staged beside the folder, then moved in: both places must take a file
        require_writable_folder(absolute, "The output folder")
        if absolute.is_dir():
            require_writable_folder(absolute.parent, "The output folder's parent")
        for name in names:
            path = absolute / name
            if path.is_dir():
                raise ExportError(f"{folder / name} is a folder; cannot write a file there. No noise was drawn.")
            if path.exists() and not force:
                raise ExportError(f"{folder / name} already exists. Choose another folder, or allow overwriting "
                                  "(--force on the command line). No noise was drawn.")
    except OSError as error:  # a name too long, a loop of links…
        raise ExportError(f"Cannot use {folder} as the output folder: {error.strerror or error}. No noise was "
                          "drawn.") from None
    lock = _lock_folder(absolute)
    if not force:  # the folder may have changed while we waited for nothing: check again under the lock
        for name in names:
            if (absolute / name).exists():
                locks.release(lock)
                raise ExportError(f"{folder / name} already exists. No noise was drawn.")
    return ExportTarget(absolute, list(names), force, lock)


def require_writable_folder(folder: Path, what: str, consequence: str = "No noise was drawn.") -> None:
    """``ExportError`` (nothing spent) unless a file can be made in ``folder`` or, when it does
    not exist yet, in its nearest existing ancestor (where it would be created).

    Tried, not inferred from permission bits: root may write anywhere by the bits, yet not in
    /proc, on a read-only mount or a full disk.
    """
    existing = folder
    while not existing.exists():
        if existing.parent == existing:
            break
        existing = existing.parent
    if existing.exists() and not existing.is_dir():
        where = "is a file" if existing == folder else f"lies under {existing}, which is a file"
        raise ExportError(f"{what} {folder} {where}. Choose a folder. {consequence}")
    try:
        probe = tempfile.mkdtemp(dir=existing, prefix=".dpdesk-write-test-")
        os.rmdir(probe)
    except PermissionError:
        raise ExportError(f"Cannot write to {existing}: permission denied. Choose another folder. "
                          f"{consequence}") from None
    except OSError as error:
        raise ExportError(f"Cannot write to {existing}: {error.strerror or error}. Choose another folder. "
                          f"{consequence}") from None


def _lock_folder(folder: Path):
    from .paths import user_data_dir

    try:
        return locks.acquire(locks.lock_path(user_data_dir() / "locks", os.path.realpath(folder)), blocking=False)
    except locks.LockBusy:
        raise ExportError(f"Another release is being written to {folder} right now. Wait for it to finish, or "
                          "choose another folder. No noise was drawn.") from None


def write_export(target: ExportTarget, files: dict[str, bytes]) -> list[Path]:
    """Write ``{name: bytes}`` into the target folder, whole or not at all.

    Every file is first written and fsynced in a staging folder beside the target (never
    inside it), then moved in. When the target folder does not exist yet (or is empty), the
    staging folder itself is renamed into place: all files appear at once. Into a folder
    that already holds files (overwriting with ``force``) each file is replaced atomically,
    one by one. Stale staging folders of crashed exports are cleared first.
    """
    folder = target.folder
    parent = folder.parent
    _clear_stale_staging(parent, folder.name)
    if folder.is_dir():  # temporaries an earlier dpdesk left inside the folder (it staged there)
        for name in [*files, *INTERNAL_REPORT_FILES.values()]:
            for stale in folder.glob(f".{glob_escape(name)}.*.part"):
                stale.unlink(missing_ok=True)
    try:
        parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=parent, prefix=f"{STAGING_PREFIX}{folder.name}-"))
        os.chmod(staging, 0o777 & ~_umask())  # mkdtemp makes it owner-only; the folder it becomes should not be
    except PermissionError:
        raise ExportError(f"Cannot write to {parent}: permission denied.") from None
    except OSError as error:
        raise ExportError(f"Cannot write the release files in {parent}: {error.strerror or error}.") from None
    try:
        for name, content in files.items():
            with open(staging / name, "wb") as handle:
                handle.write(content)
                handle.flush()
                os.fsync(handle.fileno())
        _fsync_dir(staging)
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()  # an empty folder is replaced whole, like a new one
        if not folder.exists():
            os.rename(staging, folder)  # all files appear at once
            staging = None
        else:
            for name in files:
                if (folder / name).exists() and not target.force:
                    raise ExportError(f"{folder / name} appeared while writing; nothing was overwritten.")
            for name in files:
                os.replace(staging / name, folder / name)
        _fsync_dir(folder)
        _fsync_dir(parent)
    except PermissionError as error:
        raise ExportError(f"Cannot write to {error.filename or folder}: permission denied.") from None
    except OSError as error:
        raise ExportError(f"Cannot write the release files: {error.strerror or error}.") from None
    finally:
        if staging is not None and staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return [folder / name for name in files]


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _clear_stale_staging(parent: Path, name: str) -> None:
    """Remove staging folders left by a crashed export to the same folder (public content only)."""
    if not parent.is_dir():
        return
    pattern = re.compile(re.escape(f"{STAGING_PREFIX}{name}-") + r"[A-Za-z0-9_]+$")
    for entry in parent.iterdir():
        if pattern.match(entry.name) and entry.is_dir():
            shutil.rmtree(entry, ignore_errors=True)


def _fsync_dir(folder) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# --- before the data is read ----------------------------------------------------------------------

@dataclass
class Declared:
    """What :func:`check_request` established before the data was read."""

    mechanism: object
    epsilon: float
    params: dict
    dataset: str
    items: DomainDeclaration | None
    domain: object = None  # the item domain, when known without the data (a list or a range)
    cell_domains: dict | None = None  # attribute domains from a --domains file
    discovery: DiscoveryPlan | None = None  # how ``--items discover`` will run (declared inputs only)


def discovery_plan(items: DomainDeclaration | None, mechanism_id: str, epsilon, params: dict) -> DiscoveryPlan | None:
    """The discovery a release will run, from declared inputs only (None unless items are discovered).

    Its route, threshold and the stand-in's expectations (how many items, the chance of none)
    can be shown before anything is spent: ``dpdesk release --dry-run``, and the GUI."""
    if items is None or items.kind != HOW_DISCOVERED or items.cells:
        return None
    mechanism = registry.get(mechanism_id)
    eps = check_epsilon(epsilon)
    return plan_discovery(items, mechanism.id, eps, mechanism.validate(None, eps, params))


def check_request(mechanism_id: str, epsilon, params: dict, *, dataset: str, items: DomainDeclaration | None,
                  ledger=None, override_cap: bool = False, carried=None, attributes=None) -> Declared:
    """Every check that needs only declared inputs: refuse here, before the data is read.

    ``carried`` is the domain the data already carries (declared through the API), when
    ``items`` is None; ``attributes`` the attribute columns the import will use (for cells
    declared with a domains file: the mechanism is checked against their m before reading).
    """
    from .privacy.ledger import Ledger, check_dataset_name

    mechanism = registry.get(mechanism_id)
    if not mechanism.releasable:
        raise ParameterError(f"'{mechanism_id}' is a non-private comparison aid and cannot be released.")
    eps = check_epsilon(epsilon)
    dataset = check_dataset_name(dataset)
    mechanism.validate(None, eps, params)  # parameter types and ranges
    if items is None and carried is not None:
        mechanism.validate(PublicView(mechanism.data_kind, carried, dataset), eps, params)
        ledger = ledger if ledger is not None else Ledger.open()
        ledger.check(dataset, eps, override=override_cap)
        return Declared(mechanism, eps, params, dataset, None, domain=carried)
    if items is None:
        raise ParameterError(ITEMS_CHOICES_TEXT if mechanism.data_kind == "incidence" else DOMAINS_CHOICES_TEXT)
    if items.cells != (mechanism.data_kind == "cells"):
        raise ParameterError(kind_mismatch(mechanism))
    declared = Declared(mechanism, eps, params, dataset, items)
    if items.kind == HOW_DISCOVERED:
        if items.cells:
            mechanism.validate(None, eps * (1 - cell_discovery_share(items)), params)
        else:
            declared.discovery = discovery_plan(items, mechanism_id, eps, params)
            mechanism.validate(None, declared.discovery.mechanism_epsilon, params)
    elif not items.cells:
        declared.domain = declared_domain(items)
        if declared.domain is not None:
            mechanism.validate(PublicView("incidence", declared.domain), eps, params)
    elif items.kind == HOW_LIST:
        declared.cell_domains = read_domains_file(items.path)
        cells = declared_cell_domain(items.path, attributes)
        if cells is not None:
            mechanism.validate(PublicView("cells", cells, dataset), eps, params)
    ledger = ledger if ledger is not None else Ledger.open()
    ledger.check(dataset, eps, override=override_cap)  # the cap: before reading, before any noise
    return declared


def kind_mismatch(mechanism) -> str:
    """One sentence for a mechanism given the other shape of data (or its declaration), with the way out.

    The sparse summaries (Cormode) bound a person's influence by one record, one cell: a basket
    holds several items, for which their noise is not made. So a basket file is released with an
    item mechanism (each person truncated to Δ items), a table of records with a summary."""
    if mechanism.data_kind == "cells":
        return (f"'{mechanism.id}' summarises a table in which each person is one record (one cell), declared with "
                "--domains; a basket file, where one person holds several items, is released with an item "
                "mechanism such as lpa or gs and --items … --bound Δ (dpdesk mechanisms lists them).")
    return (f"'{mechanism.id}' counts the items of baskets (people × items), declared with --items; a table of "
            "records is summarised by geometric, filter, threshold, priority, … with --domains (dpdesk mechanisms "
            "lists them).")


# --- how the mechanism was chosen: what the steward states, what dpdesk observed ------------------

def observed_choice(runs) -> str:
    """What dpdesk saw of the comparisons before a release, in words (``runs``: see ``comparison_run``)."""
    runs = list(runs or [])
    if not runs:
        return NOT_COMPARED
    parts = []
    for on_true in (True, False):
        chosen = [r for r in runs if bool(r.get("on_true_data")) == on_true]
        if not chosen:
            continue
        mechanisms = sorted({m for r in chosen for m in r.get("mechanisms", [])})
        epsilons = sorted({float(e) for r in chosen for e in r.get("epsilons", [])})
        where = "on the true data" if on_true else \
            "on a stand-in (" + "; ".join(sorted({str(r.get("standin") or "stand-in data") for r in chosen})) + ")"
        parts.append(f"{where}: {', '.join(mechanisms)} at ε = {', '.join(f'{e:g}' for e in epsilons)}"
                     + (f" ({len(chosen)} comparisons)" if len(chosen) > 1 else ""))
    return "before this release, dpdesk compared mechanisms " + " and ".join(parts)


def comparison_run(mechanisms, epsilons, *, on_true_data: bool, standin: str = "") -> dict:
    """One comparison as the project file and ``observed_choice`` keep it (public settings only)."""
    return {"on_true_data": bool(on_true_data), "standin": standin, "mechanisms": list(mechanisms),
            "epsilons": [float(e) for e in epsilons]}


def stated_default(runs, recommended: str | None = None) -> str:
    """The statement the GUI proposes, from what was observed (the steward may change it).

    ``recommended`` is the recommendation's ``chosen_how`` when the mechanism to release is the
    one dpdesk recommended from declared facts; a comparison on the true data still wins, since
    the data was then seen before the choice.
    """
    runs = list(runs or [])
    if any(r.get("on_true_data") for r in runs):
        return CHOSEN_ON_TRUE_DATA
    if recommended:
        return recommended
    return CHOSEN_ON_STANDIN if runs else DEFAULT_CHOSEN


def budget_at(ledger, dataset: str, entry_id: int) -> dict:
    """The dataset's spending and cap as of a ledger entry (the same whenever it is asked, for re-export)."""
    from .privacy.ledger import DEFAULT_CAP, SPENDING_KINDS

    entries = [e for e in ledger.entries(dataset) if e.id <= entry_id]
    spending = [e for e in entries if e.kind in SPENDING_KINDS]
    caps = [e for e in entries if e.kind == "cap"]
    return {"dataset": dataset, "epsilon_spent": math.fsum(e.epsilon for e in spending),
            "delta_spent": math.fsum(e.delta for e in spending), "releases": len(spending),
            "cap": caps[-1].cap if caps else DEFAULT_CAP}


def _refer_to_entry(release, ledger, entry, dataset: str) -> None:
    """The ledger entry a release was recorded as, and the dataset's budget as of that entry (public)."""
    release.report["ledger"] = {"entry": entry.id, "entry_hash": entry.hash, "ledger": ledger.ledger_id()}
    release.report["dataset_budget"] = budget_at(ledger, dataset, entry.id)


def declaration_of(data, items: DomainDeclaration | None):
    """The declaration a dataset already carries, when none is given (GUI and API paths)."""
    if items is not None:
        return items
    if getattr(data, "domain", None) is not None:
        return None
    raise ParameterError(ITEMS_CHOICES_TEXT if data.kind == "incidence" else DOMAINS_CHOICES_TEXT)


# --- the release ----------------------------------------------------------------------------------

def secure_release(data, mechanism_id: str, epsilon, params: dict, *, dataset: str | None = None,
                   items: DomainDeclaration | None = None, domain=None, chosen_how: str | None = None,
                   observed: str | None = None, raw: bool = False,
                   override_cap: bool = False, override_name: bool = False, ledger=None, formats=("csv",),
                   progress: ProgressFn | None = None, cancel: CancelToken | None = None):
    """Steps 2–5: the name check, the domain, the secure run, publication, the ledger record.

    ``data`` is the data as read; ``items`` how its domain is declared (``None``: the data
    already carries a declared domain, e.g. from :func:`dpdesk.declare`); ``domain`` the
    item domain already read by :func:`check_request`. ``chosen_how`` is how the steward
    says the mechanism was chosen, ``observed`` what dpdesk saw (:func:`observed_choice`;
    default: no comparison). ``raw`` publishes the mechanism's raw values instead of whole
    numbers (:func:`dpdesk.mechanisms.publish.publish`). Returns ``(release, files)``: the
    release as published (recorded; its entry in ``release.report['ledger']``) and its
    rendered data files. The budget is spent from the moment the entry is recorded, whether
    or not the files are exported later.
    """
    from .privacy.ledger import Ledger, check_dataset_name
    from .privacy.randomness import SecureRandom

    progress = progress or no_progress
    items = declaration_of(data, items)
    if items is not None and items.kind == HOW_PUBLIC_DATA:
        check_identifier_labels(data)
    dataset = check_dataset_name(dataset or getattr(data, "name", ""))
    mechanism = registry.get(mechanism_id)
    if not mechanism.releasable:
        raise ParameterError(f"'{mechanism_id}' is a non-private comparison aid and cannot be released.")
    eps = check_epsilon(epsilon)
    mechanism.validate(None, eps, params)
    if data.kind != mechanism.data_kind:  # the file's format decided it: before any noise, nothing spent
        raise ParameterError(kind_mismatch(mechanism))
    output_names(formats, ())  # an unknown format is refused before any noise
    ledger = ledger if ledger is not None else Ledger.open()
    fingerprint = content_fingerprint(data)
    source = source_digest(getattr(origin_of(data), "source", None))
    progress(0.05, "Checking the privacy budget")
    # from the check to the record, no other release of this dataset (or of this data) can be
    # checked: it would not see this one's ε (Ledger.reserve)
    with ledger.reserve(dataset, (fingerprint, source), cancel=cancel,
                        waiting=lambda: progress(0.05, f"Waiting for another release of '{dataset}' to be recorded")):
        ledger.check(dataset, eps, fingerprint=fingerprint, source=source, override=override_cap,
                     override_name=override_name)

        discovery = None
        plan = discovery_plan(items, mechanism_id, eps, params)  # declared inputs only
        one_pass = plan is not None and plan.route == ONE_PASS
        if items is not None and items.kind == HOW_DISCOVERED:
            progress(0.08, "Discovering the items privately")
            if one_pass:  # the counts that choose the items are the release: all of ε in one step
                found, noisy = stability_histogram(data, eps, items.delta, plan.discovery_bound, SecureRandom())
                released = project(data, found)
                discovery = BudgetSplit(eps).add("discover the items and count them (one pass)", eps,
                                                 found.statement(), delta=found.delta)
            elif data.kind == "incidence":
                discovery = BudgetSplit(plan.discovery_epsilon)
                found = discover_items(data, discovery.total, items.delta, plan.discovery_bound, SecureRandom())
                released = project(data, found)
                discovery.add("discover the items (noisy threshold)", discovery.total, found.statement(),
                              delta=found.delta)
            else:
                discovery = BudgetSplit(eps * cell_discovery_share(items))
                found = discover_cell_domains(data, discovery.total, items.delta, SecureRandom())
                released = restrict_cells(data, found)
                discovery.add("discover the attribute values (noisy threshold)", discovery.total,
                              found.statement(), delta=found.delta)
            mechanism_eps = eps if one_pass else eps - discovery.total
            if found.size == 0:
                chances = ("" if plan is None else " Before the release, a stand-in gave this a chance of "
                           f"{chance_text(plan.chosen.chance_nothing)}.")
                _charge(ledger, dataset, (fingerprint, source), mechanism_id, params, discovery,
                        "No item passed the discovery threshold, so there is nothing to release." + chances)
            try:
                mechanism.validate(PublicView(released.kind, released.domain, dataset), mechanism_eps, params)
            except ParameterError as error:
                _charge(ledger, dataset, (fingerprint, source), mechanism_id, params, discovery,
                        f"The discovered domain does not suit the mechanism: {error}")
        else:
            mechanism_eps = eps
            released = apply_domain(data, items, domain)
            if getattr(released.domain, "size", 1) == 0:  # a declared fact: the public labels are none
                raise ParameterError(f"The declared {'items' if released.kind == 'incidence' else 'cells'} are "
                                     "none (the file has no labels of its own), so there is nothing to release. "
                                     "No noise was drawn.")
        progress(0.1, "Running the mechanism with secure randomness")
        if one_pass:
            values = mechanism.validate(None, eps, params)
            release = mechanism.release_noisy_counts(released, eps, values, noisy, discovery, SecureRandom(),
                                                     {"rows_truncated": found.internal["rows truncated"]})
            release.dataset_fingerprint = fingerprint
            release.report["notes"].append(ONE_PASS_NOTE)
        else:
            try:
                release = run(released, mechanism_id, mechanism_eps, params, cancel=cancel)
            except ChargedRefusal as refusal:
                budget = refusal.budget
                if discovery is not None:
                    budget = _combined(discovery, budget, eps)
                _charge(ledger, dataset, (fingerprint, source), mechanism_id, params, budget, str(refusal))
            if discovery is not None:
                _prepend(release, discovery, eps)
        release.discovery_plan = plan
        require_release(release)
        release.data = released
        domain = getattr(released, "domain", None)
        release.internal.update(getattr(domain, "internal", None) or {})
        if getattr(released, "dropped_records", 0):
            release.internal["records dropped (a value outside the declared domains)"] = released.dropped_records
        release.dataset_name = dataset
        release.report["unit_of_privacy"] = unit_of_privacy(getattr(data, "source", None) or {}, data.kind)
        stated = (chosen_how or "").strip() or DEFAULT_CHOSEN
        release.report["how_chosen"] = stated  # read by earlier dpdesk versions and scripts
        release.report["choice"] = {"stated": stated, "observed": observed or NOT_COMPARED}
        publish(release, raw=raw)
        data_formats = [f for f in formats if f != "json"]
        files = render_release(release, data_formats)
        hashes = {name: sha256_bytes(content) for name, content in files.items()}
        recorded = dict(hashes)
        if release.unrounded is not None:  # the raw form's files too, so `export --entry N --raw` can be checked
            raw_files = render_release(unrounded_release(release), data_formats)
            recorded.update({RAW_PREFIX + name: sha256_bytes(content) for name, content in raw_files.items()})
        progress(0.8, "Recording the release in the budget ledger")
        entry = ledger.record(release, fingerprint, recorded, source=source, override=override_cap,
                              override_name=override_name)
        _refer_to_entry(release, ledger, entry, dataset)
        if "json" in formats:
            files.update(render_release(release, ["json"], data_hashes=hashes))
        return release, files


def apply_domain(data, items: DomainDeclaration | None, domain=None):
    """``data`` restricted to its declared (not discovered) domain; the data itself if it carries one."""
    if items is None:
        return data
    if data.kind == "incidence":
        if items.cells:
            raise ParameterError("This is incidence data: declare its items with --items. " + ITEMS_CHOICES_TEXT)
        if items.kind == HOW_PUBLIC_DATA:
            return project(data, public_data_domain(data))
        return project(data, domain if domain is not None else declared_domain(items))
    if not items.cells:
        raise ParameterError("This is a table of cells: declare its attribute values with --domains. "
                             + DOMAINS_CHOICES_TEXT)
    if items.kind == HOW_PUBLIC_DATA:
        return _with_cell_domain(data, cell_domain_of(data, HOW_PUBLIC_DATA, "the data file"))
    domains = read_domains_file(items.path)
    values = tuple(tuple(domains[a]) if a in domains else None for a in (data.attributes or []))
    if data.attributes is None or any(v is None for v in values):
        raise ParameterError(f"{Path(items.path).name} must give the values of every attribute: "
                             + ", ".join(data.attributes or []) + ".")
    return restrict_cells(data, CellDomain(tuple(data.attributes), values, HOW_LIST, Path(items.path).name))


def _with_cell_domain(cells, domain):
    import copy

    declared = copy.copy(cells)
    declared.domain, declared.origin = domain, cells
    return declared


def _charge(ledger, dataset, keys, mechanism_id, params, budget, why: str):
    fingerprint, source = keys
    entry = ledger.record_charged(dataset, fingerprint, mechanism_id, params, budget, why, source=source)
    spent = f"ε = {budget.spent:.4g}" + (f" and δ = {budget.delta:.3g}" if budget.delta else "")
    raise ChargedRefusal(f"{why} This used the data, so the {spent} it spent was recorded in the budget ledger "
                         f"(entry #{entry.id}). Nothing was published.", budget)


def _combined(first: BudgetSplit, second: BudgetSplit, total: float) -> BudgetSplit:
    spent = first.spent + second.spent
    combined = BudgetSplit(spent)
    for step in first.steps + second.steps:
        combined.add(step.name, step.epsilon, step.description, delta=step.delta)
    return combined


def _prepend(release, discovery: BudgetSplit, total: float) -> None:
    """Put the discovery step in front of the mechanism's budget: the release spends ``total``."""
    budget = _combined(discovery, release.budget, total).check()
    release.budget = budget
    release.epsilon = budget.total
    release.report["epsilon"] = budget.total
    release.report["budget"] = budget.as_list()


# --- export ---------------------------------------------------------------------------------------

def export_release(release, data, out_dir, *, formats=("csv", "json"), reports=(), internal_report: bool = False,
                   internal_dir=None, force: bool = False, pdf_writer: Callable[[str], bytes] | None = None,
                   comparison=None, files: dict | None = None, target: ExportTarget | None = None,
                   progress: ProgressFn | None = None, cancel: CancelToken | None = None,
                   advise_reexport: bool = True) -> list[Path]:
    """Step 6: write a recorded, secure release's files and reports, whole or not at all.

    The internal report (true figures) goes to ``internal_dir`` (default: the steward's
    dpdesk folder), never into the public folder. Any failure says the ε was already
    recorded and how to write the files again.
    """
    progress = progress or no_progress
    formats, reports = list(formats), list(reports)
    names = output_names(formats, reports)
    require_recorded(release)
    entry = (release.report.get("ledger") or {}).get("entry")
    owned = target is None
    try:
        if owned:
            target = prepare_export(out_dir, names, force=force)
        if "pdf" in reports and pdf_writer is None:
            from .report.pdf import html_to_pdf as pdf_writer
        rendered = dict(files or {})
        missing = [f for f in formats if f"release.{f}" not in rendered]
        if missing:
            rendered.update(render_release(release, missing))
        out_files = {f"release.{f}": rendered[f"release.{f}"] for f in formats}
        hashes = {name: sha256_bytes(content) for name, content in out_files.items()}
        if reports:
            from .report import public

            html = public.public_report_html(release, hashes)
            if "html" in reports:
                out_files[REPORT_FILES["html"]] = html.encode("utf-8")
            if "pdf" in reports:
                out_files[REPORT_FILES["pdf"]] = pdf_writer(html)
        internal = None
        if internal_report:
            from .report import internal as internal_report_module

            source = release.data if release.data is not None else data
            html = internal_report_module.internal_report_html(source, release, comparison=comparison)
            internal = {"html": html.encode("utf-8")}
            if "pdf" in reports:
                internal["pdf"] = pdf_writer(html)
        if cancel is not None:
            cancel.check()  # last moment to stop: nothing has been written yet
        progress(0.9, "Writing files")
        paths = write_export(target, out_files)
        if internal is not None:
            paths.extend(_write_internal(internal, release, internal_dir))
    except DpdeskError as error:
        if entry is None or not advise_reexport:
            raise
        raise type(error)(_after_recording(str(error), entry, out_dir)) if isinstance(error, ExportError) else \
            ExportError(_after_recording(str(error), entry, out_dir)) from None
    finally:
        if owned and target is not None:
            target.close()
    progress(1.0, "Exported")
    return paths


def _after_recording(message: str, entry: int, out_dir) -> str:
    return (f"{message} The release itself succeeded: its ε was recorded as spent (ledger entry #{entry}); run "
            f"`dpdesk export --entry {entry} --out FOLDER` with a folder that can take the files (such as "
            f"{out_dir}, once the problem is fixed) to write them without new noise.")


def _write_internal(contents: dict[str, bytes], release, internal_dir) -> list[Path]:
    """The internal report (HTML, and PDF when asked), owner-only, in the steward's folder."""
    folder = Path(internal_dir) if internal_dir is not None else internal_reports_dir()
    entry = (release.report.get("ledger") or {}).get("entry")
    written = []
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for kind, content in contents.items():
            base = INTERNAL_REPORT_FILES[kind]
            name = f"entry-{entry}-{base}" if entry is not None else base
            fd, temporary = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".part")
            with os.fdopen(fd, "wb") as handle:
                handle.write(content)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(temporary, 0o600)
            os.replace(temporary, folder / name)
            written.append(folder / name)
    except OSError as error:
        raise ExportError(f"Cannot write the internal report in {folder}: {error.strerror or error}.") from None
    return written


class Written(list):
    """The paths an export wrote, with the release they belong to (``.release``)."""

    release = None


def release_to_files(data, mechanism_id: str, epsilon, params: dict, out_dir, *, dataset: str | None = None,
                     items: DomainDeclaration | None = None, force: bool = False, formats=("csv", "json"),
                     reports=(), internal_report: bool = False, internal_dir=None, chosen_how: str | None = None,
                     observed: str | None = None, raw: bool = False,
                     override_cap: bool = False, override_name: bool = False,
                     pdf_writer: Callable[[str], bytes] | None = None, ledger=None, comparison=None,
                     attributes=None, progress: ProgressFn | None = None,
                     cancel: CancelToken | None = None) -> list[Path]:
    """Release with secure randomness, record it in the ledger and write the files (module notes).

    ``data`` may be the data itself, or a function that reads it — called only after every
    check on declared inputs has passed (so a refusal never depends on the data). Returns the
    paths written (a :class:`Written` list: ``.release`` is the release as published).
    """
    from .privacy.ledger import Ledger

    progress = progress or no_progress
    formats, reports = list(formats), list(reports)
    names = output_names(formats, reports)
    ledger = ledger if ledger is not None else Ledger.open()
    loaded = None if callable(data) else data
    if dataset is None and loaded is not None:
        dataset = loaded.name
    carried = loaded is not None and items is None and getattr(loaded, "domain", None) is not None
    declared = check_request(mechanism_id, epsilon, params, dataset=dataset, items=items, ledger=ledger,
                             override_cap=override_cap, carried=loaded.domain if carried else None,
                             attributes=attributes)
    if "pdf" in reports and pdf_writer is None:
        from .report.pdf import html_to_pdf as pdf_writer  # fails now (a missing library), not after the noise
    if internal_report:  # the internal report cannot be written again later: its folder must work now
        try:
            require_writable_folder(Path(os.path.abspath(Path(internal_dir).expanduser()))
                                    if internal_dir is not None else internal_reports_dir(),
                                    "The internal report's folder")
        except OSError as error:
            raise ExportError(f"Cannot use {internal_dir} for the internal report: {error.strerror or error}. "
                              "No noise was drawn.") from None
    with prepare_export(out_dir, names, force=force) as target:
        if loaded is None:
            progress(0.02, "Reading the data")
            try:
                loaded = data()  # as it is: the domain is applied after, so the fingerprint is of the whole file
            except EmptyData:
                loaded = no_one(declared)
        release, files = secure_release(loaded, mechanism_id, epsilon, params, dataset=dataset, items=items,
                                        domain=None if items is None else declared.domain, chosen_how=chosen_how,
                                        observed=observed, raw=raw, override_cap=override_cap,
                                        override_name=override_name, ledger=ledger, formats=formats,
                                        progress=progress, cancel=cancel)
        written = Written(export_release(release, loaded, out_dir, formats=formats, reports=reports,
                                         internal_report=internal_report, internal_dir=internal_dir,
                                         pdf_writer=pdf_writer, comparison=comparison, files=files, target=target,
                                         progress=progress))
        written.release = release
        return written


def no_one(declared: Declared):
    """The dataset of no people, for a release whose file (or query) holds no one.

    Refusing it would be a decision on the data — D = ∅ and D plus one person would differ
    in whether anything is released — so it is released like any data: every declared item
    (or cell) gets its noise. What cannot be released from it is refused by a declared fact
    (the file's own labels, stated to be public, are none).
    """
    from .data.dataset import CellCounts, Dataset

    name = declared.dataset
    if declared.mechanism.data_kind == "incidence":
        empty = Dataset(sp.csr_matrix((0, 0), dtype=np.uint8), np.array([], dtype=object), name=name)
    elif declared.items is not None and declared.items.kind == HOW_LIST:
        cells = declared_cell_domain(declared.items.path, None)
        empty = CellCounts(np.zeros(0, np.int64), np.zeros(0, np.int64), cells.size,
                           attributes=list(cells.attributes), domains=[list(v) for v in cells.values], name=name)
    else:
        raise ParameterError("The data holds no one, so it has no attribute values of its own to declare public. "
                             "Declare the values with --domains FILE to release the table. No noise was drawn.")
    # all empty data is alike: its fingerprint must not tie two populations' budgets together
    empty.fingerprint = hashlib.sha256(f"no one in {name}".encode("utf-8")).hexdigest()
    return empty


def reexport(entry_id: int, out_dir, *, formats=("csv", "json"), reports=(), force: bool = False, raw: bool = False,
             pdf_writer: Callable[[str], bytes] | None = None, ledger=None) -> list[Path]:
    """Write the files of a recorded release again, from its ledger entry (no new noise).

    ``raw``: the raw values of a release published as whole numbers (the ledger keeps them;
    the same noise, so no budget). Either way the data files are checked against the hashes
    the entry recorded for that form.
    """
    from .mechanisms.base import Release
    from .privacy.ledger import Ledger

    ledger = ledger if ledger is not None else Ledger.open()
    entry = ledger.entry(entry_id)
    record = entry.release_record()
    if entry.kind != "release" or record is None:
        raise ParameterError(f"Ledger entry #{entry_id} is a {entry.kind} entry, not a release with values to export.")
    release = Release.from_record(record)
    prefix = ""
    if raw and release.unrounded is not None:
        release, prefix = unrounded_release(release), RAW_PREFIX
    _refer_to_entry(release, ledger, entry, entry.dataset)
    files = render_release(release, list(formats))
    for name, content in files.items():
        digest = entry.files.get(prefix + name)
        if digest is not None and sha256_bytes(content) != digest:
            raise ExportError(f"Re-rendering entry #{entry_id} gives a {name} different from the one recorded "
                              "(a different dpdesk version?); nothing was written.")
    written = Written(export_release(release, None, out_dir, formats=formats, reports=reports, force=force,
                                     pdf_writer=pdf_writer, files=files, advise_reexport=False))
    written.release = release
    return written
