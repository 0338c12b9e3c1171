"""Declared domains: the public list of items (or attribute values) a release is about.

A release publishes one figure per item of its domain (or per cell of the product of its
attribute domains), so the domain itself is published. If it came from the data, one
person holding ``secret_disease`` would put that label into the release with probability 1
(docs/ARCHITECTURE.md, "Neighbours differ only in noise"). So the domain is *declared*, in
one of four ways (the same for items and for the attribute values of cell tables):

* ``list`` — a file of labels the steward supplies (``--items FILE``; ``--domains FILE``);
* ``range`` — integer ids ``0..D−1`` (``--items range:D``);
* ``public-data`` — the labels of the data file itself, when the steward states they are
  public (a product catalogue, a list of places): ``--items from-data --items-are-public``.
  The statement is recorded in the report in those words;
* ``discovered`` — labels chosen privately from the data by a noisy threshold
  (:mod:`dpdesk.mechanisms.discovery`), in one pass with the release's own noisy counts or in
  two steps with a share of ε, spending a δ; the route, its ε and δ are recorded.

Items in the data but not in the domain are dropped before counting (how many is internal);
items of the domain that nobody has are counted as 0. Values of a cell attribute outside
its declared domain drop the record (internal count), never a refusal: a refusal would
itself depend on the data.
"""

from __future__ import annotations

import copy
import csv
import io
import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..errors import DataError, ParameterError
from .textio import decode, read_raw

HOW_LIST, HOW_RANGE, HOW_PUBLIC_DATA, HOW_DISCOVERED = "list", "range", "public-data", "discovered"
PUBLIC_DATA_STATEMENT = ("The steward stated that the item names in the data file are public, so the list of "
                         "items was taken from the file.")
#: the origin of a public-data item list read from records: its items are the columns' values
RECORDS_ORIGIN = "the values in the data file's columns"
PUBLIC_RECORDS_STATEMENT = ("The steward stated that the values in the data file's columns are public, so the list "
                            "of items (each a column and one of its values, as column=value) was taken from the file.")
PUBLIC_DOMAINS_STATEMENT = ("The steward stated that the attribute values found in the data file are public, "
                            "so the attribute domains were taken from the file.")
LABEL_COLUMN_NAMES = ("item", "items", "label", "labels", "name", "value", "id")
MAX_RANGE = 10**9

ITEMS_CHOICES_TEXT = (
    "Declare the list of items the release is about (it is published): --items FILE (one label per line; "
    "a .csv file with a header also works), --items range:D (ids 0..D-1), --items from-data "
    "--items-are-public (the file's own labels, when they are public, e.g. a product catalogue), or "
    "--items discover --delta δ (found privately, spending ε and a small δ).")
DOMAINS_CHOICES_TEXT = (
    "Declare the values each attribute can take (they are published): --domains FILE (JSON: "
    '{"attribute": ["value", …] or "range:N"}), --domains from-data --domains-are-public (the values in '
    "the file, when they are public), or --domains discover --delta δ (found privately with a share of ε "
    "and a small δ).")


