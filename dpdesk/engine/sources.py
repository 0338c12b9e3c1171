"""Opening a file (or a database query) in an engine, with :func:`dpdesk.load`'s detection and options."""

from __future__ import annotations

import csv
import io
import os
import re
import weakref
from pathlib import Path

import numpy as np

from ..data.dataset import CellCounts, natural_order
from ..data.detect import a_kind, binary_kind, sniff
from ..data.detect import IDENTIFIER_SAMPLE, identifier_like
from ..data.loader import OPTION_NAMES, RECORDED_OPTIONS, check_options, display_name, given_names, layout
from ..data.tabular import distinct_names, record_item_columns, resolve_column
from ..data.textio import memory_budget, open_source
from ..data.tabular import delimiters_in_words
from ..errors import DataError, EmptyData, ParameterError
from ..tasks import CancelToken, ProgressFn, no_progress, scaled
from .backend import open_engine
from .base import EngineUnsupported
from .baskets import read_baskets_metadata, seal_baskets, write_baskets, write_relation_baskets
from .dataset import EngineDataset
from .relation import (baskets_relation, csv_reader, pairs_relation, quote_name, records_relation, table_columns,
                       text_column, fresh_name)


def _owned(dataset, engine):
    """Close the engine (and remove its spill folder) when the dataset is no longer used."""
    weakref.finalize(dataset, engine.close)
    return dataset


