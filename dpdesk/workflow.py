"""The steward's workflow steps, shared by the CLI and the GUI (neither holds DP logic).

:func:`release_to_files` is the one way a release leaves dpdesk:

1. check mechanism, ε and parameters, and that no output file would be overwritten;
2. check the budget ledger's cap for this dataset — refused *before any noise is drawn*
   unless explicitly overridden;
3. run the mechanism with the operating system's CSPRNG;
4. render the release files in memory and hash them;
5. record the release in the ledger (one SQLite transaction);
6. write release files and reports atomically.

A crash before 5 publishes nothing; a crash between 5 and 6 leaves a ledger entry without
files, which over-counts the budget (the safe direction).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from . import api
from .errors import ParameterError
from .report.export import (RELEASE_FORMATS, check_targets, render_release, require_release, sha256_bytes,
                            write_files)
from .tasks import CancelToken, ProgressFn, no_progress

DEFAULT_CHOSEN = "chosen before looking at results"
REPORT_FILES = {"html": "privacy-report.html", "pdf": "privacy-report.pdf"}
# the internal report is always written as HTML, and also as PDF when the public one is
INTERNAL_REPORT_FILES = {"html": "internal-report-NOT-FOR-PUBLICATION.html",
                         "pdf": "internal-report-NOT-FOR-PUBLICATION.pdf"}
INTERNAL_REPORT_FILE = INTERNAL_REPORT_FILES["html"]


def output_names(formats, reports, internal_report: bool) -> list[str]:
    unknown = [f for f in formats if f not in RELEASE_FORMATS]
    if unknown:
        raise ParameterError(f"Unknown release format(s): {', '.join(unknown)}; choose from "
                             + ", ".join(RELEASE_FORMATS) + ".")
    names = [f"release.{f}" for f in formats]
    for r in reports:
        if r not in REPORT_FILES:
            raise ParameterError(f"Unknown report format '{r}'; choose html and/or pdf.")
        names.append(REPORT_FILES[r])
    if internal_report:
        names.extend(INTERNAL_REPORT_FILES[r] for r in ("html", "pdf") if r == "html" or r in reports)
    return names


def secure_release(data, mechanism_id: str, epsilon, params: dict, *, chosen_how: str | None = None,
                   override_cap: bool = False, ledger=None, formats=("csv",),
                   progress: ProgressFn | None = None, cancel: CancelToken | None = None):
    """Steps 2–5: ledger check, secure run, hashes of the rendered files, ledger record.

    Returns ``(release, files)``: the release (recorded in the ledger, its entry id in
    ``release.report['ledger_entry']``) and the rendered release files by name. The GUI
    calls this when the steward presses *Run release* — the budget is spent from then on,
    whether or not the files are exported later.
    """
    from .privacy.ledger import Ledger

    progress = progress or no_progress
    mechanism, eps, values = api.validate(data, mechanism_id, epsilon, params)
    if not mechanism.releasable:
        raise ParameterError(f"'{mechanism_id}' is a non-private comparison aid and cannot be released.")
    output_names(formats, (), False)  # an unknown format is refused before any noise
    ledger = ledger if ledger is not None else Ledger.open()
    progress(0.05, "Checking the privacy budget")
    ledger.check(data.fingerprint, eps, override=override_cap)  # raises BudgetError before any noise
    progress(0.1, "Running the mechanism with secure randomness")
    release = api.release(data, mechanism_id, epsilon=eps, rng=None, cancel=cancel, **params)
    require_release(release)
    release.report["how_chosen"] = chosen_how or DEFAULT_CHOSEN
    files = render_release(release, list(formats))
    hashes = {name: sha256_bytes(content) for name, content in files.items()}
    progress(0.8, "Recording the release in the budget ledger")
    entry = ledger.record(release, data, hashes, override=override_cap)
    release.report["ledger_entry"] = entry.id
    return release, files


def export_release(release, data, out_dir, *, formats=("csv", "json"), reports=(), internal_report: bool = False,
                   force: bool = False, pdf_writer: Callable[[str], bytes] | None = None, comparison=None,
                   files: dict | None = None, progress: ProgressFn | None = None,
                   cancel: CancelToken | None = None) -> list[Path]:
    """Step 6: write the release files and reports atomically (a recorded, secure release only)."""
    progress = progress or no_progress
    formats, reports = list(formats), list(reports)
    if not formats:
        raise ParameterError("Choose at least one release format (csv, json, parquet).")
    require_release(release)
    out = Path(out_dir)
    check_targets([out / name for name in output_names(formats, reports, internal_report)], force)
    if "pdf" in reports and pdf_writer is None:
        from .report.pdf import html_to_pdf as pdf_writer
    rendered = dict(files or {})
    missing = [f for f in formats if f"release.{f}" not in rendered]
    if missing:
        rendered.update(render_release(release, missing))
    files = {f"release.{f}": rendered[f"release.{f}"] for f in formats}
    hashes = {name: sha256_bytes(content) for name, content in files.items()}
    if reports or internal_report:
        from .report import internal as internal_report_module
        from .report import public

        if reports:
            html = public.public_report_html(release, hashes)
            if "html" in reports:
                files[REPORT_FILES["html"]] = html.encode("utf-8")
            if "pdf" in reports:
                files[REPORT_FILES["pdf"]] = pdf_writer(html)
        if internal_report:
            internal_html = internal_report_module.internal_report_html(data, release, comparison=comparison)
            files[INTERNAL_REPORT_FILES["html"]] = internal_html.encode("utf-8")
            if "pdf" in reports:
                files[INTERNAL_REPORT_FILES["pdf"]] = pdf_writer(internal_html)
    if cancel is not None:
        cancel.check()  # last moment to stop: nothing has been written yet
    progress(0.9, "Writing files")
    paths = write_files({out / name: content for name, content in files.items()}, force=force)
    progress(1.0, "Exported")
    return paths


def release_to_files(data, mechanism_id: str, epsilon, params: dict, out_dir, *, force: bool = False,
                     formats=("csv", "json"), reports=(), internal_report: bool = False,
                     chosen_how: str | None = None, override_cap: bool = False,
                     pdf_writer: Callable[[str], bytes] | None = None, ledger=None, comparison=None,
                     progress: ProgressFn | None = None, cancel: CancelToken | None = None) -> list[Path]:
    """Release with secure randomness, record it in the ledger and write the files (see above)."""
    progress = progress or no_progress
    formats, reports = list(formats), list(reports)
    if not formats:
        raise ParameterError("Choose at least one release format (csv, json, parquet).")
    api.validate(data, mechanism_id, epsilon, params)
    check_targets([Path(out_dir) / name for name in output_names(formats, reports, internal_report)], force)
    release, files = secure_release(data, mechanism_id, epsilon, params, chosen_how=chosen_how,
                                    override_cap=override_cap, ledger=ledger, formats=formats,
                                    progress=progress, cancel=cancel)
    return export_release(release, data, out_dir, formats=formats, reports=reports, internal_report=internal_report,
                          force=force, pdf_writer=pdf_writer, comparison=comparison, files=files, progress=progress)