@dataclass(frozen=True)
class ItemDomain:
    """The public list of items a count release is about, and how it was declared."""

    labels: np.ndarray  # object array of str, in the published order
    how: str
    origin: str = ""  # e.g. the label file's name, "range:5000", "the data file"
    epsilon: float = 0.0  # ε spent choosing it (discovered only)
    delta: float = 0.0
    internal: dict = field(default_factory=dict, compare=False)  # true-data facts (never published)
    route: str = ""  # discovered only: "one-pass" (the published noisy counts chose it) or "two-step"
    threshold: int = 0  # discovered only: τ, a function of ε, δ and the discovery bound
    discovery_bound: int = 0  # discovered only: most items one person contributed to the discovery

    @property
    def size(self) -> int:
        return int(self.labels.size)

    def statement(self) -> str:
        """One sentence for the public report: where the published item list came from."""
        d = f"{self.size:,}"
        if self.how == HOW_LIST:
            listed = "The 1 item was" if self.size == 1 else f"The {d} items were"
            return f"{listed} declared by the steward in a list ({self.origin}) before the data was read."
        if self.how == HOW_RANGE:
            return f"The items are the ids 0 to {self.size - 1:,}, declared by the steward before the data was read."
        if self.how == HOW_PUBLIC_DATA:
            statement = PUBLIC_RECORDS_STATEMENT if self.origin == RECORDS_ORIGIN else PUBLIC_DATA_STATEMENT
            return statement + (" It has 1 item." if self.size == 1 else f" It has {d} items.")
        found = "The 1 item was" if self.size == 1 else f"The {d} items were"
        per_person = "1 item" if self.discovery_bound == 1 else f"{self.discovery_bound} items"
        if self.route == "one-pass":
            return (f"{found} discovered privately in one pass: every item's count (at most {per_person} per "
                    f"person) got noise, and only items whose noisy count reached the threshold {self.threshold:,} "
                    f"are listed, with that noisy count. The threshold was fixed by ε, δ and the bound before the "
                    f"data was read; the list and the counts together spent ε = {self.epsilon:.4g} and "
                    f"δ = {self.delta:.3g}.")
        threshold = (f" (threshold {self.threshold:,}, at most {per_person} per person)" if self.threshold else "")
        return (f"{found} discovered privately: only items whose noisy count passed a threshold are "
                f"listed{threshold}, which spent ε = {self.epsilon:.4g} and δ = {self.delta:.3g} of this release's "
                "budget.")

    def describe(self) -> dict:
        """The public description (report and release metadata)."""
        out = {"how": self.how, "items": self.size, "statement": self.statement()}
        if self.origin:
            out["declared_in"] = self.origin
        if self.how == HOW_DISCOVERED:
            out.update(epsilon=self.epsilon, delta=self.delta)
            if self.route:
                out.update(route=self.route, threshold=self.threshold, discovery_bound=self.discovery_bound)
        return out


@dataclass(frozen=True)
class CellDomain:
    """The public cells of a table: attribute domains (or just a number of cells), and how declared.

    ``values`` is None for a table given as cell numbers 0..m−1 with a declared m.
    """

    attributes: tuple[str, ...]
    values: tuple[tuple[str, ...], ...] | None
    how: str
    origin: str = ""
    epsilon: float = 0.0
    delta: float = 0.0
    cells: int | None = None  # m, when there are no attribute values

    @property
    def size(self) -> int:
        if self.values is None:
            return int(self.cells or 0)
        return int(np.prod(np.array([len(v) for v in self.values], dtype=object)))

    def statement(self) -> str:
        m = f"{self.size:,}"
        names = ", ".join(self.attributes)
        if self.how == HOW_LIST:
            return (f"The values of each attribute ({names}) were declared by the steward ({self.origin}) before "
                    f"the data was read: {m} cells in all.")
        if self.how == HOW_RANGE:
            return f"The cells are numbered 0 to {self.size - 1:,}, declared before the data was read."
        if self.how == HOW_PUBLIC_DATA:
            return PUBLIC_DOMAINS_STATEMENT + f" Attributes: {names}; {m} cells in all."
        return (f"The values of each attribute ({names}) were discovered privately: only values whose noisy "
                f"count passed a threshold are listed ({m} cells in all), which spent ε = {self.epsilon:.4g} and "
                f"δ = {self.delta:.3g} of this release's budget.")

    def describe(self) -> dict:
        out = {"how": self.how, "attributes": list(self.attributes), "cells": self.size,
               "statement": self.statement()}
        if self.origin:
            out["declared_in"] = self.origin
        if self.how == HOW_DISCOVERED:
            out.update(epsilon=self.epsilon, delta=self.delta)
        return out


# --- what the steward declared (before any data is read) ----------------------------------------