def read_file(path, format: str = "auto", *, engine: str = "duckdb", spark_master: str | None = None,
              progress: ProgressFn = no_progress, cancel: CancelToken | None = None, **options):
    unknown = set(options) - OPTION_NAMES
    if unknown:
        raise ParameterError("Unknown import option(s): " + ", ".join(sorted(unknown)) + ". Known options: "
                             + ", ".join(sorted(OPTION_NAMES)) + ".")
    check_options(format, options)
    path = Path(path)
    progress(0.0, "Reading file")
    source = open_source(path)
    kind = binary_kind(source.head(4096), path)
    if kind not in (None, "parquet"):
        raise EngineUnsupported(f"The {engine} engine reads text files and Parquet; {path.name} is {a_kind(kind)} "
                                "file, which dpdesk reads in memory: use --engine memory (or auto).")
    baskets = read_baskets_metadata(path) if not source.compressed else None
    name = options.get("name") or display_name(path)
    backend = open_engine(engine, memory_limit=options.get("memory_limit"), spark_master=spark_master)
    try:
        if baskets is not None:
            if format not in ("auto", "transactions"):
                raise DataError("this is a dpdesk baskets file (dpdesk convert): it holds transactions", path=path,
                                expected="--format transactions or auto")
            incidence = baskets_relation(backend, path, baskets.labels, cancel=cancel, fingerprint=baskets.fingerprint)
            record = {"path": str(path), "format": "transactions", "parquet": "baskets"}
            return _owned(EngineDataset(incidence, name=name, source=record), backend)
        encoding = options.get("encoding", "auto") or "auto"
        sniffed = sniff(path, source=source, encoding=encoding)
        fmt, delimiter, header = layout(sniffed, format, options, path)
        record = {"path": str(path), "format": fmt, "encoding": sniffed.encoding,
                  "delimiter": "whitespace" if delimiter is None else delimiter, "header": header}
        for key in RECORDED_OPTIONS:
            if key in options and options[key] is not None:
                record[key] = options[key]
        if options.get("keep_values"):
            raise EngineUnsupported("The engine reads yes/no data; values (keep_values) are read in memory: "
                                 "use --engine memory.")
        if fmt == "transactions":
            if sniffed.parquet:
                raise DataError("a Parquet file cannot be read as transactions", path=path,
                                expected="pairs, records or cells for Parquet, or a file made by dpdesk convert")
            converted = backend.folder / f"{fresh_name('converted')}.parquet"
            info = write_baskets(source, converted, delimiter=delimiter, encoding=sniffed.encoding,
                                 automatic=encoding == "auto", header=header,
                                 budget=memory_budget(options.get("memory_limit")),
                                 progress=scaled(progress, 0.0, 0.8), cancel=cancel)
            incidence = baskets_relation(backend, converted, info.labels, cancel=cancel)
            return _owned(EngineDataset(incidence, name=name, source=record), backend)
        if fmt not in ("pairs", "records", "cells"):
            raise EngineUnsupported(f"The engine does not read the '{fmt}' layout; use --engine memory.")
        local = None
        if backend.kind == "spark":
            # Spark reads baskets: the table is grouped by person here, by DuckDB out of core, as transaction
            # text is tokenized here (docs/SPARK.md); cell tables stay with DuckDB
            if fmt == "cells" or options.get("attributes"):
                raise EngineUnsupported("The Spark engine reads incidence data (transactions, pairs, records as items); "
                                        "count cells with --engine duckdb or memory.")
            local = open_engine("duckdb", memory_limit=options.get("memory_limit"))
        tables = local or backend
        try:
            if sniffed.parquet:
                if source.compressed:
                    raise DataError("a gzip-compressed Parquet file cannot be read by the engine", path=path,
                                    expected="the .parquet file itself")
                reader = f"read_parquet({tables.literal_path(path)})"
                names = [c for c, _ in table_columns(tables, reader)]
                offset = 0
            else:
                names = _text_names(source, delimiter, header, sniffed.encoding, path,
                                    given_names(sniffed, options, path))
                reader = csv_reader(tables, path, delimiter=delimiter, header=header, width=len(names))
                reader = f"(SELECT {', '.join(f'c{k} AS {quote_name(n)}' for k, n in enumerate(names))} FROM {reader})"
                offset = 1 + int(header)
            dataset = table_dataset(tables, reader, names, fmt, options, path=path, name=name, record=record,
                                    line_offset=offset, progress=scaled(progress, 0.0, 0.8) if local else progress,
                                    cancel=cancel)
            if local is None:
                return _owned(dataset, backend)
            codes = dataset.codes
            if not np.array_equal(codes.codes, np.arange(codes.codes.size)):
                raise AssertionError("a table's item codes are numbered 0, 1, … by pairs_relation and records_relation")
            converted = backend.folder / f"{fresh_name('converted')}.parquet"
            write_relation_baskets(local, dataset.incidence.relation, list(codes.labels), converted, cancel=cancel)
            incidence = baskets_relation(backend, converted, list(codes.labels), cancel=cancel)
            converted_dataset = EngineDataset(incidence, name=name, source=dataset.source)
            # what the table said of its columns (internal) goes with it
            converted_dataset.likely_identifiers = dataset.likely_identifiers
            converted_dataset.record_columns = dataset.record_columns
            return _owned(converted_dataset, backend)
        finally:
            if local is not None:
                local.close()
    except BaseException:
        backend.close()
        raise


def table_dataset(backend, reader: str, names: list[str], fmt: str, options: dict, *, path, name: str,
                  record: dict, line_offset: int, progress: ProgressFn = no_progress,
                  cancel: CancelToken | None = None):
    """A table (file or query result) as pairs, records or cells."""
    if fmt == "pairs":
        person = resolve_column(names, options.get("person", 0), "person")
        item = resolve_column(names, options.get("item", 1), "item")
        if person == item:
            raise ParameterError("The person and item columns must be different.")
        value = resolve_column(names, options["value"], "value") if options.get("value") is not None else None
        incidence = pairs_relation(backend, reader, names, person=person, item=item, value=value, path=path,
                                   line_offset=line_offset, progress=progress, cancel=cancel)
        return EngineDataset(incidence, name=name, source={**record, "person column": person, "item column": item})
    if fmt == "records" and not options.get("attributes"):
        columns, person = record_item_columns(names, options.get("item_columns"), options.get("person"))
        incidence = records_relation(backend, reader, columns, person=person, path=path, line_offset=line_offset,
                                     progress=progress, cancel=cancel)
        dataset = EngineDataset(incidence, name=name,
                                source={**record, "person column": person} if person is not None else record)
        dataset.record_columns = tuple(columns)
        dataset.likely_identifiers = identifier_columns(backend, reader, columns)
        return dataset
    if fmt == "records":
        attributes = [resolve_column(names, a, "attribute") for a in options["attributes"]]
        if len(set(attributes)) != len(attributes):
            raise ParameterError("An attribute is listed twice.")
        return grouped_cells(backend, reader, attributes, None, options.get("domains"), name=name, record=record,
                             cancel=cancel)
    raise EngineUnsupported("The engine reads cell-count tables in memory; use --engine memory.")


