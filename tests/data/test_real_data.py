"""The importers against the published figures of the real datasets (../shared/data/SOURCES.md)."""

import json
import subprocess
import sys

import pytest

import dpdesk

FIGURES = {
    # file: (rows, columns, nonzeros, max row count, average column count)
    "retail.dat.gz": (88162, 16470, 908576, 76, 55.17),
    "mushroom.dat.gz": (8124, 119, 186852, 23, 1570.18),
    "chess.dat.gz": (3196, 75, 118252, 37, 1576.69),
    "adult.data.gz": (32561, 22146, 488415, 15, 22.05),
    "ml-latest-small_ratings.csv.gz": (610, 9724, 100836, 2698, 10.37),
    "groceries.csv.gz": (9835, 169, 43367, 32, 256.61),
    "hetrec2011-lastfm-2k_user_artists.dat.gz": (1892, 17632, 92834, 50, 5.27),
}
EXPECTED_FORMAT = {
    "retail.dat.gz": "transactions", "mushroom.dat.gz": "transactions", "chess.dat.gz": "transactions",
    "adult.data.gz": "records", "ml-latest-small_ratings.csv.gz": "pairs", "groceries.csv.gz": "transactions",
    "hetrec2011-lastfm-2k_user_artists.dat.gz": "pairs",
}


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_figures_match_sources(data_dir, name):
    data = dpdesk.load(data_dir / name)
    rows, columns, nnz, max_row, avg_column = FIGURES[name]
    summary = data.summary()
    assert data.source["format"] == EXPECTED_FORMAT[name]
    assert (summary["rows"], summary["columns"], summary["nonzeros"], summary["max_row_count"]) == (rows, columns, nnz, max_row)
    assert round(summary["avg_column_count"], 2) == avg_column
    assert summary["density"] == pytest.approx(nnz / (rows * columns))
    assert summary["mean_row_count"] == pytest.approx(nnz / rows)


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_cli_inspect_json(data_dir, name):
    out = subprocess.run([sys.executable, "-m", "dpdesk.cli", "inspect", str(data_dir / name), "--json"],
                         capture_output=True, text=True, check=True)
    figures = json.loads(out.stdout)
    assert list(figures) == ["rows", "columns", "nonzeros", "density", "max_row_count", "mean_row_count",
                             "avg_column_count", "fingerprint"]
    rows, columns, nnz, max_row, avg_column = FIGURES[name]
    assert (figures["rows"], figures["columns"], figures["nonzeros"], figures["max_row_count"]) == (rows, columns, nnz, max_row)
    assert round(figures["avg_column_count"], 2) == avg_column


def test_retail_first_rows(data_dir):
    data = dpdesk.load(data_dir / "retail.dat.gz")
    labels = list(data.item_labels[:5])
    assert labels == ["0", "1", "2", "3", "4"]  # integer ids in numeric order
    first = data.matrix[0].indices
    assert [data.item_labels[j] for j in first] == [str(i) for i in range(30)]
    assert data.binary


def test_groceries_item_names(data_dir):
    data = dpdesk.load(data_dir / "groceries.csv.gz")
    labels = set(data.item_labels)
    assert {"whole milk", "citrus fruit", "semi-finished bread"} <= labels
    whole_milk = list(data.item_labels).index("whole milk")
    assert data.column_counts[whole_milk] == 2513  # arules: itemFrequency(Groceries)["whole milk"] * 9835


def test_adult_as_cells(data_dir):
    cells = dpdesk.load(data_dir / "adult.data.gz", format="records", attributes=[1, 3, 5, 6, 7, 8, 9])
    assert cells.kind == "cells"
    assert cells.total == 32561
    assert cells.domain_size == 9 * 16 * 7 * 15 * 6 * 5 * 2
    assert cells.n_cells == len(set(zip(*[cells.decode(cells.indices)[:, k] for k in range(7)])))
    assert cells.attributes == ["column 2", "column 4", "column 6", "column 7", "column 8", "column 9", "column 10"]
    assert "Private" in cells.domains[0] and "Bachelors" in cells.domains[1]
