"""What a release publishes: whole numbers ≥ 0 by default, raw values on request, and margins of error
that hold (issue #16).

The noise's part of the margins (``release.noise_margin``) is checked against seeded runs on data whose
noise-free values are known exactly: every item is held by the same number of people and nobody holds
more than Δ items, so LPA's and DPSense's counts without noise are that number, and so is every GS group's
average — the error of a published value is its noise alone. LPA with the bound declared to hold publishes
exactly that margin. The total margins (noise and bias, against true counts) are tested in
tests/mechanisms/test_margins.py.
"""

import json

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import dpdesk
from dpdesk import api
from dpdesk.mechanisms.publish import publish, published_margin, round_up
from dpdesk.privacy.ledger import Ledger
from dpdesk.report.export import verify_export
from dpdesk.workflow import reexport, release_to_files
from tests.privacy.test_ledger import small_data
from tests.report.test_no_leak import CELL_SETTINGS, crafted_cells, declared_params

EVEN_ITEMS, EVEN_COUNT, EVEN_ROW = 202, 1000, 4  # d (so GS-R's last group has 6 items), count, items per person


def even_data(items=EVEN_ITEMS, count=EVEN_COUNT, row=EVEN_ROW):
    """Every item held by exactly ``count`` people, every person holding ``row`` items."""
    people = count * items // row
    cols = (np.arange(people * row) % items).reshape(people, row)
    matrix = sp.csr_matrix((np.ones(cols.size), (np.repeat(np.arange(people), row), cols.ravel())),
                           shape=(people, items))
    data = dpdesk.from_matrix(matrix, [f"item{j}" for j in range(items)], name="even")
    assert (data.column_counts == count).all() and data.summary()["max_row_count"] == row
    return data


@pytest.fixture(scope="module")
def even():
    return even_data()


def seeded_errors(data, mechanism_id, runs, *, raw, noise=False, **params):
    """(published − noise-free value, margin95) over ``runs`` seeded runs, and the releases' reports. With
    ``noise`` the margins are the noise's part alone, as margin95 would publish it (``release.noise_margin``)."""
    errors, margins, reports = [], [], []
    for seed in range(runs):
        release = api.release(data, mechanism_id, epsilon=1.0, rng=seed, **params)
        noise_part = np.broadcast_to(np.asarray(release.noise_margin, dtype=float), np.shape(release.values))
        release = publish(release, raw=raw)
        errors.append(np.asarray(release.values, dtype=float) - EVEN_COUNT)
        margins.append(np.asarray(published_margin(noise_part, whole=not raw), dtype=float) if noise else
                       np.asarray(release.margin95, dtype=float))
        reports.append(release.report)
    return np.concatenate(errors), np.concatenate(margins), reports


def coverage(errors, margins, shrink=0.0):
    return float(np.mean(np.abs(errors) <= margins - shrink + 1e-9))


def sampling_error(n, p=0.95):
    return float(np.sqrt(p * (1 - p) / n))


# -- margins agree with the noise ------------------------------------------------------------------
def test_lpa_margin_is_the_95_percent_quantile_of_its_noise(even):
    """Whole numbers: the margin is the smallest whole number that 95% of the errors stay within (the bound is
    declared to hold, so nothing is spent on the cut to Δ and the noise is the whole error)."""
    errors, margins, reports = seeded_errors(even, "lpa", 100, raw=False, bound=EVEN_ROW, bound_holds=True)
    assert [step["step"] for step in reports[0]["budget"]] == ["noisy counts"]
    assert np.all(margins == margins[0]) and margins[0] == int(margins[0])  # Δ/ε everywhere: one whole margin
    slack = 3 * sampling_error(errors.size)
    assert coverage(errors, margins) >= 0.95 - slack
    assert coverage(errors, margins, shrink=1) <= 0.95 + slack  # one less would not cover 95%
    assert np.quantile(np.abs(errors), 0.95, method="inverted_cdf") == margins[0]


