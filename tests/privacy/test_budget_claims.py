"""Every budget claim measured (issue 22): for every releasable mechanism and every step of its
budget table, the noise actually added, measured over seeded repeats on a small input whose
true answer is known, against the scale the step's ε and sensitivity imply.

A step's claim is read from the release's own budget table (``release.budget``); the
sensitivity comes from the theory (stated at each test), never from the mechanism's code.
Where a step's noise does not reach the output it is reached through the function the
mechanism calls for it (GS's ``noisy_sample`` and ``release_grouped``, the sparse
summaries' ``estimate_facts``, DPSense's prepared exponential sampler, ``discover_items``).
Thresholds and their error rates: :mod:`tests.privacy.claims`. Each test runs at ε = 0.3
and ε = 3, where a claim off by a factor of ε (or ε²) cannot hide.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import dpdesk
from dpdesk.api import prepare
from dpdesk.mechanisms.discovery import discover_cell_domains, discover_items, discovery_threshold
from dpdesk.mechanisms import ahp, gs
from dpdesk.mechanisms.sparse import mechanisms as sparse
from dpdesk.mechanisms.sparse.dyadic import DyadicTree
from dpdesk.mechanisms.sparse.sketch import hash_tables, index_bytes, sketch_counts
from dpdesk.privacy.randomness import SeededRandom
from tests.privacy.claims import MARGIN, Z, Measured, check, exponential_choice, measured_epsilon

EPSILONS = (0.3, 3.0)


def seeded(seed: int) -> SeededRandom:
    return SeededRandom(np.random.default_rng(seed), seed=seed)


def rows_matrix(rows, d: int) -> sp.csr_matrix:
    indptr = np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(np.int64)
    indices = np.concatenate([np.sort(np.asarray(r, dtype=np.int64)) for r in rows])
    return sp.csr_matrix((np.ones(indices.size, np.uint8), indices, indptr), shape=(len(rows), d))


def people(n: int, d: int, longest: int, seed: int) -> dpdesk.Dataset:
    """``n`` people with 1..``longest`` distinct items of ``d`` each: within any bound Δ ≥ longest,
    so truncation keeps everything and the true counts are the column counts."""
    rng = np.random.default_rng(seed)
    rows = [rng.choice(d, size=int(rng.integers(1, longest + 1)), replace=False) for _ in range(n)]
    return dpdesk.from_matrix(rows_matrix(rows, d))


def step(release, name: str) -> float:
    """The ε the release's budget table claims for the step called ``name``."""
    found = [s.epsilon for s in release.budget.steps if s.name == name]
    assert len(found) == 1, [s.name for s in release.budget.steps]
    return found[0]


def releases(data, mechanism_id: str, epsilon: float, runs: int, seed: int, **params):
    generator = np.random.default_rng(seed)
    return [dpdesk.release(data, mechanism_id, epsilon=epsilon, rng=generator, **params) for _ in range(runs)]


# --- LPA, ALPA, DIFF: noise on the counts is the output minus the truth ------------------------

@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("noise", ["geometric", "laplace"])
def test_lpa_noisy_counts(epsilon, noise):
    """One person changes at most Δ counts by one: sensitivity Δ, noise Δ/ε per count."""
    bound = 3
    data = people(300, 20, bound, seed=1)
    runs = releases(data, "lpa", epsilon, 120, seed=2, bound=bound, noise=noise)
    errors = np.concatenate([r.values - data.column_counts for r in runs])
    # the laplace variant's grid is 2⁻²⁰ of the scale: continuous Laplace to within 10⁻¹²
    check(measured_epsilon(errors, bound, step(runs[0], "noisy counts"), unit=1.0 if noise == "geometric" else 0.0,
                           what=f"LPA ({noise}) noisy counts"))


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("bound", [None, 3])
def test_alpa_noisy_average(epsilon, bound):
    """The total of all counts moves by a person's number of items: at most d, or Δ with a bound."""
    data = people(300, 20, 3, seed=3)
    extra = {} if bound is None else {"bound": bound}
    runs = releases(data, "alpa", epsilon, 1500, seed=4, **extra)
    d = data.n_items
    totals = np.array([r.values[0] * d for r in runs])
    assert np.allclose(totals, np.round(totals))  # whole-number noise on the whole-number total
    errors = np.round(totals) - data.column_counts.sum()
    check(measured_epsilon(errors, d if bound is None else bound, step(runs[0], "noisy average"),
                           what=f"ALPA (Δ = {bound}) noisy total"))


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("bound", [None, 3])
def test_diff_indexed_noisy_counts(epsilon, bound, tmp_path):
    """Item i gets scale λ_i; a person holding the set S of items changes the output density by
    exp(Σ_{i∈S} 1/λ_i): the step spends the largest such sum, over every S (no bound) or |S| ≤ Δ.

    With λ_i = γ_i·A/ε that worst sum is ε exactly when A is Σ 1/γ (or the Δ largest 1/γ): per
    item the sensitivity in the sense of :func:`measured_epsilon` is γ_i·A.
    """
    data = people(300, 20, 3, seed=5)
    gamma = np.where(np.arange(data.n_items) % 2 == 0, 1.0, 4.0)
    index = tmp_path / "index.csv"
    index.write_text("item,weight\n" + "".join(f"{label},{g}\n" for label, g in zip(data.item_labels, gamma)))
    inverse = np.sort(1.0 / gamma)[::-1]
    worst = inverse.sum() if bound is None else inverse[:bound].sum()
    extra = {} if bound is None else {"bound": bound}
    runs = releases(data, "diff", epsilon, 150, seed=6, index=str(index), **extra)
    errors = np.concatenate([r.values - data.column_counts for r in runs])
    check(measured_epsilon(errors, np.tile(gamma * worst, len(runs)), step(runs[0], "indexed noisy counts"),
                           what=f"DIFF (Δ = {bound}) indexed noisy counts"))