@dataclass(frozen=True)
class DomainDeclaration:
    """The steward's answer to "which items (or values) may the release list?", not yet applied.

    ``kind`` is ``list`` (``path``), ``range`` (``size``), ``public-data`` or ``discovered``
    (``delta``; for items optionally the ``route``, the ``share`` of ε a two-step discovery
    spends and the contribution ``bound`` per person while discovering — each None lets
    :func:`dpdesk.evaluation.discovery.plan_discovery` choose it from declared inputs —, and
    the facts a stand-in is shaped by: ``people``, ``row_length`` (typical items per person),
    ``expected_items`` (distinct items), ``skew``; cell domains spend ``share`` or 10% of ε).
    """

    kind: str
    path: str | None = None
    size: int | None = None
    delta: float | None = None
    share: float | None = None
    bound: int | None = None
    cells: bool = False
    route: str | None = None
    people: int | None = None
    row_length: float | None = None
    expected_items: int | None = None
    skew: float | None = None

    @property
    def spends_budget(self) -> bool:
        return self.kind == HOW_DISCOVERED

    def describe(self) -> str:
        what = "values" if self.cells else "items"
        if self.kind == HOW_LIST:
            return f"{what} listed in {Path(self.path).name}"
        if self.kind == HOW_RANGE:
            return f"ids 0..{self.size - 1}"
        if self.kind == HOW_PUBLIC_DATA:
            return f"the file's own {what}, stated to be public"
        if self.route == "one-pass":
            return f"{what} discovered privately in one pass with the counts (δ = {self.delta:g})"
        share = f"{self.share:.0%} of ε" if self.share is not None else "a share of ε chosen by dpdesk"
        return f"{what} discovered privately ({share}, δ = {self.delta:g})"

    def to_json(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if v is not None}

    @classmethod
    def from_json(cls, value) -> "DomainDeclaration":
        if not isinstance(value, dict) or value.get("kind") not in (HOW_LIST, HOW_RANGE, HOW_PUBLIC_DATA,
                                                                     HOW_DISCOVERED):
            raise ParameterError("The item domain in the project file must be an object with a 'kind' of list, "
                                 "range, public-data or discovered.")
        known = {"kind", "path", "size", "delta", "share", "bound", "cells", "route", "people", "row_length",
                 "expected_items", "skew"}
        try:
            declaration = cls(**{k: v for k, v in value.items() if k in known})
            return check_declaration(declaration)
        except TypeError:
            raise ParameterError("The item domain in the project file is malformed.") from None


def parse_items_option(text: str | None, *, public: bool = False, delta: float | None = None,
                       share: float | None = None, bound: int | None = None,
                       cells: bool = False, route: str | None = None, facts: dict | None = None
                       ) -> DomainDeclaration | None:
    """The declaration behind ``--items`` (or ``--domains`` with ``cells=True``); None if not given.

    ``facts``: the stand-in's declared facts for a discovery (``people``, ``row_length``,
    ``expected_items``, ``skew``; missing ones are assumed, and said to be)."""
    facts = {k: v for k, v in (facts or {}).items() if v is not None}
    option = "--domains" if cells else "--items"
    public_flag = "--domains-are-public" if cells else "--items-are-public"
    if text is None or not str(text).strip():
        if public:
            raise ParameterError(f"{public_flag} goes with {option} from-data.")
        return None
    text = str(text).strip()
    lowered = text.lower()
    if delta is not None and lowered != "discover":
        raise ParameterError(f"--delta is only used with {option} discover.")
    if lowered == "from-data":
        if not public:
            raise ParameterError(
                f"{option} from-data publishes the labels found in the data file; that is only private when "
                f"they are public anyway (e.g. a product catalogue). Say so with {public_flag}, or declare "
                f"the list another way. " + (DOMAINS_CHOICES_TEXT if cells else ITEMS_CHOICES_TEXT))
        declaration = DomainDeclaration(HOW_PUBLIC_DATA, cells=cells)
    elif public:
        raise ParameterError(f"{public_flag} only goes with {option} from-data.")
    elif lowered == "discover":
        declaration = DomainDeclaration(HOW_DISCOVERED, delta=delta, share=share, bound=bound, cells=cells,
                                        route=route, **facts)
    elif lowered.startswith("range:") and not cells:
        raw = text.split(":", 1)[1].strip()
        try:
            size = int(raw)
        except ValueError:
            raise ParameterError(f"--items range:D needs a whole number D, not '{raw}'.") from None
        declaration = DomainDeclaration(HOW_RANGE, size=size)
    else:
        declaration = DomainDeclaration(HOW_LIST, path=text, cells=cells)
    if share is not None and declaration.kind != HOW_DISCOVERED:
        raise ParameterError("--discover-share is only used with discover.")
    if (route is not None or facts) and declaration.kind != HOW_DISCOVERED:
        used = "--discover-route" if route is not None else "--" + next(iter(facts)).replace("_", "-")
        raise ParameterError(f"{used} is only used with {option} discover.")
    return check_declaration(declaration)


