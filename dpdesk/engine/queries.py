"""Every statistic the mechanisms need, written once as SQL over one canonical relation.

The relation (:mod:`.relation`) has one row per person, in the order of the source:
``row`` (0, 1, 2, …) and ``items``, the person's distinct item codes. Everything a
mechanism reads from incidence data is one of these queries (docs/ARCHITECTURE.md §2):

=========================  ===============================================  ======================
statistic                  query                                            used by
=========================  ===============================================  ======================
item counts                :func:`item_counts`                              labels, ALPA/DIFF
                                                                            without Δ, summaries
row-length histogram       :func:`length_histogram`                         DPSense, summaries
(item, row length) counts  :func:`item_length_counts`                       DPSense, DPSense-S
counts of rows within Δ    :func:`item_counts` with ``most=Δ``              LPA, ALPA, GS family,
                                                                            FPA, DIFF, discovery
rows longer than Δ         :func:`rows_longer` (streamed, row order)        the same: truncated by
                                                                            *our* sampler
every row                  :func:`rows_longer` with Δ = −1 (streamed)       fingerprint, GS's one
                                                                            item per row
chosen rows                :func:`chosen_rows`                              GS-S row sampling
cell counts                :func:`cell_counts`                              Cormode's summaries
=========================  ===============================================  ======================

They are written in DuckDB's SQL and translated for Spark SQL by SQLGlot
(:func:`translate`). Why SQLGlot rather than Ibis: the statistics are a handful of
GROUP BY and filter queries, which SQL states directly and which we can read, test and
log as text; SQLGlot is one pure-Python wheel with no dependencies, while Ibis brings a
dataframe layer, its own expression language and a dozen further wheels for stewards to
carry offline — for no query we need. Functions whose names differ (``ARRAY_LENGTH`` →
``SIZE``, ``UNNEST`` → ``EXPLODE``, ``LIST`` → ``COLLECT_LIST``) are exactly what SQLGlot
translates; ``tests/engine/test_spark.py`` runs the translated queries on Spark and checks
the figures equal DuckDB's.
"""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=256)
def translate(sql: str, dialect: str) -> str:
    """``sql`` (DuckDB) in the engine's dialect."""
    if dialect == "duckdb":
        return sql
    import sqlglot

    return sqlglot.transpile(sql, read="duckdb", write=dialect)[0]


def _within(relation: str, most: int | None, least: int | None) -> str:
    conditions = []
    if most is not None:
        conditions.append(f"ARRAY_LENGTH(items) <= {int(most)}")
    if least is not None:
        conditions.append(f"ARRAY_LENGTH(items) > {int(least)}")
    where = " WHERE " + " AND ".join(conditions) if conditions else ""
    return f"SELECT items FROM {relation}{where}"


def item_counts(relation: str, *, most: int | None = None) -> str:
    """(code, n): how many people hold each item; with ``most``, only people with at most that many items."""
    return (f"SELECT code, COUNT(*) AS n FROM (SELECT UNNEST(items) AS code FROM ({_within(relation, most, None)}) "
            f"AS kept) AS cells GROUP BY code")


def length_histogram(relation: str) -> str:
    """(length, n): how many people hold each number of items (0 included)."""
    return (f"SELECT length, COUNT(*) AS n FROM (SELECT ARRAY_LENGTH(items) AS length FROM {relation}) AS lengths "
            f"GROUP BY length")


def item_length_counts(relation: str, *, longer_than: int) -> str:
    """(code, length, n): people with ``length`` items who hold the item, for lengths above ``longer_than``."""
    return (f"SELECT code, length, COUNT(*) AS n FROM (SELECT UNNEST(items) AS code, ARRAY_LENGTH(items) AS length "
            f"FROM ({_within(relation, None, longer_than)}) AS kept) AS cells GROUP BY code, length")


def shape(relation: str) -> str:
    """(rows, cells): the number of people and of (person, item) cells."""
    return f"SELECT COUNT(*) AS rows, SUM(ARRAY_LENGTH(items)) AS cells FROM {relation}"


def rows_longer(relation: str, longer_than: int, *, ordered: bool) -> str:
    """(row, items) of the people with more than ``longer_than`` items, in row order."""
    sql = f"SELECT row, items FROM {relation} WHERE ARRAY_LENGTH(items) > {int(longer_than)}"
    return sql + " ORDER BY row" if ordered else sql


def row_lengths(relation: str, *, ordered: bool) -> str:
    """(row, length) of every person, in row order."""
    sql = f"SELECT row, ARRAY_LENGTH(items) AS length FROM {relation}"
    return sql + " ORDER BY row" if ordered else sql


def chosen_rows(relation: str, chosen: str) -> str:
    """(row, items) of the people whose row number is in the one-column table ``chosen``, in row order."""
    return f"SELECT row, items FROM {relation} WHERE row IN (SELECT row FROM {chosen}) ORDER BY row"


def cell_counts(relation: str, attributes: list[str]) -> str:
    """(attribute values…, n): the contingency table of records over ``attributes`` (quoted names)."""
    columns = ", ".join(attributes)
    return f"SELECT {columns}, COUNT(*) AS n FROM {relation} GROUP BY {columns}"