# --- the GS family ------------------------------------------------------------------------------

def record_groups(monkeypatch) -> list:
    """Record the order and group boundaries of every call of ``gs.release_grouped`` (the function
    every GS mechanism publishes its group averages with)."""
    calls = []
    original = gs.release_grouped

    def recording(counts, order, w, average_scale, source):
        values, bounds = original(counts, order, w, average_scale, source)
        calls.append((np.array(order), int(w), np.array(bounds)))
        return values, bounds

    monkeypatch.setattr(gs, "release_grouped", recording)
    return calls


def group_noise(release, truth, call, bound: int):
    """The noise on each published group average, with its sensitivity and unit.

    One person holds m_j items of group j with Σ m_j ≤ Δ'; noise of scale |g_j|·b on the
    group's integer sum costs Σ m_j/(|g_j|·b) ≤ Δ'/(w·b). So a step of ε has b = Δ'/(w·ε):
    on the sum of group j the sensitivity, in units of 1/|g_j| of the average, is |g_j|·Δ'/w.
    """
    order, w, bounds = call
    sizes = np.diff(bounds)
    published = release.values[order][bounds[:-1]]
    true_averages = np.add.reduceat(truth[order].astype(np.int64), bounds[:-1]) / sizes
    return published - true_averages, sizes * bound / w, 1.0 / sizes


GROUPED = {
    # mechanism: (its extra parameters, the data: counts that differ, so GS keeps small groups)
    "gs-r": {},
    "gs-s-row": {"diagnostics": False},
    "gs-s-col": {"diagnostics": False},
    "gs": {"diagnostics": False},
    "gs-paper": {"diagnostics": False, "estimator": "paper"},
}


def grouping_data() -> dpdesk.Dataset:
    """12 items with distinct counts 10, 25, …, 175 held by people with one or two items (Δ = 2)."""
    rng = np.random.default_rng(7)
    singles = [[i] for i in range(12) for _ in range(10 + 15 * i)]
    pairs = [list(rng.choice(12, size=2, replace=False)) for _ in range(150)]
    return dpdesk.from_matrix(rows_matrix(singles + pairs, 12))


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("case", sorted(GROUPED))
def test_gs_family_noisy_group_averages(case, epsilon, monkeypatch):
    bound = 2
    data = grouping_data()
    mechanism_id = "gs" if case == "gs-paper" else case
    calls = record_groups(monkeypatch)
    runs = releases(data, mechanism_id, epsilon, 300, seed=8, bound=bound, **GROUPED[case])
    assert len(calls) == len(runs)
    noise, sensitivity, unit = (np.concatenate(parts) for parts in zip(
        *(group_noise(r, data.column_counts, call, bound) for r, call in zip(runs, calls))))
    check(measured_epsilon(noise, sensitivity, step(runs[0], "noisy group averages"), unit=unit,
                           what=f"{case} noisy group averages"))


