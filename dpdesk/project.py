"""Project files (``.dpdesk``): the import settings and mechanism configurations as JSON.

The GUI saves and opens them; ``dpdesk release --project FILE`` runs the chosen release
headless. Paths are stored relative to the project file when they can be.

A project file is checked against :data:`SCHEMA` when it is opened: any JSON that does
not fit — a wrong type, a missing or unknown field, a number out of range, nesting where
none belongs — is refused with one :class:`~dpdesk.errors.ParameterError` naming the
field (``release.epsilon must be a number greater than 0, not true``). Nothing of a
malformed file is used, so ``"epsilon": true`` can never release at ε = 1.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

from .errors import DpdeskError, ParameterError

FORMAT_VERSION = 1
#: a project file holds settings, not data: anything larger is not one
MAX_PROJECT_BYTES = 4 << 20
#: whole numbers must be exact as floats too (ids, seeds, bounds)
MAX_WHOLE = 2**53


# --- the schema ---------------------------------------------------------------------------------
# A spec is a tuple ("kind", details...). Kinds: text, whole, number, flag, choice, either,
# list, object (known fields; `required`), mapping (any text keys), null.

def _text(nonempty: bool = False):
    return ("text", nonempty)


def _whole(minimum: int | None = None):
    return ("whole", minimum)


def _number(positive: bool = False):
    return ("number", positive)


def _either(*specs):
    return ("either",) + specs


def _object(fields: dict, required: tuple = ()):
    return ("object", fields, required)


NULL = ("null",)
FLAG = ("flag",)
COLUMN = _either(_text(True), _whole(0), NULL)
SCALAR = _either(_text(), _number(), FLAG, NULL)
DOMAIN_VALUES = _either(("list", _either(_text(), _number())), _text(True))
ITEMS = _object({
    "kind": ("choice", ("list", "range", "public-data", "discovered")),
    "path": _text(True), "size": _whole(1), "delta": _number(True), "share": _number(True),
    "bound": _either(_whole(1), NULL), "cells": FLAG,
}, required=("kind",))
SCHEMA = _object({
    "dpdesk_project": ("choice", (FORMAT_VERSION,)),
    "data": _object({
        "path": _text(True),
        "sql": _text(True), "query": _text(True),  # a database source: the URL (no password) and the query
        "format": ("choice", ("auto", "transactions", "pairs", "matrix", "records", "cells")),
        "options": _object({
            "encoding": _text(True), "delimiter": _either(_text(True), NULL),
            "header": _either(FLAG, ("choice", ("auto",)), NULL), "name": _either(_text(), NULL),
            "person": COLUMN, "item": COLUMN, "value": COLUMN, "count": COLUMN,
            "id_column": _either(COLUMN, ("choice", (False,))), "keep_values": FLAG,
            "attributes": _either(("list", _either(_text(True), _whole(0))), NULL),
            "item_columns": _either(("list", _either(_text(True), _whole(0))), NULL),  # records as items
            "column_names": _either(("list", _text(True)), NULL),  # a table without a header line
            "domains": _either(("mapping", DOMAIN_VALUES), NULL),
            "memory_limit": _either(_text(True), _whole(1 << 20), NULL),
            "sheet": COLUMN,  # an Excel workbook's sheet, by name or 0-based position
        }),
    }),
    "mechanisms": ("list", _object({
        "mechanism": _text(True), "params": ("mapping", SCALAR), "enabled": FLAG, "label": _either(_text(), NULL),
    }, required=("mechanism",))),
    "compare": _object({
        "epsilons": ("list", _number(True)), "repeats": _whole(1), "seed": _either(_whole(0), NULL),
        "epsilon": _number(True), "bound": _either(_whole(1), NULL),
        "typical_row_length": _either(_number(True), NULL),  # declared, for the recommendation
        "goal": _text(True),  # what matters most: all, largest[:K] or target:N,R (evaluation.goals)
        # comparisons run in the app (public settings only), for the report's "what dpdesk observed"
        "runs": ("list", _object({
            "on_true_data": FLAG, "standin": _text(), "mechanisms": ("list", _text(True)),
            "epsilons": ("list", _number(True)),
        })),
    }),
    "release": _object({
        "mechanism": _text(True), "epsilon": _number(True), "params": ("mapping", SCALAR),
        "chosen_how": _either(_text(), NULL), "dataset": _either(_text(), NULL), "items": _either(ITEMS, NULL),
        "raw": FLAG,
    }),
}, required=("dpdesk_project",))

_DESCRIPTIONS = {"null": "null", "flag": "true or false"}


def _describe(spec) -> str:
    kind = spec[0]
    if kind == "text":
        return "a non-empty text" if spec[1] else "a text"
    if kind == "whole":
        return "a whole number" + (f" of at least {spec[1]:,}" if spec[1] is not None else "")
    if kind == "number":
        return "a number greater than 0" if spec[1] else "a number"
    if kind == "choice":
        return "one of " + ", ".join(json.dumps(c) for c in spec[1])
    if kind == "either":
        return " or ".join(_describe(s) for s in spec[1:])
    if kind == "list":
        return f"a list of {_describe(spec[1]).replace('a ', '', 1)}s" if spec[1][0] != "either" else "a list"
    if kind in ("object", "mapping"):
        return "an object ({…})"
    return _DESCRIPTIONS[kind]


def _shown(value) -> str:
    text = json.dumps(value, default=str) if not isinstance(value, (dict, list)) else (
        "an object" if isinstance(value, dict) else "a list")
    return text if len(text) <= 60 else text[:57] + "…"


def _fits(value, spec) -> bool:
    """Whether ``value`` fits a scalar spec (or the outer type of a container spec)."""
    kind = spec[0]
    if kind == "text":
        return isinstance(value, str) and "\x00" not in value and (bool(value.strip()) or not spec[1])
    if kind == "whole":
        return (isinstance(value, int) and not isinstance(value, bool) and abs(value) <= MAX_WHOLE
                and (spec[1] is None or value >= spec[1]))
    if kind == "number":
        return (isinstance(value, (int, float)) and not isinstance(value, bool)
                and (abs(value) <= MAX_WHOLE if isinstance(value, int) else math.isfinite(value))
                and (value > 0 or not spec[1]))
    if kind == "flag":
        return isinstance(value, bool)
    if kind == "null":
        return value is None
    if kind == "choice":
        return any(type(value) is type(choice) and value == choice for choice in spec[1])
    if kind == "either":
        return any(_fits(value, option) for option in spec[1:])
    if kind == "list":
        return isinstance(value, list)
    return isinstance(value, dict)


def validate(content, spec=SCHEMA, where: str = "") -> None:
    """Raise ``ParameterError`` naming the first field of ``content`` that does not fit ``spec``."""
    name = where or "the project"
    if not _fits(content, spec):
        raise ParameterError(f"{name} must be {_describe(spec)}, not {_shown(content)}.")
    kind = spec[0]
    if kind == "either":
        validate(content, next(option for option in spec[1:] if _fits(content, option)), where)
    elif kind == "list":
        for k, item in enumerate(content):
            validate(item, spec[1], f"{where}[{k}]")
    elif kind == "mapping":
        for key, item in content.items():
            validate(item, spec[1], f"{where}.{key}" if where else key)
    elif kind == "object":
        fields, required = spec[1], spec[2]
        for key in content:
            if key not in fields:
                raise ParameterError(f"{name} has an unknown field '{key[:40]}'; the known fields are: "
                                     + ", ".join(fields) + ".")
        for key in required:
            if key not in content:
                raise ParameterError(f"{name} needs the field '{key}'.")
        for key, item in content.items():
            validate(item, fields[key], f"{where}.{key}" if where else key)


# --- the project ----------------------------------------------------------------------------------

@dataclass
class Project:
    data: dict = field(default_factory=dict)  # {"path": ..., "format": ..., "options": {...}}
    mechanisms: list[dict] = field(default_factory=list)  # [{"mechanism": id, "params": {...}, "label": ...}]
    compare: dict = field(default_factory=dict)  # {"epsilons": [...], "repeats": n, "seed": s}
    # {"mechanism": id, "epsilon": e, "params": {...}, "chosen_how": ..., "dataset": name, "items": declaration}
    release: dict = field(default_factory=dict)
    path: Path | None = None

    def to_json(self, base: Path | None = None) -> dict:
        data = dict(self.data)
        if "path" in data and base is not None:
            try:
                data["path"] = os.path.relpath(Path(data["path"]).resolve(), base.resolve())
            except ValueError:  # another drive
                data["path"] = str(Path(data["path"]).resolve())
        return {"dpdesk_project": FORMAT_VERSION, "data": data, "mechanisms": self.mechanisms,
                "compare": self.compare, "release": self.release}

    def save(self, path) -> Path:
        from .report.export import atomic_write_text

        path = Path(path)
        text = json.dumps(self.to_json(path.parent), indent=2, default=str)
        atomic_write_text(path, text, force=True)
        self.path = path
        return path

    @classmethod
    def load(cls, path) -> "Project":
        path = Path(path)
        content = _read_json(path)
        if not isinstance(content, dict) or "dpdesk_project" not in content:
            raise ParameterError(f"{path.name} is not a dpdesk project file (version {FORMAT_VERSION}).")
        try:
            validate(content)
        except ParameterError as error:
            raise ParameterError(f"The project file {path.name} is not valid: {error}") from None
        data = dict(content.get("data") or {})
        if "path" in data and not os.path.isabs(data["path"]):
            data["path"] = str((path.parent / data["path"]).resolve())
        return cls(data=data, mechanisms=list(content.get("mechanisms") or []),
                   compare=dict(content.get("compare") or {}), release=dict(content.get("release") or {}),
                   path=path)

    def load_data(self, **kwargs):
        from .loading import load

        options = dict(self.data.get("options") or {})
        options.update(kwargs)
        if self.data.get("sql"):
            from .engine.sql import load_sql

            if not self.data.get("query"):
                raise ParameterError("The project names a database but no query.")
            return load_sql(self.data["sql"], self.data["query"], self.data.get("format", "pairs"), **options)
        if not self.data.get("path"):
            raise ParameterError("The project does not name a data file.")
        return load(self.data["path"], format=self.data.get("format", "auto"), **options)

    def items_declaration(self):
        """How the release's item (or cell) domain is declared (``None`` if the project does not say)."""
        from .data.domain import DomainDeclaration

        value = self.release.get("items")
        return None if value is None else DomainDeclaration.from_json(value)

    def release_choice(self) -> dict:
        if not self.release.get("mechanism") or self.release.get("epsilon") is None:
            raise ParameterError("The project has no release chosen (mechanism and ε); choose one on the "
                                 "Release page and save the project.")
        return self.release


def _read_json(path: Path):
    """The file's JSON, with every way of failing (missing, not a file, huge, not UTF-8, not JSON) a clear error."""
    from .data.textio import check_regular

    try:
        info = check_regular(path)
    except DpdeskError as error:
        detail = getattr(error, "detail", str(error))
        raise ParameterError(f"The project file {path.name} cannot be opened: {detail}.") from None
    if info.st_size > MAX_PROJECT_BYTES:
        raise ParameterError(f"{path.name} is not a dpdesk project file: it is {info.st_size:,} bytes, and project "
                             f"files hold only settings (at most {MAX_PROJECT_BYTES:,} bytes).")
    try:
        with open(path, "rb") as handle:
            text = handle.read(MAX_PROJECT_BYTES + 1).decode("utf-8")
        return json.loads(text, parse_constant=_no_constant)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, ParameterError) as error:
        raise ParameterError(f"The project file {path.name} cannot be read: {error}") from None
    except RecursionError:
        raise ParameterError(f"The project file {path.name} is not valid: it is nested far too deeply.") from None


def _no_constant(name: str):
    raise ParameterError(f"{name} is not a number a project file may hold")
