"""The public report of the GS family, ALPA, LPA and dyadic summaries says what actually ran.

Review of the public reports, §6, §10 and §14: the GS summary named a noisy total the paper
estimator never computes, budget formulas used the mechanism's ε (smaller than the release's
after a discovery step) and Δ where Δ′ = min(Δ, d) was used, the row sampling rate was raw TeX
without a value, "1 items", column meanings called averages and ranges counts and cells, and
the expected error's text and table quoted different figures.
"""

import json
import re

import numpy as np
import pytest
import scipy.sparse as sp

import dpdesk
from dpdesk.data.domain import HOW_DISCOVERED, DomainDeclaration
from dpdesk.mechanisms import gs
from dpdesk.mechanisms.publish import discrete_laplace_margin, publish, published_margin
from dpdesk.privacy.noise import discrete_laplace_quantile, laplace_quantile
from dpdesk.report.export import COLUMNS, column_meanings, render_release
from dpdesk.report.public import fmt, public_report_html
from dpdesk.workflow import release_to_files
from tests.report.test_public_report import text_of

from tests.secure_run import secure_run

GS_FAMILY = ("gs-r", "gs-s-row", "gs-s-col", "gs")
STEP_EPSILON = re.compile(r"where (ε_[a-z]) = ([0-9.e+-]+) is this step's ε")


def incidence(items=12, rows=400, seed=5, name="shop"):
    """Every person holds about a third of the items; labels declared public."""
    rng = np.random.default_rng(seed)
    dense = rng.random((rows, items)) < np.linspace(0.9, 0.05, items)
    dense[np.arange(rows), np.arange(rows) % items] = True
    data = dpdesk.from_matrix(sp.csr_matrix(dense.astype(np.int64)), [f"item{j}" for j in range(items)], name=name)
    return dpdesk.declare(data, "from-data", items_are_public=True)


def steps_of(release) -> dict:
    return {step["step"]: step for step in release.report["budget"]}


def report_text(release) -> str:
    return text_of(public_report_html(release, {"release.csv": "0" * 64}))


# --- §6: the GS summary follows the estimator --------------------------------------------------

def test_gs_paper_estimator_report_does_not_mention_a_noisy_total():
    release = publish(secure_run(incidence(), "gs", epsilon=0.69, bound=8, estimator="paper"))
    summary = release.report["mechanism"]["summary"]
    assert "noisy total" not in summary and "5%" not in summary and "declared bound Δ" in summary
    assert "noisy total of kept items" not in steps_of(release)
    text = report_text(release)
    assert "noisy total" not in text and "5% of ε" not in text


def test_gs_calibrated_summary_states_the_totals_share_of_its_own_epsilon():
    epsilon = 0.69
    release = secure_run(incidence(), "gs", epsilon=epsilon, bound=8)
    summary = release.report["mechanism"]["summary"]
    total = steps_of(release)["noisy total of kept items"]["epsilon"]
    assert total == pytest.approx(gs.TOTAL_SHARE * epsilon)
    assert "noisy total of the kept items" in summary and "of the ε GS ran with" in summary
    assert f"ε_t = {total:.4g}" in summary


def test_gs_summary_after_discovery_gives_the_totals_epsilon_not_5_percent_of_the_release(dpdesk_home, tmp_path):
    """With --items discover GS runs with ε′ < ε: the summary's ε_t is the budget table's, whatever its share."""
    data = incidence(items=4, rows=3000, seed=2)
    written = release_to_files(data, "gs", 0.69, {"bound": 8}, tmp_path / "out", reports=("html",),
                               items=DomainDeclaration(HOW_DISCOVERED, delta=1e-6))
    release = written.release
    assert release.epsilon == pytest.approx(0.69)
    steps = steps_of(release)
    total = steps["noisy total of kept items"]["epsilon"]
    assert total < gs.TOTAL_SHARE * 0.69  # 5% of GS's own ε, less than 5% of the release's
    assert f"ε_t = {total:.4g}" in release.report["mechanism"]["summary"]
    # every step is worded in its own ε, which is the one in the table's ε column
    for step in steps.values():
        for name, value in STEP_EPSILON.findall(step["description"]):
            assert float(value) == pytest.approx(step["epsilon"], rel=1e-5), (step["step"], name)
    assert "2/ε" not in json.dumps(release.report["budget"], ensure_ascii=False)
    sample = steps["noisy sample t_s"]
    assert f"1/ε_s = {1 / sample['epsilon']:.6g}" in sample["description"]
    text = text_of((tmp_path / "out" / "privacy-report.html").read_text(encoding="utf-8"))
    assert "noise of scale 2/ε" not in text