def sample_noise(mechanism_id, data, epsilon, bound, runs, seed):
    """Noise of t_s from the mechanism's own ``noisy_sample`` (the step's only output is the grouping)."""
    mechanism = dpdesk.mechanisms.get(mechanism_id)
    params = mechanism.validate(data, epsilon, {"bound": bound})
    prepared = prepare(data, mechanism, epsilon, params)
    source = seeded(seed)
    noise, rows = [], 0
    for _ in range(runs):
        counts, sample, noisy, info = mechanism.noisy_sample(data, prepared, epsilon, params, source)
        noise.append(noisy - sample)
        rows += info.get("rows_sampled", 0)
    return np.concatenate(noise), rows


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("mechanism_id", ["gs-s-col", "gs"])
def test_gs_noisy_sample_by_column(mechanism_id, epsilon):
    """One item per person: a person changes the sample counts by one in one item, sensitivity 1."""
    data = grouping_data()
    claimed = step(dpdesk.release(data, mechanism_id, epsilon=epsilon, bound=2, rng=1, diagnostics=False),
                   "noisy sample t_s")
    noise, _ = sample_noise(mechanism_id, data, epsilon, 2, 250, seed=9)
    check(measured_epsilon(noise, 1, claimed, what=f"{mechanism_id} noisy sample t_s"))


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_gs_noisy_sample_by_row(epsilon):
    """Rows sampled at rate β, then noise of scale b on counts of sensitivity Δ': the step spends
    ln(1 + β(e^{Δ'/b} − 1)) (GS Corollary 1). Both β and b are measured: β from the rows sampled,
    b from the noise; the standard error combines both (delta method)."""
    bound = 2
    data = grouping_data()
    claimed = step(dpdesk.release(data, "gs-s-row", epsilon=epsilon, bound=bound, rng=1, diagnostics=False),
                   "noisy sample t_s")
    runs = 250
    noise, rows = sample_noise("gs-s-row", data, epsilon, bound, runs, seed=10)
    trials = runs * data.n_rows
    # the noise alone, as a step of sensitivity 1: its ε is 1/b
    per_unit = measured_epsilon(noise, 1, 1.0)
    beta_claimed = math.expm1(epsilon / 2) / math.expm1(epsilon * bound / 2)  # the rate that makes it ε/2

    def spent(beta, unit_epsilon):
        return math.log1p(beta * math.expm1(bound * unit_epsilon))

    beta = rows / trials
    unit_claimed = epsilon / 2  # scale 2/ε
    beta_se = math.sqrt(beta_claimed * (1 - beta_claimed) / trials)
    # ∂ ln ε / ∂ ln β and ∂ ln ε / ∂ ln ε_unit at the claim, numerically
    h = 1e-6
    base = spent(beta_claimed, unit_claimed)
    d_beta = (math.log(spent(beta_claimed * (1 + h), unit_claimed)) - math.log(base)) / h
    d_unit = (math.log(spent(beta_claimed, unit_claimed * (1 + h))) - math.log(base)) / h
    unit_se = measured_epsilon(noise, 1, unit_claimed).log_se
    log_se = math.hypot(d_beta * beta_se / beta_claimed, d_unit * unit_se)
    check(Measured(spent(beta, per_unit.epsilon), claimed, log_se, noise.size, "gs-s-row noisy sample t_s"))


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_gs_noisy_total_of_kept_items(epsilon):
    """A person keeps at most Δ' items: the total of kept items has sensitivity Δ'."""
    bound = 2
    data = grouping_data()
    runs = releases(data, "gs", epsilon, 1000, seed=11, bound=bound, diagnostics=False)
    errors = np.array([r.internal["noisy_total_kept_items"] - r.internal["kept_items"] for r in runs])
    assert all(r.internal["kept_items"] == data.column_counts.sum() for r in runs[:5])
    check(measured_epsilon(errors, bound, step(runs[0], "noisy total of kept items"), what="gs noisy total"))


# --- AHP ----------------------------------------------------------------------------------------

def record_ahp(monkeypatch) -> list:
    """Record AHP's noisy counts ĉ (with the counts they noised) and the clusters each release published."""
    calls = []
    noisy_counts, cluster_release = ahp.AHP.noisy_counts, ahp.cluster_release

    def recording_counts(counts, scale, source):
        noisy = noisy_counts(counts, scale, source)
        calls.append({"counts": np.array(counts), "noisy": np.array(noisy)})
        return noisy

    def recording_clusters(counts, order, bounds, sum_scale, source):
        calls[-1].update(order=np.array(order), bounds=np.array(bounds))
        return cluster_release(counts, order, bounds, sum_scale, source)

    monkeypatch.setattr(ahp.AHP, "noisy_counts", staticmethod(recording_counts))
    monkeypatch.setattr(ahp, "cluster_release", recording_clusters)
    return calls


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_ahp_noisy_counts_for_clustering(epsilon, monkeypatch):
    """One person changes at most Δ' counts by one: sensitivity Δ', the noise the clustering reads is Δ'/ε₁."""
    bound = 3
    data = people(300, 20, bound, seed=31)
    calls = record_ahp(monkeypatch)
    runs = releases(data, "ahp", epsilon, 120, seed=32, bound=bound)
    assert len(calls) == len(runs) and all(np.array_equal(c["counts"], data.column_counts) for c in calls)
    noise = np.concatenate([c["noisy"] - c["counts"] for c in calls])
    check(measured_epsilon(noise, bound, step(runs[0], "noisy counts for clustering"), what="ahp noisy counts"))


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_ahp_noisy_cluster_averages(epsilon, monkeypatch):
    """A person holds m_k of their items in cluster k, Σ m_k ≤ Δ': each cluster's total has sensitivity Δ' in
    the sum over clusters, so a step of ε₂ puts noise Δ'/ε₂ on every total (read back as average × size)."""
    bound = 3
    data = people(300, 20, bound, seed=33)
    truth = data.column_counts.astype(np.int64)
    calls = record_ahp(monkeypatch)
    runs = releases(data, "ahp", epsilon, 900, seed=34, bound=bound)
    noise = []
    for release, call in zip(runs, calls):
        order, bounds = call["order"], call["bounds"]
        sizes = np.diff(bounds)
        published = release.values[order][bounds[:-1]] * sizes
        noise.append(np.round(published) - np.add.reduceat(truth[order], bounds[:-1]))
    check(measured_epsilon(np.concatenate(noise), bound, step(runs[0], "noisy cluster averages"),
                           what="ahp noisy cluster totals"))


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_ahp_median_of_the_small_counts(epsilon):
    """With η = 10 every noisy count is below θ: the items publish one median m ∈ 0..K chosen with
    Pr[m] ∝ exp(ε₂·u(m)/(2Δ')), u(m) = −Σ_i |c_i − m|, which a person of at most Δ' items moves by at
    most Δ'. The measured coefficient times 2Δ' is the step's ε."""
    bound = 3
    data = people(100, 20, bound, seed=35)  # counts about 10: below θ (35 at ε = 3) with the noise
    runs = releases(data, "ahp", epsilon, 1500, seed=36, bound=bound, small_counts="median", threshold_factor=10.0)
    assert all(r.report["clusters"]["noisy counts at or below θ"] == data.n_items for r in runs)
    claimed = step(runs[0], "noisy cluster averages and median of the small counts")
    top = int(runs[0].noise_margin[0])  # K: the range 0..K the median is chosen from
    candidates = np.arange(top + 1)
    scores = -np.abs(data.column_counts[:, None] - candidates[None, :]).sum(axis=0).astype(np.float64)
    picks = np.array([int(r.values[0]) for r in runs])
    assert all(np.unique(r.values).size == 1 for r in runs[:20])
    check(exponential_choice(scores, picks, claimed / (2 * bound), 2.0 * bound, what="ahp median of small counts"))


