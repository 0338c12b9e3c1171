"""Margins that cover the total error against the TRUE counts (issue 28).

Seeded runs of the release's own code path (``run`` then ``publish``) on the shared Groceries
data (9,835 baskets, 169 items) at the issue's settings: Δ = 5, the mean basket rounded up, cuts a
third of the items people hold (true counts up to 26% above the truncated ones), and GS averages
items in groups. The coverage thresholds are the issue's (93% of all items, 90% of the 100 largest);
a margin of the noise alone covers about half of all items and a quarter of the largest there
(``test_a_noise_only_margin_fails_the_coverage_test`` plants it and shows the check fails), and a
margin that covers by being huge fails the width check.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import dpdesk
from dpdesk import api
from dpdesk.mechanisms import margins
from dpdesk.mechanisms.publish import publish, published_margin
from dpdesk.privacy.randomness import SeededRandom
from tests.conftest import DATA

EPSILON, BOUND, SEEDS, TOP = math.log(2), 5, 4, 100
ALL, LARGEST, WIDTH = 0.93, 0.90, 6.0  # coverage (the issue's) and the widest median margin over median error


@pytest.fixture(scope="module")
def groceries():
    return dpdesk.load(DATA / "groceries.csv.gz")


def published_runs(data, mechanism_id, seeds=SEEDS, epsilon=EPSILON, **params):
    mechanism, eps, values = api.validate(data, mechanism_id, epsilon, params)
    prepared = api.prepare(data, mechanism, eps, values)
    for seed in range(seeds):
        source = SeededRandom(np.random.default_rng(np.random.SeedSequence(28, spawn_key=(seed,))), seed=seed)
        yield publish(mechanism.run(data, prepared, eps, values, source), mechanism=mechanism)


def coverage(data, releases) -> tuple[float, float, float]:
    """(share of all items within ±margin95 of their TRUE count, share of the 100 largest, median margin over
    median absolute error), pooled over the releases."""
    truth = np.asarray(data.column_counts, dtype=float)
    top = np.argsort(-truth, kind="stable")[:TOP]
    inside, inside_top, margin, error = [], [], [], []
    for release in releases:
        assert release.margin95 is not None, release.report["publication"].get("margin_withheld")
        e = np.abs(np.asarray(release.values, dtype=float) - truth)
        m = np.asarray(release.margin95, dtype=float)
        inside.append(e <= m)
        inside_top.append(e[top] <= m[top])
        margin.append(m)
        error.append(e)
    ratio = float(np.median(np.concatenate(margin)) / max(np.median(np.concatenate(error)), 1.0))
    return float(np.concatenate(inside).mean()), float(np.concatenate(inside_top).mean()), ratio


def assert_covers(data, releases, what):
    every, largest, ratio = coverage(data, releases)
    print(f"{what}: all {every:.1%}, largest {largest:.1%}, median margin / median error {ratio:.2f}")
    assert every >= ALL, (what, every)
    assert largest >= LARGEST, (what, largest)
    assert ratio <= WIDTH, (what, ratio)


@pytest.mark.parametrize("mechanism_id", ["gs", "lpa", "gs-s-col"])
def test_the_margin_covers_the_total_error_on_groceries(groceries, mechanism_id):
    """The issue's path: a recommended mechanism at Δ = the mean basket rounded up, ε = ln 2 (printed: the shares
    of all items and of the 100 largest covered, and the width)."""
    params = {"bound": BOUND}
    if mechanism_id.startswith("gs"):
        params["diagnostics"] = False
    assert_covers(groceries, published_runs(groceries, mechanism_id, **params), mechanism_id)


def test_a_noise_only_margin_fails_the_coverage_test(groceries, monkeypatch):
    """The bug the issue found (BMS-WebView-2: 2,008 ±16.5 published, 3,766 true): GS's margins with the noise
    alone. Planted here, the coverage check above fails on the same runs (about 53% of all items and 27% of the
    largest are within it)."""
    monkeypatch.setattr(margins, "total_margin", lambda noise, spread=0.0, loss=0.0: np.asarray(noise, float))
    every, largest, _ = coverage(groceries, published_runs(groceries, "gs", bound=BOUND, diagnostics=False))
    assert every < ALL and largest < LARGEST, (every, largest)
    with pytest.raises(AssertionError):
        assert_covers(groceries, published_runs(groceries, "gs", bound=BOUND, diagnostics=False), "noise only")


def test_a_huge_margin_fails_the_width_check(groceries, monkeypatch):
    """Covering everything by being huge does not count: ten times the margins fail the width check."""
    total = margins.total_margin
    monkeypatch.setattr(margins, "total_margin", lambda *a, **k: 10 * total(*a, **k))
    with pytest.raises(AssertionError, match="gs"):
        assert_covers(groceries, published_runs(groceries, "gs", bound=BOUND, diagnostics=False), "gs")


@pytest.mark.parametrize("mechanism_id,params", [("alpa", {}), ("fpa", {"bound": BOUND, "rho": 10}),
                                                  ("gs-r", {"bound": BOUND}), ("dpsense", {}), ("dpsense-s", {})])
def test_a_mechanism_whose_bias_nothing_private_bounds_publishes_no_margin(groceries, mechanism_id, params):
    release = next(published_runs(groceries, mechanism_id, seeds=1, **params))
    publication = release.report["publication"]
    assert release.margin95 is None and release.unrounded["margin95"] is None
    assert publication["margin_withheld"] and publication["margin95"].startswith("Empty")
    assert publication["margin_covers"] == f"No margin of error is published: {publication['margin_withheld']}."
    assert not dpdesk.mechanisms.get(mechanism_id).margins_published


def test_a_declared_bound_spends_nothing_on_the_cut_and_covers_the_noise_alone(groceries):
    """bound_holds: the steward declares no one holds more than Δ (here Δ = 32, the longest basket: true): no loss
    step, the margin is the noise's, and it covers the true counts."""
    runs = list(published_runs(groceries, "lpa", bound=32, bound_holds=True))
    assert [step["step"] for step in runs[0].report["budget"]] == ["noisy counts"]
    assert "declared that no one holds more" in runs[0].report["publication"]["margin_covers"]
    every, largest, _ = coverage(groceries, runs)
    assert every >= ALL and largest >= LARGEST