def check_declaration(declaration: DomainDeclaration) -> DomainDeclaration:
    """Refuse a malformed declaration (public inputs only; nothing is read or spent)."""
    option = "--domains" if declaration.cells else "--items"
    if declaration.kind == HOW_RANGE:
        size = declaration.size
        if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= MAX_RANGE:
            raise ParameterError(f"--items range:D needs D between 1 and {MAX_RANGE:,}, not {size!r}.")
    if declaration.kind == HOW_LIST and not declaration.path:
        raise ParameterError(f"{option} needs a file.")
    if declaration.kind == HOW_DISCOVERED:
        delta = declaration.delta
        if delta is None:
            raise ParameterError(f"{option} discover needs --delta δ: the small probability (e.g. 1e-6) that a "
                                 "label held by very few people is listed anyway.")
        if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not 0.0 < float(delta) < 1.0 \
                or not math.isfinite(float(delta)):
            raise ParameterError(f"--delta must be a number between 0 and 1 (e.g. 1e-6), not {delta!r}.")
        share = declaration.share
        if share is not None and (isinstance(share, bool) or not isinstance(share, (int, float))
                                  or not 0.0 < float(share) < 1.0):
            raise ParameterError(f"--discover-share must be a fraction of ε between 0 and 1, not {share!r}.")
        bound = declaration.bound
        if bound is not None and (isinstance(bound, bool) or not isinstance(bound, int) or bound < 1):
            raise ParameterError(f"--discover-bound must be a whole number of at least 1, not {bound!r}.")
        check_discovery_route(declaration)
    return declaration


DISCOVERY_ROUTES = ("one-pass", "two-step")
STANDIN_FACTS = {"people": ("--people", int, 1, 10**10), "row_length": ("--typical-row-length", float, 1e-9, 10**7),
                 "expected_items": ("--expected-items", int, 1, MAX_RANGE), "skew": ("--skew", float, 0.0, 4.0)}