# --- FPA ----------------------------------------------------------------------------------------

def worst_change(d: int, rho: int, bound: int) -> float:
    """The largest L1 change of the released coordinates (Re F_0, Re/Im F_k …) one person of at most
    Δ items can cause, by trying every such person with the exact DFT (no bound from the module)."""
    worst = 0.0
    for size in range(1, min(bound, d) + 1):
        for items in itertools.combinations(range(d), size):
            delta = np.zeros(d)
            delta[list(items)] = 1.0
            spectrum = np.fft.rfft(delta)[:rho]
            change = abs(spectrum[0].real) + np.abs(spectrum[1:].real).sum() + np.abs(spectrum[1:].imag).sum()
            if d % 2 == 0 and rho == d // 2 + 1:
                change -= abs(spectrum[-1].imag)  # F_{d/2} is real: no imaginary part released
            worst = max(worst, change)
    return worst


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_fpa_noisy_coefficients(epsilon):
    """The noise on the kept coefficients, read back from the published counts (their transform).

    The privacy side uses the true worst change one person can cause (exhaustive, above); the
    other side checks the noise is no larger than the mechanism's own stated sensitivity asks.
    """
    d, rho, bound = 8, 2, 2
    data = people(400, d, bound, seed=12)
    runs = releases(data, "fpa", epsilon, 800, seed=13, bound=bound, rho=rho, diagnostics=False)
    truth = np.fft.rfft(data.column_counts.astype(np.float64))[:rho]
    noise = []
    for r in runs:
        error = np.fft.rfft(r.values)[:rho] - truth
        noise.append(np.concatenate([[error[0].real], error[1:].real, error[1:].imag]))
    noise = np.concatenate(noise)
    claimed = step(runs[0], "noisy Fourier coefficients")
    true_sensitivity = worst_change(d, rho, bound)
    stated = runs[0].report["noise"]["sensitivity"]
    privacy = check(measured_epsilon(noise, true_sensitivity, claimed * true_sensitivity / stated,
                                     unit=0.0, what="FPA coefficients (true worst change)"))
    assert privacy.epsilon < claimed * math.exp(MARGIN), str(privacy)


# --- DPSense and DPSense-S ----------------------------------------------------------------------

def equal_rows(n: int, d: int, length: int, seed: int) -> dpdesk.Dataset:
    """``n`` people with exactly ``length`` items each (a power of two: the weight θ/length of a
    normalized row is then exact on the mechanism's power-of-two grid)."""
    rng = np.random.default_rng(seed)
    return dpdesk.from_matrix(rows_matrix([rng.choice(d, size=length, replace=False) for _ in range(n)], d))


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("mechanism_id", ["dpsense", "dpsense-s"])
def test_dpsense_noisy_counts(mechanism_id, epsilon):
    """Rows normalized to θ: one person changes the counts by at most θ in L1, noise θ*/ε_p.

    Every row has L = 4 items, so at θ* the true normalized counts are c_j·min(1, θ*/L) exactly;
    the counts (about 1,000) are far above the noise, so clamping at 0 never happens.
    """
    length = 4
    data = equal_rows(4000, 16, length, seed=14)
    runs = releases(data, mechanism_id, epsilon, 150, seed=15)
    noise, sensitivity = [], []
    for r in runs:
        theta = r.report["selection"]["theta"]
        alpha = r.report["selection"].get("alpha", 1.0)
        assert np.all(r.values > 0)
        noise.append(r.values / alpha - data.column_counts * min(1.0, theta / length))
        sensitivity.append(np.full(data.n_items, theta))
    check(measured_epsilon(np.concatenate(noise), np.concatenate(sensitivity), step(runs[0], "noisy counts"),
                           unit=0.0, what=f"{mechanism_id} noisy counts"))


def selection_data(epsilon: float, d: int = 16, length: int = 4) -> dpdesk.Dataset:
    """Rows of L = 4 items, as many as make the scores' steps below θ = L about 1/c: the choice then
    spreads over many θ and tells the coefficient c apart well."""
    c = 0.1 * epsilon / 2  # the default 10% selection share, standard form
    return equal_rows(max(40, round(d / c)), d, length, seed=16)