def test_no_share_for_the_estimates_publishes_no_margin(groceries):
    release = next(published_runs(groceries, "lpa", seeds=1, bound=BOUND, margin_share=0))
    assert release.margin95 is None and "margin_share = 0" in release.report["publication"]["margin_withheld"]
    assert [step["step"] for step in release.report["budget"]] == ["noisy counts"]


def test_whole_numbers_round_the_margin_of_a_count_down_to_what_can_be_reached():
    """The truth is a whole number: |x − c| ≤ m gives |round(x) − c| ≤ ⌊m + 0.5⌋, and ⌊m⌋ when x is whole already."""
    margin = np.array([0.4, 2.5, 2.49, 3.0])
    assert published_margin(margin, whole=True).tolist() == [0, 3, 2, 3]
    assert published_margin(margin, whole=True, whole_values=True).tolist() == [0, 2, 2, 3]
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 50, 10_000)
    raw = truth + rng.uniform(-2.3, 2.3, truth.size)  # every raw error within m = 2.3
    published = np.maximum(np.floor(raw + 0.5), 0)
    assert np.all(np.abs(published - truth) <= published_margin(np.full(truth.size, 2.3), whole=True))


def test_the_first_page_says_what_the_margin_covers_and_how_far_large_counts_are_pulled(groceries):
    """A seeded run (so the same page every time; w* > 1 for this seed), published as a release would be."""
    from dpdesk.report.public import public_report_html
    from tests.report.test_report_states_what_was_done import HASHES, as_released

    data = dpdesk.declare(groceries, "from-data", items_are_public=True)
    release = as_released(dpdesk.release(data, "gs", epsilon=EPSILON, bound=BOUND, rng=2, diagnostics=False))
    assert release.report["chosen_group_size"] > 1
    first = public_report_html(release, HASHES).split("The release at a glance")[0]
    assert ("The true count of each item lies within ±margin95 (the last column) of its published value 95 times in "
            "100: the margin covers the noise on the group&#x27;s average, the item&#x27;s distance from that average"
            " and the counts lost when people with more than Δ = 5 items kept a random 5 of them, the last two "
            "estimated privately" in first)
    assert "Large counts are pulled towards their group&#x27;s average: among the" in first
    assert "also lowered the counts, by about" in first  # Δ = 5 cuts a quarter of what people hold


def test_the_preview_runs_on_a_stand_in_and_says_so():
    from dpdesk.evaluation.preview import margin_preview

    preview = margin_preview("incidence", "gs", EPSILON, {"bound": BOUND}, 169, typical_row_length=4.4, people=9835)
    assert preview.margins["median"] > 0 and preview.margins["largest_values"] >= preview.margins["median"]
    assert preview.noise["median"] <= preview.margins["median"]
    assert preview.text.startswith("Preview on a stand-in of 9,835 people with about 4.4 of 169 items each")
    assert "A preview, not the release" in preview.text and "nothing was spent" in preview.text
    withheld = margin_preview("incidence", "alpa", EPSILON, {}, 169)
    assert withheld.withheld and "would publish no margin of error" in withheld.text


def test_a_loss_rate_that_only_noise_makes_is_capped():
    """At ε = 0.1 nearly every retail count is within its noise's 95% point (±347), so the window sums the loss is
    shared over shrink to almost nothing: uncapped, LPA's median margin was ±573,587 for a median value of 24. The
    rate is capped at FAR − 1 lost per kept item (margins.loss_rates): the margins stay the noise's and a share of
    the value, and still cover."""
    retail = dpdesk.load(DATA / "retail.dat.gz")
    release = next(published_runs(retail, "lpa", seeds=1, epsilon=0.1, bound=11))
    margin, values = np.asarray(release.margin95, dtype=float), np.asarray(release.values, dtype=float)
    noise = float(np.min(margin))
    assert np.median(margin) <= noise + (margins.FAR - 1) * margins.LOSS_SAFETY * max(np.median(values), 1.0) + 1
    assert np.mean(np.abs(values - retail.column_counts) <= margin) >= ALL