@pytest.mark.parametrize("raw", [True, False], ids=["raw", "whole"])
def test_gs_r_margin_is_the_95_percent_quantile_of_the_noise_on_its_group(even, raw):
    """Raw: the margin of a group's noisy average is the 95% quantile of its noise (49 groups of 4 items
    and one of 6 per run; a group's items share its error). Whole numbers: ⌊m + 0.5⌋, as the error of a rounded
    value against a whole number is a whole number at most m + 0.5. (GS-R publishes no margin — its random groups
    hide which item is large — but its noise's part is the one every grouped release builds on.)"""
    runs = 300
    errors, margins, _ = seeded_errors(even, "gs-r", runs, raw=raw, noise=True, bound=EVEN_ROW)
    slack = 3 * sampling_error(runs * (EVEN_ITEMS // EVEN_ROW))
    assert coverage(errors, margins) >= 0.95 - slack
    if raw:
        # the noise on an average of 4 (6) items lies on a grid of 1/4 (1/6): one step below the margin
        # (1/6 is less than a step for both) covers less than 95%
        assert coverage(errors, margins, shrink=1 / 6) <= 0.95 + slack
        assert abs(np.quantile(np.abs(errors), 0.95, method="inverted_cdf") - margins.max()) <= 0.01 * margins.max()
    else:
        _, raw_margins, _ = seeded_errors(even, "gs-r", 1, raw=True, noise=True, bound=EVEN_ROW)
        assert np.allclose(np.unique(margins), np.floor(np.unique(raw_margins) + 0.5), atol=0.011)


@pytest.mark.parametrize("mechanism_id", ["gs-r", "gs-s-col", "gs-s-row", "gs"])
def test_gs_error_to_expect_quotes_the_margin_of_a_full_group(even, mechanism_id):
    """The report's "Error to expect" for a group average is the raw margin95 of a full group (the same discrete
    quantile), not a continuous approximation of it."""
    release = api.release(even, mechanism_id, epsilon=1.0, rng=3, bound=EVEN_ROW)
    w = int(release.report.get("chosen_group_size") or EVEN_ROW)
    noise = published_margin(np.asarray(release.noise_margin, dtype=float), whole=False)
    margins, sizes = np.unique(noise, return_counts=True)
    full_group = margins[np.argmax(sizes)]  # every group but the last has w items
    expected = release.report["expected_error"]
    assert float(round_up(expected["within_95"])) == full_group  # margin95 is rounded up to 3 digits
    assert f"full group of {w:,} items" in expected["text"]


def test_dpsense_margin_is_the_95_percent_quantile_of_its_noise(even):
    """θ* is chosen privately in every run (its noise scale θ*/ε_p with it); pooled over runs, the
    errors stay within their run's margin 95% of the time, and within 95% of it less often."""
    errors, margins, reports = seeded_errors(even, "dpsense", 100, raw=True, noise=True)
    assert all(r["selection"]["theta"] >= EVEN_ROW for r in reports)  # no row was scaled down: no bias
    assert len({r["selection"]["theta"] for r in reports}) > 3  # the margin follows the private θ*
    slack = 3 * sampling_error(errors.size)
    assert coverage(errors, margins) >= 0.95 - slack
    assert coverage(errors, 0.95 * margins) <= 0.95 + slack
    assert abs(np.quantile(np.abs(errors) / margins, 0.95) - 1) < 0.03


def test_fpa_margin_covers_its_noise(even):
    """FPA's noise is a sum of Laplace terms; the margin of one Laplace of the same spread covers it."""
    errors, margins, _ = seeded_errors(even, "fpa", 60, raw=True, noise=True, bound=EVEN_ROW, rho=3)
    assert coverage(errors, margins) >= 0.95 - 3 * sampling_error(errors.size)
    assert coverage(errors, margins) <= 0.98  # and not by much more (a sum of 5 Laplace terms: 97.3%)


# -- whole numbers -----------------------------------------------------------------------------------
def incidence_cases():
    return [pytest.param(m.id, id=m.id) for m in dpdesk.mechanisms("incidence") if m.releasable]


@pytest.mark.parametrize("mechanism_id", incidence_cases())
def test_every_count_mechanism_publishes_whole_numbers_and_margins(mechanism_id, tmp_path, dpdesk_home):
    """Small counts and a small ε: the raw values are fractional or negative, the published ones never."""
    data = small_data("shop", seed=5, rows=40, items=30, prefix="p")
    mechanism = dpdesk.mechanisms.get(mechanism_id)
    params = declared_params(mechanism, {"rho": 4} if mechanism_id == "fpa" else None)
    written = release_to_files(data, mechanism_id, 0.3, params, tmp_path / "out", formats=("csv", "json", "parquet"))
    table = pd.read_csv(tmp_path / "out" / "release.csv", dtype={"item": str})
    assert list(table.columns) == ["item", "noisy_count", "margin95"]
    assert table["noisy_count"].dtype.kind == "i" and (table["noisy_count"] >= 0).all()
    raw = written.release.unrounded["values"]
    assert np.array_equal(table["noisy_count"], np.maximum(np.floor(raw + 0.5), 0))
    metadata = json.loads((tmp_path / "out" / "release.json").read_text(encoding="utf-8"))
    publication = metadata["publication"]
    assert publication["form"] == "whole numbers ≥ 0" and "margin95" in metadata["columns"]
    if publication.get("margin_withheld"):  # 40 people at ε = 0.3: most estimates are too uncertain
        assert table["margin95"].isna().all() and all(row["margin95"] is None for row in metadata["values"])
        assert publication["margin_covers"].startswith("No margin of error is published: ")
        assert publication["margin95"].startswith("Empty")
    else:
        assert (table["margin95"] > 0).all() and np.isfinite(table["margin95"]).all()
        assert "95%" in publication["margin95"] and "true count" in publication["margin95"]
        assert publication["margin_covers"].startswith("The margin covers the noise")
        assert [row["margin95"] for row in metadata["values"]] == list(table["margin95"])
    assert bool(publication.get("margin_withheld")) == (not mechanism.margins_published or
                                                        bool(written.release.margin_withheld))
    assert list(pd.read_parquet(tmp_path / "out" / "release.parquet").columns) == list(table.columns)


def test_the_raw_values_are_published_on_request(tmp_path, dpdesk_home):
    data = small_data("shop", seed=5, rows=40, items=30, prefix="p")
    written = release_to_files(data, "gs-r", 0.3, {"bound": 3}, tmp_path / "out", raw=True)  # (no margin)
    table = pd.read_csv(tmp_path / "out" / "release.csv", dtype={"item": str})
    assert not np.all(table["noisy_count"] == np.round(table["noisy_count"]))  # group averages, as they are
    assert np.allclose(table["noisy_count"], written.release.values) and written.release.unrounded is None
    metadata = json.loads((tmp_path / "out" / "release.json").read_text(encoding="utf-8"))
    assert metadata["publication"]["form"] == "raw values"
    assert "rounding" not in metadata["publication"]["margin95"]  # no rounding to cover


def test_a_groups_items_share_one_published_value(tmp_path, dpdesk_home, data_dir):
    """GS: equal raw values (a group) stay equal when rounded — the group's value is rounded once."""
    data = dpdesk.declare(dpdesk.load(data_dir / "chess.dat.gz"), "from-data", items_are_public=True)
    for mechanism_id in ("gs-r", "gs", "alpa"):
        release = publish(api.release(data, mechanism_id, epsilon=0.5, rng=3, bound=37))
        raw = release.unrounded["values"]
        pairs = set(zip(np.round(raw, 9), release.values))
        assert len(pairs) == len(np.unique(np.round(raw, 9)))  # one published value per raw value
        assert "rounded once" in " ".join(release.report["publication"]["notes"])


@pytest.mark.parametrize("mechanism_id", [pytest.param(m.id, id=m.id) for m in dpdesk.mechanisms("cells")])
def test_cell_summaries_list_whole_values_and_say_what_an_absent_cell_means(mechanism_id, tmp_path, dpdesk_home):
    data = crafted_cells()
    mechanism = dpdesk.mechanisms.get(mechanism_id)
    params = declared_params(mechanism, CELL_SETTINGS.get(mechanism_id))
    written = release_to_files(data, mechanism_id, 0.5, params, tmp_path / "out")
    table = pd.read_csv(tmp_path / "out" / "release.csv")
    assert table.columns[-1] == "margin95"
    selected = mechanism_id not in ("geometric", "sketch")  # listed because their noisy counts were large
    assert table["margin95"].isna().all() if selected else (table["margin95"] > 0).all()
    assert table["value"].dtype.kind == "i"
    raw = written.release.unrounded["cells"] if mechanism_id != "sketch" else None
    if mechanism_id == "sketch":  # signed bucket sums: negatives stay (the report says why)
        assert (table["value"] < 0).any()
        assert written.release.report["publication"]["form"] == "whole numbers that may be below 0"
    elif "weight" in table:  # a weighted sample: every sampled cell stays, its weight keeps its sign
        assert len(table) == len(raw) and (table["value"] >= 0).all()
        assert table["value"].tolist() == np.maximum(raw.values, 0).tolist()
        assert table["weight"].dtype.kind == "i"
        assert table["weight"].tolist() == np.floor(np.asarray(raw.weights) + 0.5).tolist()
        assert "may be below 0" in " ".join(written.release.report["publication"]["notes"])
    else:
        assert (table["value"] >= 1).all()
        assert len(table) == int((raw.values > 0).sum())  # only the counts below 1 were left out
    if raw is not None:  # the report counts what was published
        assert written.release.report["summary"]["cells listed"] == len(table)
    notes = " ".join(written.release.report["publication"]["notes"])
    assert ("not listed" in notes) != (mechanism_id == "sketch")


# -- the ledger keeps what was published; re-export is byte-identical, in both forms -----------------
def test_reexport_writes_the_same_bytes_and_the_raw_values_on_request(tmp_path, dpdesk_home):
    data = small_data("shop", seed=5, rows=40, items=30, prefix="p")
    formats = ("csv", "parquet", "json")
    written = release_to_files(data, "gs", 0.5, {"bound": 3}, tmp_path / "first", formats=formats)
    entry = Ledger.open().entries(kinds=("release",))[-1]
    record = entry.release_record()
    assert record["values"] == list(written.release.values)  # the ledger keeps what was published
    reexport(entry.id, tmp_path / "again", formats=formats)
    for name in ("release.csv", "release.parquet"):
        assert (tmp_path / "again" / name).read_bytes() == (tmp_path / "first" / name).read_bytes()
    raw = reexport(entry.id, tmp_path / "raw", formats=formats, raw=True)
    table = pd.read_csv(tmp_path / "raw" / "release.csv", dtype={"item": str})
    assert np.allclose(table["noisy_count"], written.release.unrounded["values"])
    assert raw.release.report["publication"]["first_published_as"] == "whole numbers ≥ 0"
    ledger = Ledger.open()
    assert verify_export(ledger, tmp_path / "first") is None and verify_export(ledger, tmp_path / "raw") is None
    (tmp_path / "raw" / "release.csv").write_text(table.to_csv(index=False).replace(",", ";"))
    assert "differs" in verify_export(ledger, tmp_path / "raw")