def picks(mechanism_id, data, epsilon, draws, seed, **params):
    """Candidates chosen by the mechanism's prepared exponential sampler (what ``run`` draws from)."""
    mechanism = dpdesk.mechanisms.get(mechanism_id)
    values = mechanism.validate(data, epsilon, params)
    prepared = prepare(data, mechanism, epsilon, values)
    source = seeded(seed)
    return np.array([prepared.sampler.draw(source) for _ in range(draws)]), prepared


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("form", ["standard", "one-directional"])
def test_dpsense_choice_of_theta(form, epsilon):
    """q(θ) = ac(D|θ) − θ/ε_p with ac = (1/d)·Σ_j c_j·min(1, θ/L) = (nL/d)·min(1, θ/L) for rows of L
    items; sensitivity Δq = 1 (DPSense Lemma 1). Pr[θ] ∝ exp(ε_c·q/(2Δq)), or exp(ε_c·q/Δq) for
    the one-directional form: the measured ε_c is the maximum-likelihood coefficient times 2Δq (Δq)."""
    length, d = 4, 16
    data = selection_data(epsilon)
    release = dpdesk.release(data, "dpsense", epsilon=epsilon, selection_form=form, rng=1)
    claimed = step(release, "choose θ")
    counts_epsilon = step(release, "noisy counts")
    chosen, _ = picks("dpsense", data, epsilon, 9000 if form == "standard" else 5000, seed=17, selection_form=form)
    theta = np.arange(1, d + 1)
    n = data.n_rows
    scores = n * length / d * np.minimum(1.0, theta / length) - theta / counts_epsilon
    per_coefficient = 2.0 if form == "standard" else 1.0
    check(exponential_choice(scores, chosen, claimed / per_coefficient, per_coefficient,
                             what=f"dpsense ({form}) choice of θ"))


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_dpsense_s_choice_of_theta_and_alpha(epsilon):
    """q_s(θ, α) = −(1/d)·Σ_j |α·c^θ_j − c_j| − α·θ/ε_p = −(nL/d)·|α·min(1, θ/L) − 1| − α·θ/ε_p for
    rows of L items; Δq = 1 (Lemma 2), standard form only. Candidate i is θ = i // (N + 1) + 1,
    α = 1 + (i mod (N + 1))/N, as the mechanism numbers them (θ major)."""
    length, d, steps = 4, 16, 10
    data = selection_data(epsilon)
    release = dpdesk.release(data, "dpsense-s", epsilon=epsilon, alpha_steps=steps, rng=1)
    claimed = step(release, "choose θ and α")
    counts_epsilon = step(release, "noisy counts")
    chosen, _ = picks("dpsense-s", data, epsilon, 2000, seed=18, alpha_steps=steps)
    theta = np.repeat(np.arange(1, d + 1), steps + 1).astype(np.float64)
    alpha = np.tile(np.arange(steps, 2 * steps + 1) / steps, d)
    n = data.n_rows
    scores = -n * length / d * np.abs(alpha * np.minimum(1.0, theta / length) - 1) - alpha * theta / counts_epsilon
    check(exponential_choice(scores, chosen, claimed / 2, 2.0, what="dpsense-s choice of θ and α"))


# --- the sparse-domain summaries ----------------------------------------------------------------

def large_cells(m: int = 256, n: int = 24, seed: int = 19) -> dpdesk.CellCounts:
    """``n`` of ``m`` cells with counts of about 10⁵: every summary lists them with their noisy counts."""
    rng = np.random.default_rng(seed)
    indices = np.sort(rng.choice(m, size=n, replace=False))
    counts = rng.integers(90_000, 110_000, size=n)
    return dpdesk.from_cells(indices, counts, m)


