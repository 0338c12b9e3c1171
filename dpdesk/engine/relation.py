"""Sources into the canonical relation the statistics read (:mod:`.queries`).

Incidence data becomes one relation, ``(row, items)``: one row per person in the order
the in-memory loader gives them (file order for baskets and records, order of first
appearance for pairs), ``items`` the person's distinct item *codes*. A code stands for a
label; :class:`Codes` maps codes to labels and to the columns of the in-memory matrix
(labels in natural order), so every figure can be compared with the in-memory path.

* transaction text (FIMI, baskets CSV, gzip) → a baskets Parquet file in the engine's
  spill folder (:func:`dpdesk.engine.baskets.write_baskets`, the loader's own tokenizer),
  then as below;
* a baskets Parquet file (``dpdesk convert``) → read in place;
* pairs (person, item[, value]) from CSV/TSV, Parquet or a database query → grouped by
  person in SQL;
* records (one row per person) → one item per attribute value (``column=value``), or
  grouped into cell counts over chosen attributes.

Text tables are read by DuckDB's CSV reader with the delimiter and header the detector
found; every value is kept as text and trimmed as the loader trims it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..data.dataset import natural_order
from ..data.tabular import item_label
from ..errors import DataError, ParameterError

_TRIM = "' ' || chr(9) || chr(11) || chr(12) || chr(13)"  # the blanks the loader trims around a field


@dataclass
class Codes:
    """Item codes of a relation: their labels, and each code's column in natural label order.

    ``codes`` are the distinct codes present (ascending); ``labels[k]`` is the label of
    ``codes[k]``; ``position[k]`` its column in the in-memory matrix.
    """

    codes: np.ndarray
    labels: np.ndarray  # object array of str
    position: np.ndarray
    _dense: np.ndarray | None = field(default=None, repr=False)

    @classmethod
    def build(cls, codes: np.ndarray, labels) -> "Codes":
        codes = np.asarray(codes, dtype=np.int64)
        order = np.argsort(codes, kind="stable")
        codes = codes[order]
        labels = np.asarray(labels, dtype=object)[order]
        natural = natural_order(list(labels))
        position = np.empty(codes.size, dtype=np.int64)
        position[natural] = np.arange(codes.size)
        return cls(codes, labels, position)

    @property
    def natural_labels(self) -> np.ndarray:
        out = np.empty(self.labels.size, dtype=object)
        out[self.position] = self.labels
        return out

    def columns(self, codes: np.ndarray, mapping: np.ndarray | None = None) -> np.ndarray:
        """The column of each code (``mapping`` replaces the natural positions, e.g. by a domain's; −1 = dropped)."""
        target = self.position if mapping is None else mapping
        codes = np.asarray(codes, dtype=np.int64)
        if self.codes.size and int(self.codes[-1]) < (1 << 26) and int(self.codes[0]) >= 0:
            if self._dense is None or self._dense_source is not target:
                dense = np.full(int(self.codes[-1]) + 1, -1, dtype=np.int64)
                dense[self.codes] = target
                self._dense, self._dense_source = dense, target
            return self._dense[codes]
        return target[np.searchsorted(self.codes, codes)]


@dataclass
class Incidence:
    """A source read into an engine as the canonical relation (its SQL name) and its codes."""

    engine: object
    relation: str
    codes: Codes
    rows: int
    cells: int
    source: dict = field(default_factory=dict)
    owned: list[Path] = field(default_factory=list)  # files made for it (in the spill folder)
    #: the content's fingerprint when the source states it (a baskets file sealed by dpdesk convert)
    fingerprint: str | None = None
    #: (code, n) of every item, when reading the source already counted them (an Arrow table)
    code_counts: object = field(default=None, repr=False)


def list_parts(items) -> tuple[np.ndarray, np.ndarray]:
    """(offsets from 0, values) of an Arrow list array, which may be a slice of a larger one.

    A slice's ``offsets`` start where the slice starts in the shared ``values`` buffer, and
    ``values`` is the whole buffer: reading it from its start would give another row's items
    (Spark's ``toArrow()`` chunks are cut into such slices). ``flatten()`` honours the slice.
    """
    offsets = items.offsets.to_numpy().astype(np.int64)
    values = items.flatten().to_numpy()
    return offsets - offsets[0], values


def quote_name(name: str) -> str:
    return '"' + str(name).replace('"', '""') + '"'


def _counter():
    n = 0
    while True:
        n += 1
        yield n


_NAMES = _counter()


def fresh_name(prefix: str) -> str:
    return f"{prefix}_{next(_NAMES)}"


# --- DuckDB readers ---------------------------------------------------------------------------------

def csv_reader(engine, path, *, delimiter: str | None, header: bool, width: int) -> str:
    """DuckDB's reader for a delimited text table, every column as text (c0, c1, …)."""
    if delimiter is None:
        from .base import EngineUnsupported

        raise EngineUnsupported("The engine reads whitespace-separated tables only as transactions; "
                             "use a comma, tab, semicolon or pipe delimiter, or --engine memory.")
    columns = ", ".join(f"'c{k}': 'VARCHAR'" for k in range(width))
    delim = "'\\t'" if delimiter == "\t" else "'" + delimiter.replace("'", "''") + "'"
    return (f"read_csv({engine.literal_path(path)}, columns={{{columns}}}, delim={delim}, quote='\"', escape='\"', "
            f"header=false, skip={1 if header else 0}, auto_detect=false, all_varchar=true, null_padding=false, "
            f"max_line_size=16777216)")


def text_column(name: str, kind: str) -> str:
    """A column as the text the loader would see: trimmed text; whole floats without '.0'; NaN as missing."""
    column = quote_name(name)
    kind = kind.upper()
    if kind in ("FLOAT", "DOUBLE", "REAL") or kind.startswith("DECIMAL"):
        return (f"CASE WHEN {column} IS NULL OR isnan(CAST({column} AS DOUBLE)) THEN '' "
                f"WHEN CAST({column} AS DOUBLE) = floor(CAST({column} AS DOUBLE)) "
                f"AND abs(CAST({column} AS DOUBLE)) < 1e18 THEN CAST(CAST({column} AS BIGINT) AS VARCHAR) "
                f"ELSE CAST({column} AS VARCHAR) END")
    return f"coalesce(trim(CAST({column} AS VARCHAR), {_TRIM}), '')"


def table_columns(engine, reader: str) -> list[tuple[str, str]]:
    described = engine.execute(f"DESCRIBE SELECT * FROM {reader}")
    return list(zip(described.column("column_name").to_pylist(), described.column("column_type").to_pylist()))


def first_bad_line(engine, table: str, condition: str, offset: int) -> int | None:
    found = engine.execute(f"SELECT MIN(line) AS line FROM {table} WHERE {condition}").column("line")[0].as_py()
    return None if found is None else int(found) + offset


def pairs_relation(engine, reader: str, names: list[str], *, person: str, item: str, value: str | None,
                   path, line_offset: int, progress=None, cancel=None) -> Incidence:
    """Pairs (person, item[, value]) grouped into one row per person, in order of first appearance."""
    kinds = dict(table_columns(engine, reader))
    src = fresh_name("pairs_src")
    select = [f"{text_column(person, kinds[person])} AS person", f"{text_column(item, kinds[item])} AS item"]
    if value is not None:
        select.append(f"{text_column(value, kinds[value])} AS value")
    engine.statement(f"CREATE TABLE {src} AS SELECT row_number() OVER () AS line, {', '.join(select)} FROM {reader}",
                     progress=progress, cancel=cancel, message="Reading the pairs")
    for column, role in ((person, "person"), (item, "item")):
        field_name = "person" if role == "person" else "item"
        line = first_bad_line(engine, src, f"{field_name} = ''", line_offset)
        if line is not None:
            raise DataError(f"the {role} is missing", path=path, line=line, column=column,
                            expected=f"a {role} identifier")
    present = "TRUE"
    if value is not None:
        line = first_bad_line(engine, src, "TRY_CAST(value AS DOUBLE) IS NULL OR NOT isfinite(TRY_CAST(value AS DOUBLE))",
                              line_offset)
        if line is not None:
            shown = engine.execute(f"SELECT value FROM {src} WHERE line = {line - line_offset}").column(0)[0].as_py()
            raise DataError(f"'{shown}' is not a number", path=path, line=line, column=value,
                            expected="a number (non-zero means the person has the item)")
        present = "CAST(value AS DOUBLE) <> 0"
    people, items, rel = fresh_name("people"), fresh_name("items"), fresh_name("baskets")
    engine.statement(f"CREATE TABLE {people} AS SELECT person, row_number() OVER (ORDER BY MIN(line)) - 1 AS row "
                     f"FROM {src} GROUP BY person", cancel=cancel)
    engine.statement(f"CREATE TABLE {items} AS SELECT item AS label, row_number() OVER (ORDER BY MIN(line)) - 1 AS code "
                     f"FROM {src} GROUP BY item", cancel=cancel)
    engine.statement(
        f"CREATE TABLE {rel} AS SELECT p.row AS row, coalesce(h.items, []::BIGINT[]) AS items FROM {people} p "
        f"LEFT JOIN (SELECT s.person, LIST_SORT(LIST(DISTINCT i.code)) AS items FROM {src} s JOIN {items} i "
        f"ON s.item = i.label WHERE {present} GROUP BY s.person) h ON p.person = h.person ORDER BY p.row",
        progress=progress, cancel=cancel, message="Grouping the pairs by person")
    labels = engine.execute(f"SELECT code, label FROM {items}")
    codes = Codes.build(labels.column("code").to_numpy(), labels.column("label").to_pylist())
    engine.statement(f"DROP TABLE {src}; DROP TABLE {people}; DROP TABLE {items}")
    return _finish(engine, rel, codes)


def records_relation(engine, reader: str, names: list[str], *, person: str | None = None, path=None,
                     line_offset: int = 1, progress=None, cancel=None) -> Incidence:
    """Records as incidence data: one item per attribute value of ``names`` (``column=value``), one row
    per record — or, with a ``person`` column, one row per person in order of first appearance, their
    records' items together (as :func:`dpdesk.data.tabular.records_to_dataset` groups them)."""
    kinds = dict(table_columns(engine, reader))
    src, labels_table, rel = fresh_name("records_src"), fresh_name("labels"), fresh_name("baskets")
    texts = ", ".join(f"{text_column(name, kinds[name])} AS v{k}" for k, name in enumerate(names))
    who = f", {text_column(person, kinds[person])} AS person" if person is not None else ""
    engine.statement(f"CREATE TABLE {src} AS SELECT *, row + 1 AS line FROM (SELECT row_number() OVER () - 1 AS row"
                     f"{who}, {texts} FROM {reader})", progress=progress, cancel=cancel, message="Reading the records")
    if person is not None:
        line = first_bad_line(engine, src, "person = ''", line_offset)
        if line is not None:
            raise DataError("the person is missing", path=path, line=line, column=person,
                            expected="a person identifier")
    parts = " UNION ALL ".join(f"SELECT DISTINCT {k} AS k, v{k} AS value FROM {src}" for k in range(len(names)))
    engine.statement(f"CREATE TABLE {labels_table} AS SELECT k, value, row_number() OVER (ORDER BY k, value) - 1 "
                     f"AS code FROM ({parts})", cancel=cancel)
    joins = " ".join(f"JOIN {labels_table} l{k} ON l{k}.k = {k} AND l{k}.value = s.v{k}" for k in range(len(names)))
    codes_list = ", ".join(f"l{k}.code" for k in range(len(names)))
    if person is None:
        engine.statement(f"CREATE TABLE {rel} AS SELECT s.row AS row, LIST_SORT([{codes_list}]) AS items FROM {src} s "
                         f"{joins} ORDER BY s.row", progress=progress, cancel=cancel, message="Coding the records")
    else:
        people = fresh_name("people")
        engine.statement(f"CREATE TABLE {people} AS SELECT person, row_number() OVER (ORDER BY MIN(line)) - 1 AS row "
                         f"FROM {src} GROUP BY person", cancel=cancel)
        engine.statement(
            f"CREATE TABLE {rel} AS SELECT p.row AS row, LIST_SORT(LIST(DISTINCT c.code)) AS items FROM "
            f"(SELECT s.person AS person, UNNEST([{codes_list}]) AS code FROM {src} s {joins}) c "
            f"JOIN {people} p ON c.person = p.person GROUP BY p.row ORDER BY p.row",
            progress=progress, cancel=cancel, message="Grouping the records by person")
        engine.statement(f"DROP TABLE {people}")
    table = engine.execute(f"SELECT k, value, code FROM {labels_table}")
    labels = [item_label(names[k], value) for k, value in zip(table.column("k").to_pylist(),
                                                                table.column("value").to_pylist())]
    codes = Codes.build(table.column("code").to_numpy(), labels)
    engine.statement(f"DROP TABLE {src}; DROP TABLE {labels_table}")
    return _finish(engine, rel, codes)


def baskets_relation(engine, path, labels: list[str] | None, *, cancel=None, fingerprint: str | None = None) -> Incidence:
    """A baskets Parquet file (``dpdesk convert``, or the text converted on the way) read in place."""
    from . import queries

    rel = fresh_name("baskets")
    engine.baskets_view(rel, path)
    # one pass lists the items and counts them: the counts are the column counts every release needs
    counts = engine.execute(queries.translate(queries.item_counts(rel), engine.dialect), cancel=cancel,
                            message="Counting the items")
    present = counts.column("code").to_numpy().astype(np.int64)
    if labels is None:  # integer mode: the items are the ids present
        present = np.sort(present)
        return _finish(engine, rel, Codes.build(present, [str(int(code)) for code in present]), counts, fingerprint)
    # label mode: every code of the footer's list is an item (a table's item may have no person with it)
    if present.size and (present.min() < 0 or present.max() >= len(labels)):
        raise DataError("an item code lies outside the label list in the Parquet footer", path=path)
    return _finish(engine, rel, Codes.build(np.arange(len(labels), dtype=np.int64), list(labels)), counts, fingerprint)


def _finish(engine, rel: str, codes: Codes, code_counts=None, fingerprint: str | None = None) -> Incidence:
    from . import queries

    if code_counts is not None:  # the cells are the item counts' sum; counting rows reads no items
        cells = int(code_counts.column("n").to_numpy().sum())
        figures = engine.execute(queries.translate(f"SELECT COUNT(*) AS rows FROM {rel}", engine.dialect))
    else:
        figures = engine.execute(queries.translate(queries.shape(rel), engine.dialect))
        cells = int(figures.column("cells")[0].as_py() or 0)
    rows = int(figures.column("rows")[0].as_py() or 0)
    return Incidence(engine, rel, codes, rows, cells, code_counts=code_counts, fingerprint=fingerprint)