def check_discovery_route(declaration: DomainDeclaration) -> None:
    """The route and the stand-in facts of a discovery, well formed and consistent (declared inputs only)."""
    route = declaration.route
    if route is not None and route not in DISCOVERY_ROUTES:
        raise ParameterError(f"--discover-route must be one-pass or two-step, not {route!r}.")
    if route == "one-pass":
        if declaration.cells:
            raise ParameterError("Attribute values are discovered in two steps: leave out --discover-route one-pass.")
        if declaration.share is not None:
            raise ParameterError("--discover-share is the share of a two-step discovery; the one-pass route "
                                 "spends all of ε on the counts that choose the items. Give one of them.")
        if declaration.bound is not None:
            raise ParameterError("The one-pass route counts each person's items within the mechanism's bound Δ "
                                 "(--bound); --discover-bound is for the two-step route. Give one of them.")
    for name, (flag, kind, low, high) in STANDIN_FACTS.items():
        value = getattr(declaration, name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(float(value)) \
                or (kind is int and not float(value).is_integer()) or not low <= value <= high:
            what = "a whole number" if kind is int else "a number"
            raise ParameterError(f"{flag} must be {what} between {low:g} and {high:g}, not {value!r}.")
    return declaration


# --- label files ---------------------------------------------------------------------------------

def read_label_file(path) -> list[str]:
    """The labels of a label file: one per line, or the item column of a CSV/TSV with a header.

    Blank lines are skipped and surrounding spaces removed; a BOM and the usual encodings
    are handled (UTF-8, Latin-1). A label listed twice, or a file with no labels, is an
    error naming the line.
    """
    path = Path(path)
    raw = read_raw(path)
    text = decode(raw, "auto", path).text
    name = path.name.lower().removesuffix(".gz")
    if name.endswith((".csv", ".tsv")):
        labels, lines = _labels_from_csv(text, path, "\t" if name.endswith(".tsv") else ",")
    else:
        stripped = [line.strip() for line in text.split("\n")]
        labels = [label for label in stripped if label]
        if labels and len(set(labels)) == len(labels):
            return labels  # the common case, checked at C speed (10⁶ labels in a fraction of a second)
        lines = [number for number, label in enumerate(stripped, start=1) if label]
    if not labels:
        raise DataError("the label file lists no items", path=path, expected="one label per line")
    seen: dict[str, int] = {}
    for label, number in zip(labels, lines):
        first = seen.setdefault(label, number)
        if first != number:
            raise DataError(f"the label '{_short(label)}' is listed twice (first on line {first})", path=path,
                            line=number, expected="each label once")
    return labels


def _labels_from_csv(text: str, path, delimiter: str) -> tuple[list[str], list[int]]:
    reader = csv.reader(io.StringIO(text), delimiter=delimiter)
    try:
        rows = list(reader)
    except csv.Error as error:
        raise DataError(f"the label file is not valid CSV ({error})", path=path,
                        line=reader.line_num) from None
    if not rows:
        raise DataError("the label file lists no items", path=path, expected="a header and one label per line")
    header = [h.strip().lower() for h in rows[0]]
    column = next((header.index(n) for n in LABEL_COLUMN_NAMES if n in header), 0)
    labels, lines = [], []
    for number, row in enumerate(rows[1:], start=2):
        if not row or not any(cell.strip() for cell in row):
            continue
        if column >= len(row):
            raise DataError(f"the row has no column {column + 1}", path=path, line=number,
                            expected=f"the item in column '{rows[0][column]}'")
        label = row[column].strip()
        if label:
            labels.append(label)
            lines.append(number)
    return labels, lines


def _short(label: str) -> str:
    return label if len(label) <= 60 else label[:57] + "…"


def read_domains_file(path) -> dict[str, list[str]]:
    """Attribute domains from JSON: ``{"attribute": ["value", …] or "range:N", …}``."""
    path = Path(path)
    raw = read_raw(path)
    try:
        content = json.loads(decode(raw, "auto", path).text)
    except json.JSONDecodeError as error:
        raise DataError(f"the domains file is not valid JSON ({error.msg})", path=path, line=error.lineno,
                        column=error.colno, expected='{"attribute": ["value", …], …}') from None
    except RecursionError:
        raise DataError("the domains file is nested too deeply", path=path) from None
    if not isinstance(content, dict) or not content:
        raise DataError("the domains file must be a JSON object with one entry per attribute", path=path,
                        expected='{"attribute": ["value", …], …}')
    domains: dict[str, list[str]] = {}
    for attribute, values in content.items():
        if isinstance(values, str) and values.strip().lower().startswith("range:"):
            try:
                size = int(values.split(":", 1)[1])
            except ValueError:
                size = 0
            if not 1 <= size <= MAX_RANGE:
                raise DataError(f"'{attribute}': \"{values}\" needs a whole number N between 1 and {MAX_RANGE:,}",
                                path=path, expected='"range:N" for the values 0..N-1')
            domains[str(attribute)] = [str(v) for v in range(size)]
            continue
        if not isinstance(values, list) or not values:
            raise DataError(f"the domain of '{attribute}' must be a non-empty list of values", path=path,
                            expected='["value", …] or "range:N"')
        if not all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in values):
            raise DataError(f"the domain of '{attribute}' may only hold text or whole numbers", path=path)
        listed = [str(v).strip() for v in values]
        duplicates = {v for v in listed if listed.count(v) > 1} if len(set(listed)) != len(listed) else set()
        if duplicates:
            raise DataError(f"the domain of '{attribute}' lists '{_short(sorted(duplicates)[0])}' twice", path=path)
        domains[str(attribute)] = listed
    return domains


# --- applying a domain to data -------------------------------------------------------------------