SUMMARIES = {
    # case: (mechanism, settings)
    "geometric": ("geometric", {}),
    "filter": ("filter", {"threshold": 5}),
    "filter2": ("filter2", {"threshold": 5}),
    "threshold": ("threshold", {"tau": 10.0}),
    "priority": ("priority", {"size": 40}),
    "filter-threshold": ("filter-threshold", {"threshold": 5, "tau": 10.0}),
    "filter-priority": ("filter-priority", {"threshold": 5, "size": 40}),
    "dyadic": ("dyadic", {"method": "filter2", "threshold": 5}),
    # n and ‖M‖₁ estimated with half of ε: the summary must get the other half only (τ ≈ 12,000 keeps
    # every large cell)
    "threshold-estimated": ("threshold", {"target_size": 200, "estimate_share": 0.5}),
}


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("case", sorted(SUMMARIES))
def test_sparse_noisy_summary(case, epsilon):
    """A person sits in one cell: sensitivity 1 on the cells, L (the number of levels) on the
    dyadic ranges (a cell lies in one range per level). The listed cells (ranges) that hold
    about 10⁵ people carry their noisy counts; every other listed one is left out."""
    mechanism_id, settings = SUMMARIES[case]
    data = large_cells()
    runs = releases(data, mechanism_id, epsilon, 150, seed=20, **settings)
    truth = np.zeros(data.domain_size, dtype=np.int64)
    truth[data.indices] = data.counts
    noise = []
    tree = DyadicTree(data.domain_size) if mechanism_id == "dyadic" else None
    for r in runs:
        cells = r.cells
        if tree is None:
            true_values = truth[cells.indices]
        else:
            starts, stops = tree.node_ranges(cells.indices)
            prefix = np.concatenate([[0], np.cumsum(truth)])
            true_values = prefix[stops] - prefix[starts]
        large = true_values > 50_000
        assert large.sum() >= data.n_cells * 0.9
        noise.append(cells.values[large] - true_values[large])
    sensitivity = tree.levels if tree is not None else 1
    check(measured_epsilon(np.concatenate(noise), sensitivity, step(runs[0], "noisy summary"),
                           what=f"{case} noisy summary"))


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_sketch_noisy_buckets(epsilon):
    """A person changes one bucket per row by ±1: sensitivity d (the depth). The exact sketch is
    rebuilt from the published hash key."""
    data = large_cells(m=4096, n=300)
    width, depth = 64, 3
    runs = releases(data, "sketch", epsilon, 40, seed=21, width=width, depth=depth)
    noise = []
    for r in runs:
        tables = hash_tables(bytes.fromhex(r.cells.info["hash_key"]), depth, index_bytes(data.domain_size))
        exact = sketch_counts(tables, data.indices, data.counts, width).ravel()
        noise.append(r.cells.values - exact)
    check(measured_epsilon(np.concatenate(noise), depth, step(runs[0], "noisy sketch"), what="sketch buckets"))


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("method,names", [("threshold", ["nonzeros", "total"]), ("filter2", ["nonzeros"])])
def test_sparse_estimates_of_public_facts(method, names, epsilon):
    """n and ‖M‖₁ each have sensitivity 1; the step's loss is Σ 1/b_i over its estimates, so with
    equal scales b_i = (number of estimates)/ε_step: per draw, the sensitivity is that number.
    The noise comes from ``estimate_facts``, the function the release calls; the true values are
    far from the clipping at 0 and m."""
    rng = np.random.default_rng(22)
    m = 10**6
    indices = np.sort(rng.choice(m, size=5000, replace=False))
    data = dpdesk.from_cells(indices, rng.integers(1, 40, size=5000), m)
    release = dpdesk.release(data, method, epsilon=epsilon, target_size=100, rng=1)
    name = "estimate " + " and ".join(sparse.FACT_NAMES[k] for k in names)
    claimed = step(release, name)
    assert sorted(release.report["estimates"]) == sorted(sparse.FACT_NAMES[k] for k in names)
    source = seeded(23)
    true = {"nonzeros": data.n_cells, "total": data.total}
    noise = np.concatenate([[estimates[k] - true[k] for k in names]
                            for estimates in (sparse.estimate_facts(data, names, claimed, source)
                                              for _ in range(1500))])
    check(measured_epsilon(noise, len(names), claimed, what=f"{method} estimates of {', '.join(names)}"))


# --- private discovery of the items -------------------------------------------------------------

def listing_probability(gap: np.ndarray, q: float) -> np.ndarray:
    """P(Z ≥ gap) for discrete Laplace Z with P(Z = z) ∝ q^|z|."""
    gap = np.asarray(gap, dtype=np.float64)
    upper = q**gap / (1 + q)
    return np.where(gap >= 1, upper, 1 - q ** (1 - gap) / (1 + q))


def threshold_claims(counts, listed, runs: int, tau: int, k: int, claimed_epsilon: float, claimed_delta: float,
                     what: str) -> None:
    """Check a noisy threshold's ε and δ from how often labels of each count were listed.

    A label of count c ≥ 1 is listed when c + Z ≥ τ, Z discrete Laplace with q = e^{−ε/k} (a
    person touches at most k labels: sensitivity k). ε: the maximum-likelihood q (and τ) from the
    labels of count ≥ 2 (their listing probability P(Z ≥ τ − c) traces the noise's law), its
    standard error from the Fisher information. δ: labels held by one person are listed with
    probability P(Z ≥ τ − 1) = δ/k (``discovery_threshold``), so k times their observed share
    is the measured δ.
    """
    from scipy import optimize

    around = counts >= 2
    hits = listed[around]

    def fit(threshold):
        """(log-likelihood, q) at the best q for this threshold."""
        gaps = threshold - counts[around]

        def negative(q):
            p = np.clip(listing_probability(gaps, q), 1e-300, 1 - 1e-16)
            return -float(hits @ np.log(p) + (runs - hits) @ np.log1p(-p))

        best = optimize.minimize_scalar(negative, bounds=(1e-9, 1 - 1e-9), method="bounded", options={"xatol": 1e-12})
        return -best.fun, best.x

    # the threshold is fitted too (around the stated one), so that a step whose τ differs from its
    # claim still shows the scale of its noise
    q_hat = max((fit(t) for t in range(tau - 10, tau + 11)), key=lambda result: result[0])[1]
    gap = tau - counts[around]
    q_claimed = math.exp(-claimed_epsilon / k)
    h = 1e-6 * q_claimed
    slope = (listing_probability(gap, q_claimed + h) - listing_probability(gap, q_claimed - h)) / (2 * h)
    p = listing_probability(gap, q_claimed)
    information = float(runs * np.sum(slope**2 / (p * (1 - p))))
    log_se = 1 / math.sqrt(information) / (q_claimed * abs(math.log(q_claimed)))
    check(Measured(-k * math.log(q_hat), claimed_epsilon, log_se, int(gap.size * runs), f"{what} ε"))

    single = counts == 1
    trials = int(single.sum()) * runs
    per_label = claimed_delta / k
    check(Measured(k * listed[single].sum() / trials, claimed_delta, math.sqrt((1 - per_label) / (per_label * trials)),
                   trials, f"{what} δ", quantity="δ"))


