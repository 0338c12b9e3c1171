"""The GS family: exact group construction and fine-tuning, sampling, privacy audit, utility on real data.

The privacy audit at full strength runs with ``-m slow``; the CI part uses fewer runs but
still catches the planted bug of GS §3.2 (grouping by the true counts).
"""

from __future__ import annotations

import hashlib
import math

import numpy as np
import pytest
import scipy.sparse as sp

import dpdesk
from dpdesk.errors import ParameterError
from dpdesk.evaluation.compare import Entry, run_comparison
from dpdesk.mechanisms import gs
from dpdesk.privacy.randomness import SeededRandom
from tests.audit import audit, release_sampler, run_sampler
from tests.conftest import DATA
from tests.mechanisms.gs_utility import BOUND_RATIOS, COMPARED, EPSILONS, bms_like, bound_for, mean_errors

FIVE = ("lpa", "gs-r", "gs-s-row", "gs-s-col", "gs")


def incidence(rows, d: int, name: str = "rows") -> dpdesk.Dataset:
    lengths = [len(r) for r in rows]
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    indices = np.concatenate([np.asarray(sorted(r), dtype=np.int64) for r in rows]) if rows else np.zeros(0, int)
    matrix = sp.csr_matrix((np.ones(indices.size, np.uint8), indices, indptr), shape=(len(rows), d))
    return dpdesk.from_matrix(matrix, name=name)


def single_items(counts, extra_rows=()) -> dpdesk.Dataset:
    """People with one item each, giving these counts, plus ``extra_rows``."""
    rows = [[i] for i, c in enumerate(counts) for _ in range(c)] + [list(r) for r in extra_rows]
    return incidence(rows, len(counts))


def source(seed: int = 0) -> SeededRandom:
    return SeededRandom(np.random.default_rng(seed), seed=seed)


# --- groups (GS Fig. 2) -------------------------------------------------------------------------

def fig2_groups(order, w):
    """GS Fig. 2 lines 1–6, literally: ⌊d/w⌋ groups, the last one takes the rest."""
    d = len(order)
    groups_count = d // w
    groups = [list(order[j * w:(j + 1) * w]) for j in range(groups_count - 1)]
    groups.append(list(order[(groups_count - 1) * w:]))
    return groups