def declared_domain(declaration: DomainDeclaration) -> ItemDomain | None:
    """The item domain when it is known without the data (a list or a range), else None."""
    if declaration.cells:
        return None
    if declaration.kind == HOW_LIST:
        labels = read_label_file(declaration.path)
        return ItemDomain(np.array(labels, dtype=object), HOW_LIST, Path(declaration.path).name)
    if declaration.kind == HOW_RANGE:
        labels = np.array([str(i) for i in range(declaration.size)], dtype=object)
        return ItemDomain(labels, HOW_RANGE, f"range:{declaration.size}")
    return None


def check_identifier_labels(data) -> None:
    """Before the file's own labels are published: refuse the values of a records column that looks
    like an identifier (:func:`dpdesk.data.detect.identifier_like`) unless the steward chose the
    columns to count themselves.

    The flag is computed from the true data, so this refusal depends on the data: it is said to the
    steward only, before any noise, nothing is spent and nothing is published. The release the steward
    then makes rests on their explicit choice of columns, a declared input. The flag never changes
    what is counted or listed by itself: dropping a column silently would make the published list
    (and, with a declared list, a whole column's counts) depend on one person's row.
    """
    flagged = list(getattr(data, "likely_identifiers", ()) or ())
    source = getattr(data, "source", None) or {}
    if not flagged or source.get("item_columns"):
        return
    import shlex

    names = ", ".join(f"'{name}'" for name in flagged)
    one = len(flagged) == 1
    it, its, look = ("it", "its", "looks like an identifier") if one else ("them", "their", "look like identifiers")
    rest = [c for c in getattr(data, "record_columns", ()) if c not in flagged]
    option = "--item-columns " + (shlex.quote(",".join(rest)) if rest else "…")
    raise ParameterError(
        f"The column{'' if one else 's'} {names} {look}: nearly every row has its own value, so the item names "
        "taken from the file would publish values that each single out a person. Choose the columns to count "
        f"yourself — {option} on the command line, or tick them in the import wizard — and leave {it} out, or "
        f"name {it} there to publish {its} values all the same. (This check read the data: it is for you only. "
        "Nothing was spent.)")


def public_data_domain(data) -> ItemDomain:
    """The data file's own labels, which the steward stated are public."""
    records = (getattr(data, "source", None) or {}).get("format") == "records"
    return ItemDomain(np.asarray(data.item_labels, dtype=object), HOW_PUBLIC_DATA,
                      RECORDS_ORIGIN if records else "the data file")


def project(data, domain: ItemDomain):
    """``data`` with exactly the domain's items as columns, in the domain's order.

    Cells of items outside the domain are dropped; domain items nobody holds are zero
    columns. What was dropped (items, cells, people affected) and how many domain items
    are absent is recorded in ``internal`` of the domain attached to the result — true-data
    facts for the internal report only.
    """
    from .dataset import Dataset

    if getattr(data, "engine", None) is not None:
        return data.project(domain)  # data held by an engine: projected there (dpdesk.engine.dataset)
    labels = np.asarray(data.item_labels, dtype=object)
    if labels.size == domain.labels.size and np.array_equal(labels, domain.labels):
        projected = Dataset(data.matrix, labels, name=data.name, source=data.source)
        projected.domain = replace(domain, internal={"items dropped (not in the declared list)": 0,
                                                     "item occurrences dropped": 0,
                                                     "people who lost items": 0,
                                                     "declared items nobody has": int(np.sum(data.column_counts == 0))})
        projected.origin = data
        return projected
    # hash lookups in pandas' C code: a million declared labels cost a fraction of a second
    mapping = pd.Index(domain.labels).get_indexer(labels).astype(np.int64)
    matrix = data.matrix
    new_columns = mapping[matrix.indices]
    keep = new_columns >= 0
    kept_before = np.zeros(keep.size + 1, dtype=np.int64)
    np.cumsum(keep, out=kept_before[1:])
    indptr = kept_before[matrix.indptr]
    index_dtype = np.int32 if domain.size < 2**31 and keep.size < 2**31 else np.int64
    csr = sp.csr_matrix((matrix.data[keep], new_columns[keep].astype(index_dtype), indptr.astype(index_dtype)),
                        shape=(matrix.shape[0], domain.size))
    csr.has_sorted_indices = False
    csr.sort_indices()
    if not pd.Index(labels).is_unique:
        # two of the data's columns carry one label: a person holds that item once, not twice
        # (a count that moved by 2 between neighbours would break every mechanism's sensitivity)
        csr.sum_duplicates()
        if data.binary:
            csr.data = np.ones(csr.data.size, dtype=np.uint8)
    present = np.zeros(domain.size, dtype=bool)
    present[mapping[mapping >= 0]] = True
    lost = np.diff(indptr) < np.diff(matrix.indptr)
    projected = Dataset(csr, domain.labels, name=data.name, source=data.source)
    projected.domain = replace(domain, internal={
        "items dropped (not in the declared list)": int(np.sum(mapping < 0)),
        "item occurrences dropped": int(keep.size - int(kept_before[-1])),
        "people who lost items": int(lost.sum()),
        "declared items nobody has": int(domain.size - present.sum())})
    projected.origin = data
    return projected