def grouped_cells(backend, reader: str, attributes: list[str], count: str | None, declared, *, name: str,
                  record: dict, cancel: CancelToken | None = None) -> CellCounts:
    """Records grouped by ``attributes`` in the engine, then numbered as :func:`records_to_cells` numbers them."""
    kinds = dict(table_columns(backend, reader))
    texts = ", ".join(f"{text_column(a, kinds[a])} AS a{k}" for k, a in enumerate(attributes))
    columns = ", ".join(f"a{k}" for k in range(len(attributes)))
    table = backend.execute(f"SELECT {columns}, COUNT(*) AS n FROM (SELECT {texts} FROM {reader}) AS t "
                            f"GROUP BY {columns}", cancel=cancel, message="Counting the cells")
    counts = table.column("n").to_numpy().astype(np.int64)
    digits, domains = [], []
    declared = declared or {}
    for k, attribute in enumerate(attributes):
        values = [str(v) for v in table.column(f"a{k}").to_pylist()]
        distinct = sorted(set(values))
        if attribute in declared:
            domain = [str(v) for v in declared[attribute]]
            if len(set(domain)) != len(domain):
                raise ParameterError(f"The declared domain of '{attribute}' lists a value twice.")
        else:
            domain = [distinct[i] for i in natural_order(distinct)]
        lookup = {v: i for i, v in enumerate(domain)}
        digits.append(np.array([lookup.get(v, -1) for v in values], dtype=np.int64))
        domains.append(domain)
    keep = np.ones(counts.size, dtype=bool)
    for column in digits:
        keep &= column >= 0
    size = 1
    for domain in domains:
        size *= len(domain)
    if size >= 2**62:
        raise ParameterError(f"The attributes span {size:.3g} cells, more than dpdesk can index (2^62).")
    index = np.zeros(int(keep.sum()), dtype=np.int64)
    for column, domain in zip(digits, domains):
        index = index * len(domain) + column[keep]
    return CellCounts(index, counts[keep], size, attributes=attributes, domains=domains, name=name, source=record,
                      domains_declared=bool(declared) and all(a in declared for a in attributes),
                      dropped_records=int(counts[~keep].sum()))


def identifier_columns(backend, reader: str, columns: list[str]) -> list[str]:
    """The columns that look like identifiers on the first rows (as :func:`dpdesk.data.tabular.identifier_columns`)."""
    kinds = dict(table_columns(backend, reader))
    texts = ", ".join(f"{text_column(c, kinds[c])} AS v{k}" for k, c in enumerate(columns))
    head = backend.execute(f"SELECT {texts} FROM {reader} LIMIT {IDENTIFIER_SAMPLE}")
    return [c for k, c in enumerate(columns) if identifier_like(head.column(f"v{k}").to_pylist())]


def _text_names(source, delimiter: str | None, header: bool, encoding: str, path,
                given: list[str] | None = None) -> list[str]:
    """Column names as the loader gives them: the steward's, the header's fields (stripped, made distinct)
    or 'column k'."""
    codec = "utf-8" if encoding in ("utf-8-sig", "binary") else encoding
    text = source.head().decode(codec, errors="replace").lstrip("\ufeff")
    for line in text.split("\n"):
        line = line.rstrip("\r")
        if line.strip():
            break
    else:
        raise EmptyData("the file contains no records", path=path, expected="at least one line of data")
    if delimiter is None:
        fields = line.split()
    else:
        fields = next(csv.reader(io.StringIO(line), delimiter=delimiter))
    if given is not None:
        if len(given) != len(fields):
            raise DataError(f"{len(given)} column names were given but the table has {len(fields)} columns",
                            path=path, expected=f"{len(fields)} names, one for each column, in order")
        return list(given)
    names = [f.strip() for f in fields] if header else [f"column {k + 1}" for k in range(len(fields))]
    return distinct_names(names)


