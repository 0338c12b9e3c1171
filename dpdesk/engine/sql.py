"""Database sources: a query's result from SQLite or PostgreSQL, read in Arrow batches into DuckDB.

``--sql URL --query "SELECT …"`` on the command line; :func:`load_sql` is what the
wizard's "Database…" button calls. URLs: ``sqlite:///path/to/file.db`` (or a plain path to
a SQLite file) and ``postgresql://user:password@host:port/database`` (psycopg, the
optional extra ``dpdesk[postgres]``). DuckDB's own sqlite/postgres extensions download at
first use, which an offline machine cannot do, so the rows come through Python's
``sqlite3`` and psycopg, a batch at a time (a server-side cursor for PostgreSQL), and every
value is kept as the text the file importers would see (whole floats without ``.0``). The
result is then read as pairs, records or cells like a table file.
"""

from __future__ import annotations

import decimal
import sqlite3
from pathlib import Path
from urllib.parse import urlparse

from ..data.dataset import CellCounts
from ..errors import DataError, EmptyData, ParameterError
from ..tasks import CancelToken, ProgressFn, no_progress
from .backend import open_engine
from .base import EngineError
from .relation import fresh_name, quote_name

BATCH = 50_000  # rows fetched at a time


def _text(value) -> str | None:
    """A database value as the text a file importer would see (None stays missing)."""
    if value is None:
        return None
    if isinstance(value, float):
        if value != value:
            return None
        return str(int(value)) if value.is_integer() and abs(value) < 1e18 else str(value)
    if isinstance(value, decimal.Decimal):
        return str(int(value)) if value == value.to_integral_value() else str(value)
    if isinstance(value, (bytes, memoryview)):
        return bytes(value).decode("utf-8", errors="replace")
    return str(value)


def _where(url: str) -> str:
    """The URL without its password (for messages)."""
    parsed = urlparse(url)
    if parsed.password:
        return url.replace(f":{parsed.password}@", ":***@")
    return url


def _sqlite_rows(url: str, query: str, cancel: CancelToken | None):
    path = url[len("sqlite:///"):] if url.startswith("sqlite:///") else url
    if url.startswith("sqlite:///") and not path.startswith("/"):
        path = "/" + path if url.startswith("sqlite:////") else path
    if not Path(path).is_file():
        raise DataError("cannot open the SQLite database: there is no such file", path=path)
    try:
        connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)  # DuckDB pulls the rows
    except sqlite3.Error as error:
        raise DataError(f"cannot open the SQLite database ({error})", path=path) from None
    try:
        try:
            cursor = connection.execute(query)
        except sqlite3.Error as error:
            raise DataError(f"the query failed: {error}", path=path) from None
        names = [d[0] for d in cursor.description or []]
        if not names:
            raise DataError("the query returns no columns", path=path, expected="a SELECT")
        yield names
        while True:
            if cancel is not None:
                cancel.check()
            try:
                rows = cursor.fetchmany(BATCH)
            except sqlite3.Error as error:
                raise DataError(f"the query failed: {error}", path=path) from None
            if not rows:
                return
            yield rows
    finally:
        connection.close()


def _postgres_rows(url: str, query: str, cancel: CancelToken | None):
    try:
        import psycopg
    except ImportError:
        raise EngineError("Reading PostgreSQL needs psycopg: install dpdesk[postgres] (pip install "
                          "'psycopg[binary]').") from None
    try:
        connection = psycopg.connect(url, connect_timeout=10)
    except psycopg.Error as error:
        raise DataError(f"cannot connect to {_where(url)}: {str(error).strip().splitlines()[0]}") from None
    try:
        connection.read_only = True
        with connection.transaction():
            with connection.cursor(name=fresh_name("dpdesk_cursor")) as cursor:
                try:
                    cursor.execute(query)
                    rows = cursor.fetchmany(BATCH)
                except psycopg.Error as error:
                    raise DataError(f"the query failed: {str(error).strip().splitlines()[0]}") from None
                names = [d.name for d in cursor.description or []]
                yield names
                while rows:
                    yield rows
                    if cancel is not None:
                        cancel.check()
                    try:
                        rows = cursor.fetchmany(BATCH)
                    except psycopg.Error as error:
                        raise DataError(f"the query failed: {str(error).strip().splitlines()[0]}") from None
    finally:
        connection.close()