def restrict_cells(cells, domain: CellDomain):
    """``cells`` re-indexed over ``domain``'s attribute values; records outside it are dropped.

    A value missing from its attribute's domain drops the record (internal count); a
    declared value nobody has is an empty cell. Returns a new ``CellCounts``.
    """
    from .dataset import CellCounts

    if list(domain.attributes) != list(cells.attributes or []):
        missing = [a for a in domain.attributes if a not in (cells.attributes or [])]
        extra = [a for a in (cells.attributes or []) if a not in domain.attributes]
        raise ParameterError("The declared domains do not match the table's attributes"
                             + (f": no column for {', '.join(missing)}" if missing else "")
                             + (f"; no domain declared for {', '.join(extra)}" if extra else "") + ".")
    digits = cells.decode(cells.indices)
    new_digits = np.empty_like(digits)
    keep = np.ones(digits.shape[0], dtype=bool)
    for k, (old, new) in enumerate(zip(cells.domains, domain.values)):
        position = {v: i for i, v in enumerate(new)}
        mapping = np.array([position.get(v, -1) for v in old], dtype=np.int64)
        column = mapping[digits[:, k]] if digits.size else digits[:, k]
        keep &= column >= 0
        new_digits[:, k] = column
    radices = [len(v) for v in domain.values]
    index = np.zeros(int(keep.sum()), dtype=np.int64)
    for k, radix in enumerate(radices):
        index = index * radix + new_digits[keep, k]
    dropped = int(cells.counts[~keep].sum())
    restricted = CellCounts(index, cells.counts[keep], domain.size, attributes=list(domain.attributes),
                            domains=[list(v) for v in domain.values], name=cells.name, source=cells.source,
                            domains_declared=True)
    restricted.domain = domain
    restricted.dropped_records = dropped
    restricted.origin = cells
    return restricted


def declared_cell_domain(path, attributes=None) -> CellDomain | None:
    """The cells a ``--domains FILE`` declares, before any data is read: the attributes named in
    ``attributes`` (the import's ``--attributes``; all of the file's when not given), each with the
    file's values — so m = Π |values| over the attributes the release will use, not over every
    attribute the file happens to list. ``None`` when an attribute is given by its position: its
    name is in the data file's header, not in a declaration.
    """
    domains = read_domains_file(path)
    if attributes:
        if any(not isinstance(a, str) or a.isdigit() for a in attributes):
            return None
        missing = [a for a in attributes if a not in domains]
        if missing:
            raise ParameterError(f"{Path(path).name} gives no values for " + ", ".join(f"'{a}'" for a in missing)
                                 + ": declare the values of every attribute of --attributes.")
        names = list(attributes)
    else:
        names = list(domains)
    return CellDomain(tuple(names), tuple(tuple(domains[a]) for a in names), HOW_LIST, Path(path).name)


def cell_domain_of(cells, how: str, origin: str = "") -> CellDomain:
    """The domain a table already carries (its attributes and their values), described as ``how``."""
    if cells.domains is None:
        return CellDomain(("cell",), None, HOW_RANGE, origin or f"{cells.domain_size:,} cells",
                          cells=cells.domain_size)
    return CellDomain(tuple(cells.attributes), tuple(tuple(v) for v in cells.domains), how, origin)


# --- what a check may look at before the data is read ----------------------------------------------