def threshold_counts(tau: int, spread: int) -> np.ndarray:
    """2,000 labels of count 1, and 12 labels for every count from τ − ``spread`` to τ + 3."""
    return np.array([1] * 2000 + [c for c in range(max(2, tau - spread), tau + 4) for _ in range(12)])


def paired(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Deal the label occurrences to people two at a time, distinct labels each: person j holds
    occurrences j and j + half (sorted by label; no label has half of them)."""
    occurrences = np.repeat(np.arange(counts.size), counts)
    half = (occurrences.size + 1) // 2
    first = occurrences[:half]
    second = np.concatenate([occurrences[half:], [-1] * (2 * half - occurrences.size)])
    assert np.all(first != second)
    return first, second


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_discovery_of_items(epsilon):
    """``discover_items`` with k = ``bound`` = 2 labels per person, δ = 0.01 (large enough to measure)."""
    bound, delta, runs = 2, 0.01, 300
    # a first discovery tells τ (public: a function of ε, δ and k), to place the counts around it
    probe = discover_items(dpdesk.from_matrix(rows_matrix([[0, 1]] * 30, 2)), epsilon, delta, bound, seeded(1))
    tau = probe.internal["threshold τ"]
    counts = threshold_counts(tau, int(math.ceil(3 * bound / epsilon)) + 2)
    first, second = paired(counts)
    rows = [[a, b] if b >= 0 else [a] for a, b in zip(first, second)]
    data = dpdesk.from_matrix(rows_matrix(rows, counts.size))
    assert np.array_equal(data.column_counts, counts) and data.row_counts.max() <= bound
    source = seeded(25)
    listed = np.zeros(counts.size)
    for _ in range(runs):
        domain = discover_items(data, epsilon, delta, bound, source)
        assert domain.internal["threshold τ"] == tau
        listed += np.isin(data.item_labels, domain.labels)
    assert domain.epsilon == epsilon
    threshold_claims(counts, listed, runs, tau, bound, domain.epsilon, domain.delta, "item discovery")


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_discovery_of_attribute_values(epsilon):
    """``discover_cell_domains``: every person has one value of each of A = 2 attributes, so touches
    k = 2 labels. Both attributes' values have the counts of :func:`threshold_counts`."""
    from dpdesk.data.dataset import CellCounts

    attributes, delta, runs = 2, 0.01, 200
    tau, _ = discovery_threshold(epsilon, delta, attributes)  # public: ε, δ and A
    counts = threshold_counts(tau, int(math.ceil(3 * attributes / epsilon)) + 2)
    occurrences = np.repeat(np.arange(counts.size), counts)
    shifted = np.roll(occurrences, occurrences.size // 2)  # each person: one value of A, one of B
    size = counts.size
    values = [f"v{j}" for j in range(size)]
    cells = CellCounts(occurrences * size + shifted, np.ones(occurrences.size, np.int64), size * size,
                       attributes=["A", "B"], domains=[values, values], domains_declared=True)
    source = seeded(26)
    listed = np.zeros(2 * size)
    for _ in range(runs):
        domain = discover_cell_domains(cells, epsilon, delta, source)
        listed += np.concatenate([np.isin(values, domain.values[0]), np.isin(values, domain.values[1])])
    assert domain.epsilon == epsilon
    threshold_claims(np.concatenate([counts, counts]), listed, runs, tau, attributes, domain.epsilon, domain.delta,
                     "attribute-value discovery")


# --- the margins' estimates (issue 28): noise on the loss and spread sums, read from the releases -----

FAR, FAR_SHARE = 4, 0.2  # the theory's clip (F − 1)·Δ of a person's simulated loss, and the far count's share


def test_the_margin_constants_are_the_ones_the_claims_below_assume():
    from dpdesk.mechanisms import margins

    assert (margins.FAR, margins.FAR_SHARE) == (FAR, FAR_SHARE)


def loss_noise(runs, level: int, name: str = "estimate of what Δ cut off"):
    """The loss step's noise on data where no one holds more than the level: every window's true loss and the true
    number of far people are 0, so the published estimates are their noise. Sensitivities from the theory: a person
    adds at most (F − 1)·level lost items over the windows (scale (F − 1)·level/((1 − f)·ε_l)) and 1 far person
    (scale 1/(f·ε_l)): each part is checked against its share of the step's claimed ε_l."""
    windows = np.concatenate([r.report["margin_estimates"]["truncation"]["lost_by_window"] for r in runs])
    far = np.array([r.report["margin_estimates"]["truncation"]["far_people"] for r in runs])
    claimed = step(runs[0], name)
    check(measured_epsilon(windows, (FAR - 1) * level, claimed * (1 - FAR_SHARE), what=f"{name}: windows"))
    check(measured_epsilon(far, 1, claimed * FAR_SHARE, what=f"{name}: far people"))


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_lpa_estimate_of_what_the_bound_cut_off(epsilon):
    bound = 3
    data = people(200, 12, bound, seed=31)
    loss_noise(releases(data, "lpa", epsilon, 700, seed=32, bound=bound), bound)


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_gs_estimate_of_the_smoothing_error(epsilon):
    """Every item held by the same number of people (200 of 96 items, rows of 3 items): every group's smoothing
    error Σ|c_i − c̄_g| is 0 exactly, so the published window totals are their noise. A person with m_g kept items in
    group g moves it by at most 2·m_g(1 − m_g/|g|) ≤ 2·m_g, at most 2Δ' in all: scale 2Δ'/ε_a per window total (a
    window of groups of s items adds DL(s·2Δ'/ε_a) to its s-times total, s = w = Δ' = 3 here: 96 = 32 groups)."""
    bound, items, count = 3, 96, 200
    cols = (np.arange(count * items) % items).reshape(-1, bound)
    data = dpdesk.from_matrix(rows_matrix(list(cols), items))
    runs = releases(data, "gs-s-col", epsilon, 350, seed=33, bound=bound)
    assert all("smoothing" in r.report["margin_estimates"] for r in runs)  # located: the estimates ran every time
    spread = np.concatenate([r.report["margin_estimates"]["smoothing"]["smoothing_error_by_window"] for r in runs])
    check(measured_epsilon(np.round(np.asarray(spread) * bound), bound * 2 * bound,
                           step(runs[0], "estimate of the smoothing error"), what="GS-S smoothing error"))
    # (the GS family's loss step is LPA's, the same function with windows over the groups: measured above)


# --- every step of every budget table is measured above -----------------------------------------

MEASURED = {
    # mechanism: the budget steps the tests above measure
    "lpa": {"noisy counts", "estimate of what Δ cut off"},
    "alpa": {"noisy average"},
    "diff": {"indexed noisy counts", "estimate of what Δ cut off"},  # the loss step: as LPA's (one function)
    "gs-r": {"noisy group averages"},
    "gs-s-row": {"noisy sample t_s", "noisy group averages", "estimate of the smoothing error",
                 "estimate of what Δ cut off"},
    "gs-s-col": {"noisy sample t_s", "noisy group averages", "estimate of the smoothing error",
                 "estimate of what Δ cut off"},
    "gs": {"noisy sample t_s", "noisy total of kept items", "noisy group averages", "estimate of the smoothing error",
           "estimate of what Δ cut off"},
    "ahp": {"noisy counts for clustering", "noisy cluster averages",
            "noisy cluster averages and median of the small counts"},
    "fpa": {"noisy Fourier coefficients"},
    "dpsense": {"choose θ", "noisy counts"},
    "dpsense-s": {"choose θ and α", "noisy counts"},
    "sketch": {"noisy sketch"},
    **{m: {"noisy summary", "estimate non-empty cells n", "estimate non-empty cells n and people ‖M‖₁"}
       for m in ("geometric", "filter", "filter2", "threshold", "priority", "filter-threshold", "filter-priority",
                 "dyadic")},
}
VARIANTS = [
    ("lpa", {"bound": 3}), ("lpa", {"bound": 3, "noise": "laplace"}), ("alpa", {}), ("alpa", {"bound": 3}),
    ("diff", {"index": "uniform"}), ("diff", {"index": "uniform", "bound": 3}), ("gs-r", {"bound": 3}),
    ("gs-s-row", {"bound": 3}), ("gs-s-col", {"bound": 3}), ("gs", {"bound": 3}),
    ("gs", {"bound": 3, "estimator": "paper"}), ("ahp", {"bound": 3}),
    ("ahp", {"bound": 3, "small_counts": "median", "threshold": "adaptive"}), ("fpa", {"bound": 3, "rho": 3}),
    ("dpsense", {}),
    ("dpsense", {"selection_form": "one-directional"}), ("dpsense-s", {}), ("geometric", {}),
    ("filter", {"threshold": 2}), ("filter", {"target_size": 20}), ("filter2", {"target_size": 20}),
    ("threshold", {"tau": 3.0}), ("threshold", {"target_size": 20}), ("priority", {"size": 5}),
    ("filter-threshold", {"threshold": 1, "target_size": 20}), ("filter-priority", {"threshold": 1, "size": 5}),
    ("dyadic", {"method": "filter2", "target_size": 20}), ("dyadic", {"method": "threshold", "target_size": 20}),
    ("sketch", {"width": 8, "depth": 2}),
]


def test_every_budget_step_of_every_mechanism_is_measured():
    """A new mechanism, or a new step in a budget table, fails here until a test above measures it
    (and tests/mutants plants its bugs: tests/mutants/README.md)."""
    releasable = {m.id for m in dpdesk.mechanisms() if m.releasable}
    assert releasable == set(MEASURED)
    assert {m for m, _ in VARIANTS} == releasable
    incidence = people(200, 12, 3, seed=27)
    cells = large_cells(m=512, n=40)
    for mechanism_id, params in VARIANTS:
        data = cells if dpdesk.mechanisms.get(mechanism_id).data_kind == "cells" else incidence
        release = dpdesk.release(data, mechanism_id, epsilon=1.0, rng=1, **params)
        steps = {s.name for s in release.budget.steps}
        assert steps <= MEASURED[mechanism_id], (mechanism_id, params, steps - MEASURED[mechanism_id])