# --- §6: budget formulas in each step's own ε, with Δ′ when it differs from Δ ------------------

@pytest.mark.parametrize("mechanism_id,params", [("gs-r", {}), ("gs-s-row", {}), ("gs-s-col", {}), ("gs", {}),
                                                  ("gs", {"estimator": "paper"})])
def test_every_gs_budget_step_names_its_own_epsilon_and_the_scale_matches_it(mechanism_id, params):
    release = dpdesk.release(incidence(), mechanism_id, epsilon=0.8, bound=3, rng=4, **params)
    for step in release.report["budget"]:
        found = STEP_EPSILON.findall(step["description"])
        assert found, step
        for _, value in found:
            assert float(value) == pytest.approx(step["epsilon"], rel=1e-5)
        scale = re.search(r"noise of scale ([^=]+) = ([0-9.e+-]+)", step["description"])
        formula, printed = scale.group(1), float(scale.group(2))
        w = release.report.get("chosen_group_size") or 3
        expected = {"1/ε_s": 1, "1/ε_g": 1, "Δ/(ε_g·w*)": 3 / w, "Δ/ε_t": 3, "2Δ/ε_a": 6,
                    "3Δ/(0.8·ε_l)": 9 / 0.8}[formula] / step["epsilon"]
        assert printed == pytest.approx(expected, rel=1e-5), step
        assert "Δ′" not in step["description"]  # d = 12 ≥ Δ = 3: the declared Δ is the one used


@pytest.mark.parametrize("mechanism_id", GS_FAMILY)
def test_gs_shows_the_bound_it_used_when_d_is_below_the_declared_bound(mechanism_id):
    """d = 4 < Δ = 8: the formulas use Δ′ = min(Δ, d) = 4 and say so (the report declares Δ = 8)."""
    release = dpdesk.release(incidence(items=4), mechanism_id, epsilon=0.8, bound=8, rng=2)
    budget = json.dumps(release.report["budget"], ensure_ascii=False)
    assert "Δ′ = min(Δ, d) = 4" in budget
    assert "Δ/" not in budget  # no formula in the declared Δ
    if mechanism_id == "gs":
        averages = steps_of(release)["noisy group averages"]
        w = release.report["chosen_group_size"]
        assert f"Δ′/(ε_g·w*) = {4 / (averages['epsilon'] * w):.6g}" in averages["description"]
        assert "Δ′ = min(Δ, d) = 4" in release.report["expected_error"]["text"]


def test_row_sampling_rate_is_written_readably_with_its_value():
    release = dpdesk.release(incidence(items=4), "gs-s-row", epsilon=0.8, bound=8, rng=2)
    beta = gs.row_sampling_rate(0.8, 4)  # Δ′ = 4
    fact = release.report["public_facts"]["row sampling rate β"]
    assert "{" not in fact and "}" not in fact
    assert f"= {beta:.4g}" in fact and "Δ′ = min(Δ, d) = 4" in fact and "ε_s = 0.4" in fact
    sample = steps_of(release)["noisy sample t_s"]["description"]
    assert "{" not in sample and f"= {beta:.4g}" in sample


# --- §14: plurals ------------------------------------------------------------------------------

def test_one_item_is_singular():
    assert gs.items_text(1) == "1 item" and gs.items_text(8) == "8 items" and gs.items_text(1000) == "1,000 items"
    text = gs._average_noise_error(2.0, "1/ε_g", 1)["text"]
    assert "full group of 1 item," in text and "1 items" not in text


@pytest.mark.parametrize("mechanism_id", GS_FAMILY)
def test_gs_reports_never_write_1_items(mechanism_id):
    release = publish(secure_run(incidence(items=3), mechanism_id, epsilon=5.0, bound=1))  # groups of 1
    text = report_text(release)
    assert not re.search(r"\b1 items\b", text)
    assert re.search(r"\b1 item\b", text)


# --- §10: column meanings depend on the mechanism ----------------------------------------------