def test_group_boundaries_follow_fig2():
    for d in range(1, 40):
        order = list(range(d))
        for w in range(1, d + 1):
            bounds = gs.group_boundaries(d, w)
            got = [order[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
            assert got == fig2_groups(order, w), (d, w)
            assert all(len(g) >= w for g in got)
    with pytest.raises(ValueError):
        gs.group_boundaries(5, 6)


def random_grouping(rng):
    """A random number of items d, group size w, counts and item order."""
    d = int(rng.integers(1, 80))
    return d, int(rng.integers(1, d + 1)), rng.integers(0, 1000, d), rng.permutation(d)


def test_group_averages_and_spread_match_direct():
    rng = np.random.default_rng(1)
    for _ in range(50):
        d, w, counts, order = random_grouping(rng)
        bounds = gs.group_boundaries(d, w)
        averages = gs.group_averages(counts[order], bounds)
        values = gs.spread(averages, bounds, order)
        for group in fig2_groups(list(order), w):
            expected = np.mean(counts[group])
            assert np.allclose(values[group], expected, rtol=0, atol=1e-9)


def test_release_grouped_is_exact_average_plus_integer_noise_on_sums():
    rng = np.random.default_rng(2)
    for seed in range(20):
        d, w, counts, order = random_grouping(rng)
        # a negligible scale: the noise is 0 with probability 1 − 2e^{−10^6}
        values, bounds = gs.release_grouped(counts, order, w, 1e-6, source(seed))
        for group in fig2_groups(list(order), w):
            assert np.all(values[group] == np.sum(counts[group]) / len(group))
        values, bounds = gs.release_grouped(counts, order, w, 3.0, source(seed))
        sizes = np.diff(bounds)
        group_values = values[order][bounds[:-1]]
        noisy_sums = group_values * sizes
        assert np.allclose(noisy_sums, np.round(noisy_sums), atol=1e-6)  # integer noise on integer sums


def test_release_grouped_noise_scale_on_the_average():
    """Noise on each average is Laplace(b) in law: E|noise| ≈ b for every group size (last group too)."""
    d, w, b = 1003, 10, 4.0  # the last group has 13 items
    counts = np.zeros(d, dtype=np.int64)
    order = np.arange(d)
    errors_regular, errors_last = [], []
    src = source(3)
    for _ in range(300):
        values, bounds = gs.release_grouped(counts, order, w, b, src)
        group_values = values[bounds[:-1]]
        errors_regular.append(np.abs(group_values[:-1]))
        errors_last.append(abs(group_values[-1]))
    regular = np.concatenate(errors_regular)  # 29,700 draws
    # E|DL(|g|b)/|g|| is b within 0.2% here; the standard error of the mean is 0.6%
    assert abs(regular.mean() / b - 1) < 0.04
    assert 0.75 < np.mean(errors_last) / b < 1.25  # 300 draws


# --- fine-tuning: prefix sums and binary search against brute force ----------------------------

def brute_estimated_l1(sample_sorted, multiplier, numerator, noise, residual_variance=None):
    x = multiplier * np.asarray(sample_sorted, dtype=np.float64)
    d = x.size
    out = np.zeros(d)
    for w in range(1, d + 1):
        totals = []
        for row in np.atleast_2d(noise):
            total = 0.0
            for j, group in enumerate(fig2_groups(list(range(d)), w)):
                v = x[group].mean() + numerator / w * row[j]
                floor = 0.0  # an item's error is at least κ·τ_g (module notes, step 5)
                if residual_variance is not None:
                    floor = math.sqrt(2 / math.pi * np.mean(residual_variance[group]) * (1 - 1 / len(group)))
                total += np.maximum(np.abs(x[group] - v), floor).sum()
            totals.append(total)
        out[w - 1] = np.mean(totals)
    return out


@pytest.mark.parametrize("seed", range(6))
def test_estimated_l1_matches_brute_force(seed):
    rng = np.random.default_rng(100 + seed)
    d = int(rng.integers(1, 301)) if seed else 300
    sample = np.sort(rng.integers(-8, int(rng.integers(1, 400)), d))
    noise = rng.laplace(size=(int(rng.integers(1, 4)), d))
    multiplier, numerator = int(rng.integers(1, 40)), float(rng.uniform(0.05, 80))
    fast = gs.estimated_l1(sample, multiplier, numerator, noise)
    slow = brute_estimated_l1(sample, multiplier, numerator, noise)
    assert np.allclose(fast, slow, rtol=1e-10, atol=1e-6)


@pytest.mark.parametrize("seed", range(3))
def test_estimated_l1_with_a_real_slope_matches_brute_force(seed):
    """The calibrated slope is any real a ≥ 0; the lookup table is indexed by ⌈v/a⌉."""
    rng = np.random.default_rng(200 + seed)
    d = int(rng.integers(2, 250))
    sample = np.sort(rng.integers(-20, 300, d))
    sample[5:25] = sample[5]  # ties
    sample.sort()
    noise = rng.laplace(size=(2, d))
    multiplier, numerator = float(rng.uniform(0.01, 7)), float(rng.uniform(0.5, 50))
    assert np.allclose(gs.estimated_l1(sample, multiplier, numerator, noise),
                       brute_estimated_l1(sample, multiplier, numerator, noise), rtol=1e-9, atol=1e-6)
    # the spread c̃ cannot see: no item's error below √(2/π · the group's mean variance · (1 − 1/|g|))
    variance = rng.uniform(0, 40, d)
    assert np.allclose(gs.estimated_l1(sample, multiplier, numerator, noise, variance),
                       brute_estimated_l1(sample, multiplier, numerator, noise, variance), rtol=1e-9, atol=1e-6)
    # slope 0: a flat estimate, the error is the noise alone and least for one group of all items
    flat = gs.estimated_l1(sample, 0.0, numerator, noise)
    assert np.allclose(flat, brute_estimated_l1(sample, 0.0, numerator, noise), rtol=1e-9, atol=1e-9)
    assert int(np.argmin(flat)) + 1 == d


def test_estimated_l1_binary_search_path_matches_brute_force():
    """Values spread too widely for the lookup table use a binary search instead."""
    rng = np.random.default_rng(7)
    d = 150
    sample = np.sort(rng.integers(-3 * 10**7, 3 * 10**7, d))  # span far above 4d + 2^20
    sample[10:40] = sample[10]  # ties
    sample.sort()
    noise = rng.laplace(size=(2, d))
    fast = gs.estimated_l1(sample, 3, 1e6, noise)
    assert np.allclose(fast, brute_estimated_l1(sample, 3, 1e6, noise), rtol=1e-10, atol=1e-3)


def test_estimated_l1_batches_agree(monkeypatch):
    rng = np.random.default_rng(8)
    d = 257
    sample = np.sort(rng.integers(0, 50, d))
    noise = rng.laplace(size=(1, d))
    whole = gs.estimated_l1(sample, 5, 10.0, noise)
    monkeypatch.setattr(gs, "BATCH_GROUPS", 7)  # many small batches, some w split oddly
    assert np.allclose(gs.estimated_l1(sample, 5, 10.0, noise), whole, rtol=1e-12)


def test_real_l1_matches_direct():
    rng = np.random.default_rng(9)
    d = 97
    counts = rng.integers(0, 300, d)
    noise = rng.laplace(size=(2, d))
    sizes = np.array([1, 2, 5, 13, 48, 97])
    got = gs.real_l1(counts, sizes, 7.0, noise)
    for k, w in enumerate(sizes):
        expected = np.mean([sum(np.abs(counts[g] - (counts[g].mean() + 7.0 / w * row[j])).sum()
                                for j, g in enumerate(fig2_groups(list(range(d)), int(w)))) for row in noise])
        assert got[k] == pytest.approx(expected, rel=1e-12)


def test_gs_releases_with_the_argmin_of_its_estimated_curve():
    rng = np.random.default_rng(10)
    data = incidence([list(rng.choice(300, size=rng.integers(1, 8), replace=False)) for _ in range(3000)], 300)
    for seed in range(3):
        release = dpdesk.release(data, "gs", epsilon=1.0, bound=5, rng=seed, tuning_draws=2)
        curve = release.diagnostics["estimated_l1"].data
        assert curve["group_size"].tolist() == list(range(1, 301))  # small d: every size is plotted
        w = int(curve["group_size"][np.argmin(curve["estimated_l1"])])
        assert release.report["chosen_group_size"] == curve["chosen_group_size"] == w
        assert np.unique(release.values).size <= 300 // w  # ⌊d/w⌋ groups share their values
        assert "noisy group averages" in [step["step"] for step in release.budget_split]


# --- the private sample t_s -------------------------------------------------------------------

def random_rows(rng, n, d, longest):
    return [list(rng.choice(d, size=int(rng.integers(0, longest + 1)), replace=False)) for _ in range(n)]


def test_column_sample_takes_one_kept_item_per_truncated_row():
    rng = np.random.default_rng(11)
    rows = random_rows(rng, 400, 30, 12)
    data = incidence(rows, 30)
    bound = 4
    prepared = gs.prepare_rows(data.matrix, bound)
    nonempty = sum(1 for r in rows if r)
    kept_total = sum(min(len(r), bound) for r in rows)
    for seed in range(20):
        counts, sample = gs.truncated_and_column_sample(data.matrix, prepared, source(seed))
        assert sample.sum() == nonempty  # exactly one item per non-empty row
        assert counts.sum() == kept_total  # truncation keeps min(len, Δ) items per row
        assert np.all(sample <= counts)  # the sampled item is one the truncation kept
        assert np.all(counts <= data.column_counts)


def test_column_sample_is_uniform_over_a_rows_items():
    data = incidence([[0, 1, 2, 3, 4]], 5)  # one row of five items, Δ = 2: truncated first
    prepared = gs.prepare_rows(data.matrix, 2)
    src = source(12)
    picks = np.zeros(5)
    for _ in range(5000):
        counts, sample = gs.truncated_and_column_sample(data.matrix, prepared, src)
        assert counts.sum() == 2 and sample.sum() == 1 and np.all(sample <= counts)
        picks += sample
    chi2 = float(((picks - 1000) ** 2 / 1000).sum())  # 4 degrees of freedom; P(χ² > 30) ≈ 5e-6
    assert chi2 < 30, picks


def test_row_sampling_rate_spends_half_of_epsilon():
    for epsilon in (0.1, math.log(2), 1.0, 3.0):
        for bound in (1, 2, 5, 20, 76):
            beta = gs.row_sampling_rate(epsilon, bound)
            # Corollary 1 with ε₁ = εΔ/2 gives exactly ε/2
            assert math.log1p(beta * math.expm1(epsilon * bound / 2)) == pytest.approx(epsilon / 2, rel=1e-12)
            assert 0 <= gs.safe_rate(beta) < beta


def test_row_sample_keeps_rows_at_rate_beta():
    rng = np.random.default_rng(13)
    rows = random_rows(rng, 20000, 50, 6)
    data = incidence(rows, 50)
    prepared = gs.prepare_rows(data.matrix, 3)
    rate = 0.2
    sampled = []
    for seed in range(5):
        counts, sample, count = gs.truncated_and_row_sample(data.matrix, prepared, rate, source(seed))
        assert np.all(sample <= counts)
        sampled.append(count)
    mean, sd = 20000 * rate, math.sqrt(20000 * rate * (1 - rate) / 5)
    assert abs(np.mean(sampled) - mean) < 6 * sd
    # rate 1 keeps every truncated row: the sample is the truncated data
    counts, sample, count = gs.truncated_and_row_sample(data.matrix, prepared, 1.0, source(1))
    assert count == 20000 and np.array_equal(sample, counts)


def test_noisy_order_is_descending_with_random_ties():
    values = np.array([5, 9, 5, 1, 9, 5])
    seen = set()
    for seed in range(200):
        order = gs.noisy_order(values, source(seed))
        assert np.all(np.diff(values[order]) <= 0)
        seen.add(tuple(order))
    assert len(seen) == 2 * 6  # both orders of the two 9s × all orders of the three 5s


# --- mechanism level ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def small_data():
    rng = np.random.default_rng(14)
    weights = 1.0 / np.arange(1, 201) ** 1.2
    rows = [list(rng.choice(200, size=int(rng.integers(1, 12)), replace=False, p=weights / weights.sum()))
            for _ in range(5000)]
    return incidence(rows, 200, name="synthetic")


@pytest.mark.parametrize("mechanism", ["gs-r", "gs-s-row", "gs-s-col", "gs"])
def test_budget_report_and_diagnostics(small_data, mechanism):
    epsilon = 0.7
    release = dpdesk.release(small_data, mechanism, epsilon=epsilon, bound=6, rng=1)
    steps = release.budget_split
    assert sum(step["epsilon"] for step in steps) == pytest.approx(epsilon)
    # the margins' estimates (the smoothing error; the cut to Δ) take their shares from the averages' half
    margins = [step for step in steps if step["step"].startswith("estimate of")]
    unlocated = "too noisy" in release.margin_withheld  # the sample cannot locate large counts: nothing set aside
    assert [step["step"] for step in margins] == ([] if mechanism == "gs-r" or unlocated else
                                                   ["estimate of the smoothing error", "estimate of what Δ cut off"])
    assert unlocated == (mechanism == "gs-s-row")  # 5,000 people, row sampling at Δ = 6: a sample of a few dozen
    assert all(step["epsilon"] == pytest.approx(0.05 * epsilon) for step in margins)
    spent = sum(step["epsilon"] for step in margins)
    if mechanism == "gs":  # the calibrated estimate's noisy total takes its share from the averages too
        share = gs.TOTAL_SHARE * epsilon
        assert [step["step"] for step in steps][:3] == ["noisy sample t_s", "noisy total of kept items",
                                                        "noisy group averages"]
        assert [step["epsilon"] for step in steps][:3] == pytest.approx([epsilon / 2, share,
                                                                         epsilon / 2 - share - spent])
    elif mechanism != "gs-r":
        assert [step["epsilon"] for step in steps][:2] == pytest.approx([epsilon / 2, epsilon / 2 - spent])
    report = release.report
    assert report["public_facts"]["declared bound Δ (items per person)"] == 6
    assert report["expected_error"]["text"]
    # true-data facts stay internal
    assert release.internal["rows_truncated"] == int(np.sum(small_data.row_counts > 6))
    text = repr(report)
    for key in release.internal:
        assert key not in text
    for name, diagnostic in release.diagnostics.items():
        assert diagnostic.title and diagnostic.caption and diagnostic.x and diagnostic.y
        assert diagnostic.internal == (name != "estimated_l1"), name
    assert release.exploration and not np.any(np.isnan(release.values))


def test_diagnostics_off_does_not_change_the_release(small_data):
    for mechanism in ("gs-s-col", "gs"):
        with_plots = dpdesk.release(small_data, mechanism, epsilon=1.0, bound=6, rng=5)
        without = dpdesk.release(small_data, mechanism, epsilon=1.0, bound=6, rng=5, diagnostics=False)
        assert np.array_equal(with_plots.values, without.values)
        assert without.diagnostics == {}


def test_parameters_are_checked(small_data):
    with pytest.raises(ParameterError):
        dpdesk.release(small_data, "gs", epsilon=1.0, rng=1)  # the declared bound is required
    with pytest.raises(ParameterError):
        dpdesk.release(small_data, "gs", epsilon=1.0, bound=5, tuning_draws=0, rng=1)
    for mechanism in ("gs-r", "gs-s-row", "gs-s-col", "gs"):
        schema = dpdesk.mechanisms.get(mechanism).describe()
        assert schema["parameters"][0]["name"] == "bound" and schema["releasable"]


def test_bound_above_d_uses_one_group_of_all_items():
    data = incidence([[0, 1, 2], [1], [2], [0, 2]], 3)
    release = dpdesk.release(data, "gs-r", epsilon=1.0, bound=50, rng=2)
    assert np.unique(release.values).size == 1
    assert release.report["public_facts"]["group size w"] == 3


def test_all_run_in_a_comparison(small_data):
    entries = [Entry(m, {"bound": 6}) for m in FIVE] + [Entry("fpa", {"bound": 6, "rho": 5})]
    comparison = run_comparison(small_data, entries, [0.5, 1.0], 2, seed=3)
    assert len(comparison.results) == len(entries) * 2 * 2
    assert np.all(np.isfinite(comparison.results["mae"]))


# --- privacy audit ------------------------------------------------------------------------------

class GroupsByTrueCounts(gs.GS):
    """PLANTED BUG (GS §3.2): the grouping and the fine-tuning read the true counts."""

    def noisy_sample(self, data, prepared, epsilon, params, source):
        counts = data.column_counts.copy()
        return counts, counts, counts, {}


def four_item_features(person):
    """Values, the person's sum, and which items share a value (which reveals the grouping)."""

    def features(values):
        v = np.asarray(values)
        same = [(v[:, a] == v[:, b]).astype(float) for a in range(4) for b in range(a + 1, 4)]
        pattern_0123 = same[0] * same[5] * (1 - same[1])  # groups {0,1} and {2,3}
        pattern_0213 = same[1] * same[4] * (1 - same[0])  # groups {0,2} and {1,3}
        return np.column_stack([v[:, list(person)].sum(axis=1), *v.T, *same, pattern_0123, pattern_0213])

    return features


COUNTEREXAMPLE = ([11, 13, 13, 14], [11, 13, 12, 14])  # GS §3.2: D′ lacks a person holding only item 3


def check_audit(result, epsilon):
    print(result)
    assert result.epsilon_lower <= epsilon, str(result)


def test_planted_bug_grouping_by_true_counts_is_caught():
    first, second = (single_items(c) for c in COUNTEREXAMPLE)
    epsilon = 1.0
    sampler = run_sampler(GroupsByTrueCounts(), epsilon, bound=2, diagnostics=False, estimator="paper")
    result = audit(sampler, first, second, runs=1000, features=four_item_features([2]), seed=21)
    print(result)
    assert result.epsilon_lower > epsilon + 0.5, str(result)


AUDITS = {
    # case: (mechanism, neighbours, the extra person's items, extra parameters)
    "gs-r": ("gs-r", (single_items([11, 13, 13, 14]), single_items([11, 13, 13, 14], [[0, 1]])), [0, 1], {}),
    "gs-s-row": ("gs-s-row", (single_items([11, 13, 13, 14], [[1, 2]]), single_items([11, 13, 13, 14])), [1, 2], {}),
    "gs-s-col": ("gs-s-col", (single_items(COUNTEREXAMPLE[0]), single_items(COUNTEREXAMPLE[1])), [2], {}),
    # the grouping: §3.2's neighbours make the groups differ (the paper's estimate picks w* = 2 there;
    # the calibrated one sees no spread beyond the noise and mostly publishes one group of all items)
    "gs-grouping": ("gs", (single_items(COUNTEREXAMPLE[0]), single_items(COUNTEREXAMPLE[1])), [2],
                    {"estimator": "paper"}),
    "gs-grouping-calibrated": ("gs", (single_items(COUNTEREXAMPLE[0]), single_items(COUNTEREXAMPLE[1])), [2], {}),
    # the release: distinct counts keep w* = 1, and a person with Δ = 2 items moves two published values
    "gs-values": ("gs", (single_items([5, 40, 80, 120]), single_items([5, 40, 80, 120], [[1, 2]])), [1, 2],
                  {"estimator": "paper"}),
    "gs-values-calibrated": ("gs", (single_items([5, 40, 80, 120]), single_items([5, 40, 80, 120], [[1, 2]])),
                             [1, 2], {}),
    # the tuning: two pairs of close counts, so the calibrated w* is 1, 2 or 4 (about 15/83/2%), and
    # it depends on Ñ, which the extra person moves by 2
    "gs-tuning-calibrated": ("gs", (single_items([20, 22, 60, 62]), single_items([20, 22, 60, 62], [[1, 2]])),
                             [1, 2], {}),
}


def run_audit(case, runs, seed):
    mechanism, (first, second), person, extra = AUDITS[case]
    extra = dict(extra) if mechanism == "gs-r" else {"diagnostics": False, **extra}
    epsilon = 1.0
    result = audit(release_sampler(mechanism, epsilon=epsilon, bound=2, **extra), first, second, runs=runs,
                   features=four_item_features(person), seed=seed)
    check_audit(result, epsilon)
    return result


class TotalLeftUnnoised(gs.GS):
    """PLANTED BUG (issue 15): the calibrated estimate reads the exact total of kept items."""

    @staticmethod
    def noisy_total(counts, bound, total_epsilon, source):
        return int(counts.sum())


def total_sampler(mechanism, epsilon, **params):
    """A ``sample`` function returning the total the calibrated estimate used (an internal figure)."""
    from dpdesk.api import prepare
    from dpdesk.privacy.randomness import SeededRandom

    def sample(data, generator, n):
        values = mechanism.validate(data, epsilon, params)
        prepared = prepare(data, mechanism, epsilon, values)
        source = SeededRandom(generator)
        runs = (mechanism.run(data, prepared, epsilon, values, source) for _ in range(n))
        return np.array([float(release.internal["noisy_total_kept_items"]) for release in runs])

    return sample


TOTAL_NEIGHBOURS = (single_items([5, 40, 80, 120]), single_items([5, 40, 80, 120], [[1, 2]]))  # N = 245 or 247


def test_planted_bug_total_left_unnoised_is_caught():
    """The total is its own ε_t-DP step: exact, it tells the neighbours apart far beyond the whole ε."""
    epsilon = 1.0
    result = audit(total_sampler(TotalLeftUnnoised(), epsilon, bound=2, diagnostics=False), *TOTAL_NEIGHBOURS,
                   runs=500, features=lambda totals: totals, seed=22)
    print(result)
    assert result.epsilon_lower > epsilon + 2, str(result)
    result = audit(total_sampler(gs.GS(), epsilon, bound=2, diagnostics=False), *TOTAL_NEIGHBOURS,
                   runs=500, features=lambda totals: totals, seed=22)
    check_audit(result, gs.TOTAL_SHARE * epsilon)


@pytest.mark.parametrize("epsilon", [0.4, 3.0])
def test_noisy_total_has_the_scale_its_share_and_sensitivity_imply(epsilon):
    """Ñ − N is discrete Laplace of scale Δ'/ε_t: its mean absolute value, centre and whole values."""
    from dpdesk.privacy.noise import discrete_laplace_mean_abs

    rng = np.random.default_rng(23)
    data = incidence([list(rng.choice(30, size=int(rng.integers(1, 9)), replace=False)) for _ in range(300)], 30)
    bound, runs = 5, 800
    offsets = np.array([
        (lambda internal: internal["noisy_total_kept_items"] - internal["kept_items"])(
            dpdesk.release(data, "gs", epsilon=epsilon, bound=bound, rng=seed, diagnostics=False).internal)
        for seed in range(runs)])
    scale = bound / (gs.TOTAL_SHARE * epsilon)  # 250 at ε = 0.4, 33.3 at ε = 3
    # E|X| = scale within 0.01% here; its standard error over 800 draws is 3.5%
    assert abs(np.mean(np.abs(offsets)) / discrete_laplace_mean_abs(scale) - 1) < 0.12, np.mean(np.abs(offsets))
    assert abs(offsets.mean()) < 4 * math.sqrt(2) * scale / math.sqrt(runs)
    assert offsets.dtype.kind == "i"


@pytest.mark.parametrize("case", sorted(AUDITS))
def test_audit(case):
    run_audit(case, 500, seed=31)


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(AUDITS))
def test_audit_full_strength(case):
    run_audit(case, 20000, seed=41)


# --- utility on real data (the paper's qualitative findings) ------------------------------------

REAL = {
    # dataset: declared Δ. adult: every record has exactly 15 attributes, a public fact of the schema.
    # retail: 30 covers 97% of baskets (declared; not the observed maximum 76).
    "retail.dat.gz": 30,
    "adult.data.gz": 15,
}


@pytest.fixture(scope="module")
def real_errors():
    errors = {}
    for name, bound in REAL.items():
        data = dpdesk.load(DATA / name)
        truth = data.column_counts
        for mechanism in FIVE:
            extra = {} if mechanism in ("lpa", "gs-r") else {"diagnostics": False}
            errors[name, mechanism] = np.array([
                np.abs(dpdesk.release(data, mechanism, epsilon=math.log(2), bound=bound, rng=seed,
                                      **extra).values - truth).mean() for seed in range(5)])
    print({key: round(float(value.mean()), 2) for key, value in errors.items()})
    return errors


@pytest.mark.parametrize("dataset", sorted(REAL))
def test_gs_beats_lpa(real_errors, dataset):
    gs_mae, lpa_mae = real_errors[dataset, "gs"], real_errors[dataset, "lpa"]
    assert gs_mae.mean() < 0.85 * lpa_mae.mean(), (gs_mae, lpa_mae)


@pytest.mark.parametrize("dataset", sorted(REAL))
def test_column_sampling_beats_row_sampling(real_errors, dataset):
    column, row = real_errors[dataset, "gs-s-col"], real_errors[dataset, "gs-s-row"]
    assert column.mean() < 0.75 * row.mean(), (column, row)


@pytest.mark.parametrize("dataset", sorted(REAL))
def test_gs_no_worse_than_gs_r(real_errors, dataset):
    tuned, random_groups = real_errors[dataset, "gs"], real_errors[dataset, "gs-r"]
    assert tuned.mean() <= random_groups.mean(), (tuned, random_groups)


# --- the calibrated fine-tuning estimate (issue 15) ---------------------------------------------

def test_calibrate_recovers_the_mean_row_length_from_precise_inputs():
    """Noise-free t_s and Ñ: r̂ = N/n exactly, almost all of t_s's spread is signal, a ≈ r̂."""
    rng = np.random.default_rng(30)
    sample = rng.integers(0, 500, 2000)
    rows = int(sample.sum())
    calibration = gs.calibrate(sample, 3.5 * rows, 1e-3, 1e-3, 40)  # scales so small the noise is 0
    assert calibration.row_length == pytest.approx(3.5, rel=1e-12)
    # the sampling term (1 − 1/r)·mean ≈ 179 against a variance ≈ 20,800: λ̂ ≈ 0.99
    assert 0.98 < calibration.signal_share < 1.0
    assert calibration.multiplier == pytest.approx(3.5 * calibration.signal_share, rel=1e-12)
    assert calibration.spread_cap > calibration.multiplier
    # the declared bound caps r̂ (nobody keeps more than Δ' items)
    assert gs.calibrate(sample, 3.5 * rows, 1e-3, 1e-3, 2).row_length == 2.0


def test_calibrate_flattens_a_sample_that_is_only_noise():
    """t_s = noise alone: λ̂ = 0 in all but a few per cent of draws, so c̃ is flat and w* = d."""
    rng = np.random.default_rng(31)
    scale = 20.0
    flat = [gs.calibrate(rng.laplace(0, scale, 3000).round().astype(np.int64), 10**6, scale, 100.0, 50).multiplier
            for _ in range(200)]
    assert np.mean(np.array(flat) == 0) > 0.95, np.mean(np.array(flat) == 0)
    # without the shrinkage the slope would be r̂ = Δ' here and the tuning would choose small groups
    noise = rng.laplace(0, scale, 3000).round().astype(np.int64)
    order = np.argsort(-noise, kind="stable")
    draws = gs.standard_laplace(source(31), 1, 3000)
    assert int(np.argmin(gs.estimated_l1(-noise[order], 50.0, 2 * 50 / 0.1, -draws))) + 1 < 300
    assert int(np.argmin(gs.estimated_l1(-noise[order], 0.0, 2 * 50 / 0.1, -draws))) + 1 == 3000


def test_calibrate_errs_towards_fewer_items_per_row_and_respects_the_total():
    rng = np.random.default_rng(32)
    sample = rng.integers(0, 300, 1000)
    rows = int(sample.sum())
    exact = gs.calibrate(sample, 4 * rows, 1e-3, 1e-3, 40)
    noisy = gs.calibrate(sample, 4 * rows, 1e-3, 2000.0, 40)  # σ_N ≈ 2828 is taken off Ñ
    assert noisy.row_length == pytest.approx(4 * (1 - math.sqrt(gs.discrete_laplace_variance(2000.0)) / (4 * rows)))
    assert noisy.row_length < exact.row_length
    # no evidence of any kept item: nothing to smooth, one group of all items
    assert gs.calibrate(sample, -50, 1e-3, 1e-3, 40).multiplier == 0.0
    # the spread cap: counts cannot spread by more than twice their total
    cap = gs.calibrate(sample, rows // 10, 1e-3, 1e-3, 40)
    assert cap.multiplier == cap.spread_cap == pytest.approx(2 * (rows // 10) / np.abs(sample - sample.mean()).sum())


def test_calibrated_row_length_is_close_to_the_truth_on_bms_like_data():
    """r̂ against the true mean kept row length (internal) at Δ = 50× the mean, ε = ln 2."""
    data = bms_like()
    for seed in range(5):
        internal = dpdesk.release(data, "gs", epsilon=math.log(2), bound=bound_for(data, 50), rng=seed,
                                  diagnostics=False).internal
        estimate, truth = internal["estimated_mean_kept_row_length"], internal["true_mean_kept_row_length"]
        assert 0.8 < estimate / truth < 1.1, (estimate, truth)  # one σ low on purpose: about 7% here


# Releases of gs made before issue 15 (the paper's estimate was then the only one), Δ near the mean
# row length: (data, Δ, ε, seed) → (w*, SHA-256 of the released values as float64, first 16 digits)
PAPER_RELEASES = {
    ("mushroom.dat.gz", 23, math.log(2), 0): (2, "10c044f19b215b31"),  # every row has 23 items
    ("mushroom.dat.gz", 23, math.log(2), 1): (2, "dcfa60fc145b3744"),
    # 4.4 items per basket on average: rows over Δ are cut, and the cut draws changed when truncation moved
    # to Floyd's sampler (issue 17; the same distribution, fewer and other words): pinned again then
    ("groceries.csv.gz", 4, 1.0, 0): (1, "a167b84ee8d390d3"),
    ("groceries.csv.gz", 4, 1.0, 2): (1, "8db1d1263b42679d"),
    ("chess.dat.gz", 37, 0.5, 0): (3, "9d34aa04dc126d5d"),  # every row has 37 items
    ("chess.dat.gz", 37, 0.5, 1): (3, "7e3b0d5ae73e66a9"),
}


def test_paper_estimator_reproduces_the_releases_from_before_calibration():
    loaded = {}
    for (name, bound, epsilon, seed), (w, digest) in PAPER_RELEASES.items():
        data = loaded.setdefault(name, dpdesk.load(DATA / name))
        release = dpdesk.release(data, "gs", epsilon=epsilon, bound=bound, rng=seed, tuning_draws=2,
                                 estimator="paper", margin_share=0)  # no share for margins: the budget of old
        values = np.ascontiguousarray(release.values, dtype=np.float64)
        assert release.report["chosen_group_size"] == w, (name, seed)
        assert hashlib.sha256(values.tobytes()).hexdigest()[:16] == digest, (name, seed)
        assert [step["epsilon"] for step in release.budget_split] == [epsilon / 2, epsilon / 2]


def test_calibrated_release_reports_its_noise_scale_and_budget():
    data = bms_like()
    epsilon, bound = math.log(2), 129
    release = dpdesk.release(data, "gs", epsilon=epsilon, bound=bound, rng=3)
    w = release.report["chosen_group_size"]
    margins = sum(step["epsilon"] for step in release.report["budget"] if step["step"].startswith("estimate of"))
    assert margins == pytest.approx((2 if w > 1 else 1) * 0.05 * epsilon)  # the smoothing error (w > 1), the cut to Δ
    averages = epsilon / 2 - gs.TOTAL_SHARE * epsilon - margins
    assert release.report["expected_error"]["noise_scale"] == pytest.approx(bound / (averages * w))
    steps = {step["step"]: step for step in release.report["budget"]}
    assert steps["noisy total of kept items"]["share"] == pytest.approx(gs.TOTAL_SHARE)
    assert f"{bound / (gs.TOTAL_SHARE * epsilon):.6g}" in steps["noisy total of kept items"]["description"]
    # Ñ and the estimates built on it stay internal
    assert "noisy_total_kept_items" in release.internal
    assert str(release.internal["noisy_total_kept_items"]) not in repr(release.report)


def test_calibrated_tuning_does_not_collapse_on_a_noisy_sample():
    """Last.fm (1,892 people, 17,632 artists), Δ = 5× the mean row length, ε = 0.1: t_s is almost all noise.

    The paper's estimate chooses groups of ~70 artists, even averaging 10 simulations; the calibrated one
    sees no signal beyond the noise and publishes one group of all artists, as the truly best size does.
    """
    data = dpdesk.load(DATA / "hetrec2011-lastfm-2k_user_artists.dat.gz")
    bound, epsilon, seeds = bound_for(data, 5), 0.1, range(4)
    errors = mean_errors(data, {"gs": COMPARED["gs"], "gs-s-col": COMPARED["gs-s-col"],
                                "paper, 10 draws": ("gs", {"diagnostics": False, "estimator": "paper",
                                                           "tuning_draws": 10})}, bound, epsilon, seeds)
    chosen = [dpdesk.release(data, "gs", epsilon=epsilon, bound=bound, rng=seed, diagnostics=False)
              .report["chosen_group_size"] for seed in seeds]
    print({k: round(float(v.mean()), 2) for k, v in errors.items()}, chosen)
    assert min(chosen) == data.n_items
    assert errors["gs"].mean() < 0.5 * errors["gs-s-col"].mean()  # 0.29× measured
    assert errors["paper, 10 draws"].mean() > 2 * errors["gs-s-col"].mean()  # 3.0× measured


NEVER_LOSES = (  # (data, Δ ÷ mean row length, ε): cells of the issue-15 grid where a planted bug crosses the bar
    ("bms", 5, 0.1),  # gs 0.91× gs-s-col (6 seeds); gs-s-col < lpa (lpa 1.06×); the paper's estimate 1.75×
    ("hetrec2011-lastfm-2k_user_artists.dat.gz", 20, math.log(2)),  # 0.85×; paper 5.8×; slope r̂ alone 1.39×
    ("adult.data.gz", 20, 0.1),  # 0.83×; paper 3.8×
)


def load_named(name: str) -> dpdesk.Dataset:
    return bms_like() if name == "bms" else dpdesk.load(DATA / name)


def test_gs_never_loses_to_its_parts():
    """gs ≤ 1.1 × gs-s-col, and < lpa where gs-s-col < lpa (CI cells; the whole grid is the slow test)."""
    for name, ratio, epsilon in NEVER_LOSES:
        data = load_named(name)
        errors = mean_errors(data, {k: COMPARED[k] for k in ("gs", "gs-s-col", "lpa")}, bound_for(data, ratio),
                             epsilon, range(6))
        tuned, parts, lpa = (errors[k].mean() for k in ("gs", "gs-s-col", "lpa"))
        print(name, ratio, round(epsilon, 3), round(tuned / parts, 3), round(lpa / parts, 3))
        assert tuned <= 1.1 * parts, (name, ratio, epsilon, tuned, parts)
        if parts < lpa:
            assert tuned < lpa, (name, ratio, epsilon, tuned, lpa)


GENEROUS = (  # (data, Δ, ε): Δ ≥ 20× the mean row length, where the calibrated tuning pays off
    ("bms", 52, math.log(2)),  # gs 0.44× gs-s-col (4 seeds); the paper's estimate 0.87×
    ("bms", 129, math.log(2)),  # 0.49×; paper 1.57×
    ("bms", 267, math.log(2)),  # the Δ for BMS-WebView-1: 0.44× (MAE 148 against 334); paper 2.42×
    ("groceries.csv.gz", 220, math.log(2)),  # 0.34×; paper 1.87×
)


def test_generous_bound_gs_beats_gs_s_col_by_far():
    """Δ ≥ 20× the mean row length: gs ≤ 0.6 × gs-s-col (where the best group size allows it at all)."""
    for name, bound, epsilon in GENEROUS:
        data = load_named(name)
        errors = mean_errors(data, {k: COMPARED[k] for k in ("gs", "gs-s-col")}, bound, epsilon, range(4))
        ratio = errors["gs"].mean() / errors["gs-s-col"].mean()
        print(name, bound, round(ratio, 3))
        assert ratio <= 0.6, (name, bound, epsilon, errors)


def test_estimated_error_curve_follows_the_true_one_on_bms_like_data():
    """GS Fig. 8 on BMS-WebView-1-shaped data, Δ = 267, ε = ln 2: the calibrated estimate is within 25%
    of the true L1 at every plotted w and chooses a w whose true error is within 5% of the best; the
    paper's estimate is more than 5× too high from w = 4 on."""
    data = bms_like()
    for seed in range(2):
        curve = dpdesk.release(data, "gs", epsilon=math.log(2), bound=267, rng=seed).diagnostics["real_l1"].data
        ratio = curve["estimated_l1"] / curve["real_l1"]
        print(np.round(ratio, 2))
        assert np.all((ratio > 0.8) & (ratio < 1.25)), ratio
        chosen = curve["real_l1"][list(curve["group_size"]).index(curve["chosen_group_size"])]
        assert chosen <= 1.05 * curve["real_l1"].min()
    paper = dpdesk.release(data, "gs", epsilon=math.log(2), bound=267, rng=0, estimator="paper")
    curve = paper.diagnostics["real_l1"].data
    assert np.all((curve["estimated_l1"] / curve["real_l1"])[curve["group_size"] >= 4] > 5)


@pytest.mark.slow
def test_gs_never_loses_to_its_parts_anywhere():
    """The whole issue-15 grid: real and synthetic data, Δ = 2–50× the mean row length, ε ∈ {0.1, ln 2, 2}.

    One group's noise makes some cells' errors vary by 30% from seed to seed, so each comparison
    allows two standard errors of the difference (8 seeds).
    """
    names = ["bms", "retail.dat.gz", "adult.data.gz", "groceries.csv.gz", "chess.dat.gz", "mushroom.dat.gz",
             "hetrec2011-lastfm-2k_user_artists.dat.gz", "ml-latest-small_ratings.csv.gz"]
    for name in names:
        data = load_named(name)
        for ratio in BOUND_RATIOS:
            for epsilon in EPSILONS:
                errors = mean_errors(data, {k: COMPARED[k] for k in ("gs", "gs-s-col", "lpa")},
                                     bound_for(data, ratio), epsilon, range(8))
                tuned, parts, lpa = (errors[k] for k in ("gs", "gs-s-col", "lpa"))
                slack = 2 * math.sqrt((tuned.var(ddof=1) + (1.1 * parts).var(ddof=1)) / 8)
                assert tuned.mean() <= 1.1 * parts.mean() + slack, (name, ratio, epsilon, tuned, parts)
                if parts.mean() < lpa.mean():
                    assert tuned.mean() < lpa.mean(), (name, ratio, epsilon, tuned, lpa)


def test_calibrated_tuning_counts_the_spread_column_sampling_hides():
    """chess (3,196 rows of exactly 37 items), Δ = 37, ε = 2: the sample orders the 75 items well, but
    neighbours in that order still differ; counting that spread (module notes, step 5) keeps groups of 1
    item (MAE 0.10 × gs-s-col's, 4 seeds), where the sorted estimate alone chose 2 (0.30×)."""
    data = dpdesk.load(DATA / "chess.dat.gz")
    errors = mean_errors(data, {k: COMPARED[k] for k in ("gs", "gs-s-col")}, 37, 2.0, range(4))
    chosen = [dpdesk.release(data, "gs", epsilon=2.0, bound=37, rng=seed, diagnostics=False)
              .report["chosen_group_size"] for seed in range(4)]
    print(chosen, errors["gs"].mean() / errors["gs-s-col"].mean())
    assert chosen == [1, 1, 1, 1]
    assert errors["gs"].mean() <= 0.15 * errors["gs-s-col"].mean()


def test_row_sampling_rate_for_a_generous_bound_does_not_overflow():
    """ε·Δ/2 above ~710 overflowed e^x (a traceback for gs-s-row at ε = 2, Δ = 2000)."""
    from dpdesk.mechanisms.gs import row_sampling_rate

    rate = row_sampling_rate(2.0, 2000)
    assert 0 < rate < 1e-300 or rate == 0.0
    assert row_sampling_rate(2.0, 700) == pytest.approx(math.expm1(1.0) / math.expm1(700.0))
    assert math.isclose(row_sampling_rate(1.0, 1500), math.expm1(0.5) * math.exp(-750.0) / -math.expm1(-750.0))
    data = dpdesk.from_matrix(np.eye(6, dtype=int))
    release = dpdesk.release(data, "gs-s-row", epsilon=2.0, bound=2000, rng=1)
    assert release.values.size == 6