def query_batches(url: str, query: str, cancel: CancelToken | None = None):
    """(column names, a reader of Arrow record batches with every column as text, the reading's failure).

    DuckDB pulls the batches and turns an exception raised while reading them into its own
    error, without the original: the third item is a list that holds the error (a failed
    fetch, Cancel) so that the caller can raise it instead.
    """
    import pyarrow as pa

    if not query or not query.strip():
        raise ParameterError("Give the query that selects the data (--query \"SELECT …\").")
    scheme = urlparse(url).scheme.lower()
    if scheme in ("postgresql", "postgres"):
        rows = _postgres_rows(url, query, cancel)
    elif scheme in ("sqlite", "") or url.endswith((".db", ".sqlite", ".sqlite3")):
        rows = _sqlite_rows(url, query, cancel)
    else:
        raise ParameterError(f"Unknown database URL '{_where(url)}': use sqlite:///FILE or "
                             "postgresql://user@host/database.")
    from ..data.tabular import distinct_names

    names = distinct_names([str(n) for n in next(rows)])
    schema = pa.schema([pa.field(name, pa.string()) for name in names])

    failure: list[BaseException] = []

    def batches():
        try:
            for chunk in rows:
                columns = list(zip(*chunk))
                yield pa.RecordBatch.from_arrays([pa.array([_text(v) for v in column], type=pa.string())
                                                  for column in columns], schema=schema)
        except BaseException as error:
            failure.append(error)
            raise

    return names, pa.RecordBatchReader.from_batches(schema, batches()), failure


def load_sql(url: str, query: str, format: str = "pairs", *, name: str | None = None, memory_limit=None,
             progress: ProgressFn | None = None, cancel: CancelToken | None = None, **options):
    """Read a database query's result as pairs, records or cells (DuckDB engine); options as for files."""
    from .sources import _owned, table_dataset

    progress = progress or no_progress
    if format not in ("pairs", "records", "cells"):
        raise ParameterError("A query's result is read as pairs, records or cells (--format).")
    from ..data.loader import check_options

    check_options(format, options)
    if options.get("column_names") is not None:
        raise ParameterError("A query's result names its columns itself (rename them in the query with AS).")
    backend = open_engine("duckdb", memory_limit=memory_limit)
    try:
        progress(0.05, "Running the query")
        names, reader, failure = query_batches(url, query, cancel)
        table = fresh_name("query")
        try:
            backend.register(table, reader)
        except Exception:
            if failure:  # the rows could not be read (DuckDB's error has lost the reason)
                raise failure[0] from None
            raise
        record = {"sql": _where(url), "query": query, "format": format}
        reader_sql = f"(SELECT * FROM {table})"
        dataset = table_dataset(backend, reader_sql, names, format, options, path=None, name=name or "query",
                                record=record, line_offset=1, progress=progress, cancel=cancel)
        people = dataset.total if isinstance(dataset, CellCounts) else dataset.n_rows
        if people == 0:  # as an empty file is refused: a release of nothing would spend ε for nothing
            raise EmptyData("the query returned no rows", expected="at least one person")
        return _owned(dataset, backend)
    except BaseException:
        backend.close()
        raise


PREVIEW_ROWS = 20


def look_sql(url: str, query: str, *, progress: ProgressFn | None = None, cancel: CancelToken | None = None):
    """The import wizard's first look at a query: its columns, first rows and a guessed layout (a ``Sniffed``).

    Only the first batch of rows is fetched; the connection is closed at once.
    """
    from ..data.detect import COUNT_NAMES, Sniffed

    progress = progress or no_progress
    progress(0.0, "Running the query")
    names, reader, failure = query_batches(url, query, cancel)
    try:
        try:
            batch = reader.read_next_batch()
            rows = [[("" if v is None else str(v)) for v in row.values()] for row in batch.to_pylist()[:PREVIEW_ROWS]]
        except StopIteration:
            rows = []
        except Exception:
            if failure:
                raise failure[0] from None
            raise
    finally:
        reader.close()
    fmt = ("cells" if any(n.strip().lower() in COUNT_NAMES for n in names)
           else "pairs" if len(names) <= 3 else "records")
    progress(1.0, "Done")
    return Sniffed(fmt, None, True, "utf-8", list(names), rows, kind="database")


def database_record(url: str, query: str) -> dict:
    """What a project file keeps of a database source: the URL without its password, and the query."""
    return {"sql": _where(url).replace(":***@", "@"), "query": query}


__all__ = ["database_record", "load_sql", "look_sql", "query_batches", "quote_name"]