class PublicView:
    """The declared facts of a dataset, and nothing else: what may decide a refusal before reading.

    Mechanisms' ``check`` receives this before the data is read (and the real dataset
    after, with the same public attributes). Any other attribute — row counts, totals,
    whether the data is binary — is a fact about the people and raises, so a check that
    would depend on the data fails loudly in tests instead of leaking.
    """

    def __init__(self, kind: str, domain, name: str = "dataset"):
        self.kind, self.domain, self.name = kind, domain, name

    @property
    def n_items(self) -> int:
        self._need("incidence", "n_items")
        return self.domain.size

    @property
    def item_labels(self) -> np.ndarray:
        self._need("incidence", "item_labels")
        return self.domain.labels

    @property
    def domain_size(self) -> int:
        self._need("cells", "domain_size")
        return self.domain.size

    @property
    def attributes(self):
        self._need("cells", "attributes")
        return list(self.domain.attributes) if self.domain.values is not None else None

    @property
    def domains(self):
        self._need("cells", "domains")
        return None if self.domain.values is None else [list(v) for v in self.domain.values]

    def _need(self, kind: str, attribute: str) -> None:
        if self.kind != kind:
            raise AttributeError(attribute)

    def __getattr__(self, attribute):
        raise AttributeError(f"'{attribute}' is a fact about the data, not a declared one: it cannot decide "
                             "anything before the data is read")


def public_view(data) -> PublicView:
    """The public view of a dataset that carries a declared domain."""
    if data.domain is None:
        raise ParameterError(ITEMS_CHOICES_TEXT if data.kind == "incidence" else DOMAINS_CHOICES_TEXT)
    return PublicView(data.kind, data.domain, data.name)


def require_domain(data) -> None:
    """A secure release publishes its domain: refuse one whose domain was not declared."""
    if getattr(data, "domain", None) is None:
        what = ("The release would publish the item labels found in the data, so one person's rare item could "
                "show. " + ITEMS_CHOICES_TEXT) if data.kind == "incidence" else (
            "The release would publish the attribute values found in the data. " + DOMAINS_CHOICES_TEXT)
        raise ParameterError(what)


def declare(data, items=None, *, items_are_public: bool = False):
    """``data`` with a declared domain attached (the scripting API's way to declare it).

    ``items``: a label file path, ``"range:D"``, a list of labels, or ``"from-data"`` with
    ``items_are_public=True``; for cell tables, a dict of attribute domains or
    ``"from-data"`` with ``items_are_public=True``. Private discovery spends budget and so
    happens inside a release (``dpdesk.workflow``).
    """
    if data.kind == "cells":
        if isinstance(items, dict):
            values = tuple(tuple(str(v) for v in items[a]) if a in items else None for a in data.attributes or [])
            if data.attributes is None or any(v is None for v in values):
                raise ParameterError("Declare a domain for every attribute of the table.")
            return restrict_cells(data, CellDomain(tuple(data.attributes), values, HOW_LIST, "declared domains"))
        if items == "from-data" and items_are_public:
            declared = copy.copy(data)
            declared.domain, declared.origin = cell_domain_of(data, HOW_PUBLIC_DATA, "the data file"), data
            return declared
        raise ParameterError(DOMAINS_CHOICES_TEXT)
    if isinstance(items, (list, tuple, np.ndarray)):
        labels = [str(x) for x in items]
        if not labels or len(set(labels)) != len(labels):
            raise ParameterError("The declared item list must be non-empty and list each item once.")
        return project(data, ItemDomain(np.array(labels, dtype=object), HOW_LIST, "a list given to the API"))
    declaration = parse_items_option(None if items is None else str(items), public=items_are_public)
    if declaration is None:
        raise ParameterError(ITEMS_CHOICES_TEXT)
    if declaration.kind == HOW_DISCOVERED:
        raise ParameterError("Private discovery spends budget, so it happens inside a release "
                             "(dpdesk.workflow.secure_release with items=…).")
    if declaration.kind == HOW_PUBLIC_DATA:
        check_identifier_labels(data)
        return project(data, public_data_domain(data))
    return project(data, declared_domain(declaration))
