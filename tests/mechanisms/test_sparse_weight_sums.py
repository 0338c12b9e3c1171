"""Sums of the published weight column of the sampled summaries are unbiased, in the default
whole-number form too (review of the public reports, §1).

The whole-number form once left out every sampled cell whose noisy count was 0 or below, and
with it the negative Horvitz–Thompson weights max(|v|, τ)·sign(v) that make sums unbiased:
summed weights came out 4–14 times the number of people in UCI Adult while the report called
them unbiased. Planting that drop back (``test_the_old_drop_fails_the_check``) fails the check.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import dpdesk
from dpdesk.mechanisms.base import CellSummary
from dpdesk.mechanisms.publish import publish
from dpdesk.mechanisms.sparse.mechanisms import SparseMechanism
from tests.mechanisms.test_sparse import ADULT_ATTRIBUTES

EPSILON = 1.0
SEEDS = range(12)
CASES = [("threshold", {"tau": 20.0}), ("priority", {"size": 20_000}),
         ("filter-threshold", {"threshold": 3, "tau": 20.0}), ("filter-priority", {"threshold": 3, "size": 5_000})]


@pytest.fixture(scope="module")
def adult():
    from tests.conftest import DATA

    return dpdesk.load(DATA / "adult.data.gz", format="records", attributes=ADULT_ATTRIBUTES)


def expected_sum(data, theta: int | None) -> float:
    """E[Σ weights] = E[Σ of every cell's noisy count v that passes the filter |v| ≥ θ] (internal: true counts).

    Without a filter it is the number of people ‖M‖₁. With one, a cell of count c contributes
    c − Σ_{|j|<θ} j·P(Z = j − c) (Z discrete Laplace, α = e^{−ε}); empty cells contribute 0.
    """
    total = float(np.sum(data.counts))
    if theta is None:
        return total
    alpha = math.exp(-EPSILON)
    counts = np.asarray(data.counts, dtype=np.float64)
    lost = np.zeros_like(counts)
    for j in range(-(theta - 1), theta):
        lost += j * (1 - alpha) / (1 + alpha) * alpha ** np.abs(j - counts)
    return total - float(lost.sum())


def weight_sums(data, mechanism_id: str, settings: dict) -> list[tuple[float, float, int]]:
    """(sum of published weights, sum of raw weights, cells published) of seeded whole-number releases."""
    out = []
    for seed in SEEDS:
        release = publish(dpdesk.release(data, mechanism_id, epsilon=EPSILON, rng=seed, **settings))
        raw = release.unrounded["cells"]
        out.append((float(np.sum(release.cells.weights)), float(np.sum(raw.weights)), len(release.cells)))
    return out


def check_unbiased(sums: list[float], expected: float) -> None:
    """The mean over seeds is within four standard errors (estimated from the seeds) of ``expected``."""
    sums = np.asarray(sums)
    standard_error = sums.std(ddof=1) / math.sqrt(len(sums))
    assert 4 * standard_error < 0.25 * expected  # the check can tell a 25% bias from sampling error
    assert abs(sums.mean() - expected) <= 4 * standard_error, (sums.mean(), expected, standard_error)


@pytest.mark.parametrize("mechanism_id,settings", CASES, ids=[c[0] for c in CASES])
def test_summed_published_weights_are_unbiased(adult, mechanism_id, settings):
    sums = weight_sums(adult, mechanism_id, settings)
    check_unbiased([published for published, _, _ in sums], expected_sum(adult, settings.get("threshold")))
    for published, raw, cells in sums:  # rounding moves each weight by at most 0.5
        assert abs(published - raw) <= 0.5 * cells


def test_the_old_drop_fails_the_check(adult, monkeypatch):
    """The planted bug: the whole-number form leaves out sampled cells whose noisy count is 0 or below."""
    def old_whole_cells(self, cells):
        keep = np.asarray(cells.values) > 0
        weights = None if cells.weights is None else np.floor(np.asarray(cells.weights)[keep] + 0.5)
        return CellSummary(cells.indices[keep], np.asarray(cells.values)[keep], weights, dict(cells.info))

    monkeypatch.setattr(SparseMechanism, "whole_cells", old_whole_cells)
    for mechanism_id, settings in CASES:
        sums = [published for published, _, _ in weight_sums(adult, mechanism_id, settings)]
        with pytest.raises(AssertionError):
            check_unbiased(sums, expected_sum(adult, settings.get("threshold")))


def test_the_report_says_the_weights_may_be_below_0_and_sum_to_unbiased_totals(adult):
    release = publish(dpdesk.release(adult, "priority", epsilon=EPSILON, rng=1, size=2_000))
    publication = release.report["publication"]
    notes = " ".join(publication["notes"])
    assert len(release.cells) == 2_000 == release.report["summary"]["cells listed"]  # exactly s cells, all listed
    assert np.any(release.cells.weights < 0) and np.all(release.cells.values >= 0)
    assert "may be below 0" in notes and "unbiased" in notes and "not drawn into the sample" in notes
    assert publication["form"] == "whole numbers ≥ 0"
    assert release.margin95 is None and "chosen because their noisy counts were large" in publication["margin_withheld"]