def test_alpa_column_says_it_is_one_average_of_all_items():
    release = publish(secure_run(incidence(), "alpa", epsilon=0.69, bound=8))
    meaning = column_meanings(release)["noisy_count"]
    assert "one noisy average" in meaning and "same in every row" in meaning
    assert meaning != COLUMNS["noisy_count"] and "people who have the item" not in meaning
    metadata = json.loads(render_release(release, ("csv", "json"))["release.json"])
    assert metadata["columns"]["noisy_count"] == meaning and list(metadata["columns"])[:2] == ["item", "noisy_count"]
    assert "one noisy average of all the items' counts" in release.report["publication"]["notes"][0]


@pytest.mark.parametrize("mechanism_id", GS_FAMILY)
def test_gs_column_says_it_is_the_groups_average(mechanism_id):
    release = publish(secure_run(incidence(), mechanism_id, epsilon=0.69, bound=3))
    meanings = column_meanings(release)
    assert list(meanings) == ["item", "noisy_count", "margin95"]
    assert "average count of the item's group" in meanings["noisy_count"]
    assert "average count of the item's group" in report_text(release)


def test_lpa_column_still_says_count():
    release = publish(secure_run(incidence(), "lpa", epsilon=0.69, bound=3))
    assert column_meanings(release)["noisy_count"] == COLUMNS["noisy_count"]


def test_dyadic_columns_are_ranges_not_cells():
    rng = np.random.default_rng(3)
    m = 5000
    indices = np.sort(rng.choice(m, size=300, replace=False))
    data = dpdesk.from_cells(indices, rng.integers(50, 150, size=300), m)
    release = publish(dpdesk.release(data, "dyadic", epsilon=1.0, rng=1, threshold=20))
    assert release.cells.info["kind"] == "dyadic"
    meanings = column_meanings(release)
    assert list(meanings)[:3] == ["cell", "label", "value"]
    assert "range's number" in meanings["cell"] and "dyadic" in meanings["cell"]
    assert "cells the range covers" in meanings["label"]
    assert "noisy count of the range" in meanings["value"]
    # and a plain cell summary keeps the cell meanings
    plain = publish(dpdesk.release(data, "filter2", epsilon=1.0, rng=1, threshold=20))
    assert column_meanings(plain)["cell"] == COLUMNS["cell"]


# --- §14: the expected error's text and table agree, rounded up --------------------------------

@pytest.mark.parametrize("noise", ["laplace", "geometric"])
def test_lpa_error_text_and_table_quote_the_same_rounded_up_figure(noise):
    release = dpdesk.release(incidence(), "lpa", epsilon=0.69, bound=8, noise=noise, rng=1)
    expected = release.report["expected_error"]
    counts_epsilon = next(s["epsilon"] for s in release.report["budget"] if s["step"] == "noisy counts")
    assert counts_epsilon == pytest.approx(0.69 * 0.95)  # the rest estimates what Δ cut off, for the margins
    quantile = (laplace_quantile if noise == "laplace" else discrete_laplace_quantile)(8 / counts_epsilon, 0.95)
    assert expected["within_95"] >= quantile and expected["within_95"] == np.ceil(quantile - 1e-9)
    assert f"±{fmt(expected['within_95'])} " in expected["text"]  # the table prints fmt(within_95)


@pytest.mark.parametrize("mechanism_id", GS_FAMILY)
def test_gs_error_text_and_table_quote_the_same_rounded_up_figure(mechanism_id):
    release = dpdesk.release(incidence(), mechanism_id, epsilon=0.69, bound=8, rng=1)
    expected = release.report["expected_error"]
    w = int(release.report.get("chosen_group_size") or 8)
    raw = float(discrete_laplace_margin(w * expected["noise_scale"], w))
    assert raw <= expected["within_95"] <= raw * 1.01
    assert f"±{fmt(expected['within_95'])} " in expected["text"]


def test_alpa_error_text_quotes_the_margin_of_its_noise():
    """ALPA publishes no margin (its one average hides how far each count is from it); its "Error to expect"
    quotes the noise's margin, as margin95 would have published it."""
    release = secure_run(incidence(), "alpa", epsilon=0.69, bound=8)
    margin = float(published_margin(np.asarray(release.noise_margin, dtype=float), whole=False))
    assert publish(release, raw=True).margin95 is None
    assert f"±{fmt(margin)} " in release.report["expected_error"]["text"]