def convert(path, out, format: str = "auto", *, progress: ProgressFn | None = None,
            cancel: CancelToken | None = None, **options) -> Path:
    """``dpdesk convert``: a data file as Parquet for repeated work, read again much faster.

    Transaction files become baskets Parquet (one row per person, :mod:`.baskets`); tables
    (pairs, records, cells) keep their columns, as text, in a plain Parquet file the
    importers read as they read the CSV.
    """
    progress = progress or no_progress
    path, out = Path(path), Path(out)
    if out.suffix.lower() != ".parquet":
        raise ParameterError(f"The output file must end in .parquet, not '{out.name}'.")
    if out.exists():
        raise ParameterError(f"{out} already exists; choose another name or remove it first.")
    if not out.parent.is_dir():
        raise ParameterError(f"The folder {out.parent} does not exist.")
    source = open_source(path)
    encoding = options.get("encoding", "auto") or "auto"
    sniffed = sniff(path, source=source, encoding=encoding)
    fmt, delimiter, header = layout(sniffed, format, options, path)
    if sniffed.parquet:
        raise ParameterError(f"{path.name} is a Parquet file already.")
    if sniffed.binary:
        raise ParameterError(f"dpdesk convert reads text files; {path.name} is {sniffed.a_kind} file, which "
                             "dpdesk reads directly (dpdesk inspect, release and compare take it as it is).")
    if fmt == "transactions":
        # written once, fingerprinted, then sealed with the fingerprint in its footer (baskets.seal_baskets)
        staged = out.with_name(f".{out.name}.{os.getpid()}.staged")
        try:
            info = write_baskets(source, staged, delimiter=delimiter, encoding=sniffed.encoding,
                                 automatic=encoding == "auto", header=header,
                                 budget=memory_budget(options.get("memory_limit")),
                                 progress=scaled(progress, 0.0, 0.6), cancel=cancel)
            with open_engine("duckdb", memory_limit=options.get("memory_limit")) as backend:
                progress(0.6, "Computing the fingerprint")
                fingerprint = EngineDataset(baskets_relation(backend, staged, info.labels, cancel=cancel)).fingerprint
            progress(0.85, "Writing the Parquet file")
            seal_baskets(staged, out, fingerprint, cancel=cancel)
        finally:
            staged.unlink(missing_ok=True)
        progress(1.0, "Converted")
        return out
    names = _text_names(source, delimiter, header, sniffed.encoding, path)
    with open_engine("duckdb", memory_limit=options.get("memory_limit")) as backend:
        reader = csv_reader(backend, path, delimiter=delimiter, header=header, width=len(names))
        columns = ", ".join(f"coalesce(trim(c{k}, ' ' || chr(9) || chr(11) || chr(12) || chr(13)), '') AS "
                            f"{quote_name(n)}" for k, n in enumerate(names))
        partial = out.with_name(f".{out.name}.part")
        try:
            backend.statement(f"COPY (SELECT {columns} FROM {reader}) TO {backend.literal_path(partial)} "
                              "(FORMAT parquet)", progress=progress, cancel=cancel, message="Converting")
            partial.replace(out)
        except DataError as error:  # DuckDB's CSV reader names only the line: say it as the loader would
            found = re.search(r"CSV Error on Line: (\d+)", str(error))
            if found is None:
                raise
            raise DataError(f"this line does not have the table's {len(names)} fields", path=path,
                            line=int(found.group(1)),
                            expected=f"{len(names)} fields separated by {delimiters_in_words(delimiter)}") from None
        finally:
            partial.unlink(missing_ok=True)
    return out
