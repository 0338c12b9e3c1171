"""Errors a steward can cause, each with a message that says what went wrong and where.

Every front end (CLI, GUI) shows ``str(error)`` as is; nothing here should need a
traceback to be understood.
"""

from __future__ import annotations

from pathlib import Path


class DpdeskError(Exception):
    """Base class of all errors caused by input, parameters or budget (not by bugs).

    The message is kept to one line: a value quoted from a file (which may hold line ends
    or control characters) is shown with escapes, so a front end can print it as is.
    """

    #: short heading for dialogs
    title = "dpdesk"

    def __init__(self, message="", *args):
        if isinstance(message, str):
            message = one_line(message)
        super().__init__(message, *args)


def one_line(text: str) -> str:
    """``text`` with line ends and other control characters written as escapes (``\\n``, ``\\x00``)."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text)


class DataError(DpdeskError):
    """A data file could not be read: names the file, the line and column, and what was expected."""

    title = "Cannot read the data file"

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        column: int | str | None = None,
        expected: str | None = None,
        row: int | None = None,
    ):
        self.path = str(path) if path is not None else None
        self.line = line
        self.row = row  # a spreadsheet's row number, or a record's (SPSS, Stata, SAS): files without lines
        self.column = column
        self.expected = expected
        self.detail = message
        where = []
        if self.path:
            where.append(Path(self.path).name)
        if line is not None:
            where.append(f"line {line}")
        if row is not None:
            where.append(f"row {row}")
        if column is not None:
            where.append(f"column {column}" if isinstance(column, int) else f"column '{column}'")
        text = ", ".join(where)
        text = f"{text}: {message}" if text else message
        if expected:
            text = f"{text} (expected {expected})"
        super().__init__(text)


class EmptyData(DataError):
    """The file (or query) holds no one. Where data is only looked at, that is worth saying; a
    release treats it as the dataset it is — no people — since refusing it would be a decision
    on the data (``workflow.release_to_files``)."""


class TooLargeError(DataError):
    """Reading a data file would take more memory than the budget allows (stopped in time)."""

    title = "The data file is too large"


class ParameterError(DpdeskError):
    """A mechanism parameter, ε or an option is out of range or unknown."""

    title = "Invalid setting"


class BudgetError(DpdeskError):
    """A release would exceed the steward's privacy budget cap for the dataset."""

    title = "Privacy budget exceeded"


class ChargedRefusal(DpdeskError):
    """A release stopped *after* it used the data (e.g. a noisy estimate came out too large).

    The decision depended on the data, so the ε (and δ) already spent is charged: the
    workflow records ``budget`` in the ledger as spent, whether or not anything is
    published, and says so. Refusals that depend only on declared inputs are plain
    ``ParameterError``s raised before the data is read.
    """

    title = "Release stopped (budget spent)"

    def __init__(self, message: str, budget):
        self.budget = budget
        super().__init__(message)


class ExportError(DpdeskError):
    """An output file cannot be written (exists, exploration result, unwritable place)."""

    title = "Cannot export"


class LedgerError(DpdeskError):
    """The budget ledger is unreadable or its hash chain is broken."""

    title = "Budget ledger problem"


class HomeError(DpdeskError):
    """dpdesk's own folder (``DPDESK_HOME``) cannot be used."""

    title = "dpdesk's folder cannot be used"


class SystemLibraryError(DpdeskError):
    """A system library (OpenGL, fonts, X11) that Qt loads is missing from the machine."""

    title = "Missing system library"


class Cancelled(DpdeskError):
    """Long work was stopped by the user."""

    title = "Cancelled"

    def __init__(self, message: str = "The operation was cancelled."):
        super().__init__(message)


class RecommendationError(DpdeskError):
    """The recommendation rule file is missing, damaged or made for another version of dpdesk."""

    title = "Cannot recommend a mechanism"
