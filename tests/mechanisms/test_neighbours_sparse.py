"""Neighbouring tables — D and D′ = D plus one person — through the sparse summaries (issue #13).

Everything a release publishes, except the noisy output (cells, values, weights, τ_s, the
noisy estimates and what is computed from them) and dates, must be the same for D and D′;
no output event may be possible for one and impossible for the other; refusals are
decided before the data is read, from m, ε and the settings alone. Rows of the issue:

* B3 — a priority sample's τ_s carried, in its last bits, an internal guess τ computed
  from the true number of non-empty cells (:func:`test_tau_s_carries_no_data_dependent_lattice`);
* C1 — the shortcut drew with floating-point probabilities (δ ≈ 2⁻⁵⁰ unstated)
  (:func:`test_release_path_draws_no_floating_point_probabilities`,
  :func:`test_an_empty_cell_stays_possible_below_the_float_range`);
* B4 — refusals after the noise was drawn, not charged
  (:func:`test_no_refusal_after_the_estimates`, :func:`test_wide_noise_is_sampled_not_refused`,
  :func:`test_refusals_are_decided_from_the_public_domain`).
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

import dpdesk
from dpdesk.api import prepare
from dpdesk.errors import ParameterError
from dpdesk.privacy.randomness import RandomSource, SeededRandom
from tests.audit import audit
from tests.mechanisms.test_sparse import AUDIT_EPS, cell_sampler, clipped, neighbours

M = 4000
BASE = {5: 40, 17: 3, 300: 12, 1201: 1, 3999: 7}
EMPTY_CELL, LARGEST_CELL = 9, 5


def table(extra: int | None = None, domain: int = M, base: dict = BASE):
    counts = dict(base)
    if extra is not None:
        counts[extra] = counts.get(extra, 0) + 1
    cells = sorted(counts)
    return dpdesk.from_cells(cells, [counts[c] for c in cells], domain)


PAIRS = {"person in an empty cell": (table(), table(EMPTY_CELL)),
         "person in the largest cell": (table(), table(LARGEST_CELL))}


class DomainOnly:
    """What the workflow passes to ``validate()`` before reading the data: the public domain only."""

    kind = "cells"

    def __init__(self, domain_size: int, attributes=None, domains=None, name: str = "cells"):
        self.domain_size, self.attributes, self.domains, self.name = domain_size, attributes, domains, name

    def __getattr__(self, name):
        raise AttributeError(f"'{name}' is not public: check() must not read it")


DECLARED = {"nonzeros": 20, "total": 500}
# (mechanism, settings): every sparse mechanism, with direct, declared and estimated settings
CASES = [
    ("geometric", {}),
    ("filter", {"threshold": 3}), ("filter", {"target_size": 40, "nonzeros": 20}), ("filter", {"target_size": 40}),
    ("filter2", {"threshold": 3}), ("filter2", {"target_size": 40, "nonzeros": 20}),
    ("filter2", {"target_size": 40}),
    ("threshold", {"tau": 8.0}), ("threshold", {"target_size": 40, **DECLARED}), ("threshold", {"target_size": 40}),
    ("priority", {"size": 12}),
    ("filter-threshold", {"threshold": 2, "tau": 6.5}), ("filter-threshold", {"threshold": 2, "target_size": 40}),
    ("filter-priority", {"threshold": 2, "size": 12}),
    ("dyadic", {"method": "filter2", "threshold": 9}), ("dyadic", {"method": "filter2", "target_size": 40}),
    ("dyadic", {"method": "priority", "size": 12}),
    ("dyadic", {"method": "filter-priority", "threshold": 6, "size": 12}),
    ("dyadic", {"method": "filter-threshold", "threshold": 6, "tau": 20.0}),
    ("dyadic", {"method": "threshold", "target_size": 60, **DECLARED}), ("dyadic", {"method": "geometric"}),
    ("sketch", {"width": 64, "depth": 2}),
]
IDS = [f"{m}-{'-'.join(f'{k}={v}' for k, v in p.items())}" for m, p in CASES]

NOISY_SUMMARY = ("cells listed", "τ_s (the (s+1)-th priority)", "hash key")
NOISY_INFO = ("labels", "tau_s", "hash_key")
FROM_ESTIMATES = ("filter threshold θ", "sampling threshold τ", "probability that an empty cell is listed",
                  "expected listed cells that are empty in truth (at most)",
                  "probability that an empty range is listed", "expected listed ranges that are empty in truth (at most)",
                  "θ raised above what the target size asks", "τ raised above what the target size asks")


def published(release) -> dict:
    """What a release publishes, without its noisy output (and the date)."""
    report = copy.deepcopy(release.report)
    report.pop("created")
    estimated = "estimates" in report
    report.pop("estimates", None)
    summary = report.get("summary", {})
    for key in NOISY_SUMMARY + (FROM_ESTIMATES if estimated else ()):
        summary.pop(key, None)
    if estimated:  # the text quotes the noisy estimates
        report["public_facts"].pop("non-empty cells n and people ‖M‖₁")
    from_estimates = ("zero_cell_probability", "filter_pass_probability") if estimated else ()
    info = {k: v for k, v in release.cells.info.items() if k not in NOISY_INFO + from_estimates}
    return {"report": report, "info": info, "budget": release.budget_split, "delta": release.delta,
            "params": release.params, "labels": release.labels}


def derived_from_estimates(mechanism, release) -> None:
    """θ or τ of a release with estimates must be the public function of the published estimates."""
    from dpdesk.mechanisms.sparse.mechanisms import FACT_NAMES

    names = {label: key for key, label in FACT_NAMES.items()}
    facts = {names[label]: value for label, value in release.report["estimates"].items()}
    public = DomainOnly(release.cells.info["domain_size"])
    domain, sensitivity = mechanism.table_shape(public)
    facts = mechanism.table_facts(public, facts)
    summary_epsilon = release.budget_split[-1]["epsilon"]
    method = mechanism.method_of(release.params)
    settings = mechanism.settings(method, release.params, facts, domain, sensitivity / summary_epsilon)
    summary = release.report["summary"]
    for key, label in (("theta", "filter threshold θ"), ("tau", "sampling threshold τ")):
        assert summary.get(label) == settings[key], label


@pytest.mark.parametrize("mechanism_id,params", CASES, ids=IDS)
def test_check_reads_only_the_public_domain(mechanism_id, params):
    mechanism = dpdesk.mechanisms.get(mechanism_id)
    assert mechanism.validate(DomainOnly(M), 1.0, params) == mechanism.validate(table(), 1.0, params)


@pytest.mark.parametrize("mechanism_id,params", CASES, ids=IDS)
@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_neighbours_publish_the_same_except_the_noisy_output(mechanism_id, params, pair):
    first, second = PAIRS[pair]
    mechanism = dpdesk.mechanisms.get(mechanism_id)
    for seed in range(4):
        releases = [dpdesk.release(data, mechanism_id, epsilon=1.0, rng=seed, **params) for data in (first, second)]
        assert published(releases[0]) == published(releases[1]), seed
        for release in releases:
            assert release.delta == 0.0
            if "estimates" in release.report:
                derived_from_estimates(mechanism, release)


# -- B4: refusals ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("mechanism_id,domain,epsilon,params,message", [
    ("dyadic", 2**61, 1.0, {"method": "filter2", "target_size": 100, "nonzeros": 10}, "2\\^60"),
    ("filter", M, 1e-16, {"target_size": 10, "nonzeros": 5}, "too large to sample"),
    ("filter", M, 1e-14, {"target_size": 10}, "too large to sample"),  # the estimate's own noise
    ("sketch", M, 1e-16, {"width": 16}, "too large to sample"),
    ("threshold", 2**62, 1e-3, {"target_size": 100, "max_cells": 1000}, "max_cells"),
    ("priority", 2**62, 1e-3, {"size": 100, "max_cells": 1000}, "max_cells"),
], ids=["dyadic-domain", "scale", "estimate-scale", "sketch-scale", "threshold-size", "priority-candidates"])
def test_refusals_are_decided_from_the_public_domain(mechanism_id, domain, epsilon, params, message):
    """Before: these passed validate() and refused in run(), after noise was drawn (or never at all)."""
    with pytest.raises(ParameterError, match=message):
        dpdesk.mechanisms.get(mechanism_id).validate(DomainOnly(domain), epsilon, params)


DENSE = dpdesk.from_cells(np.arange(990), np.full(990, 3), 1000)  # n is close to m: the estimate of n decides


@pytest.mark.parametrize("mechanism_id,params", [
    ("filter2", {"target_size": 300, "max_cells": 400}),
    ("dyadic", {"method": "filter2", "target_size": 300, "max_cells": 400}),
    ("threshold", {"target_size": 300, "max_cells": 400}),
])
def test_no_refusal_after_the_estimates(mechanism_id, params):
    """Before: the noisy n made θ = 1 and the release refused — after spending ε, with no ledger entry."""
    mechanism = dpdesk.mechanisms.get(mechanism_id)
    raised = 0
    for seed in range(12):
        release = dpdesk.release(DENSE, mechanism_id, epsilon=1.0, rng=seed, **params)
        summary = release.report["summary"]
        key = next(k for k in summary if k.startswith("probability that an empty"))
        cells = "ranges (nodes) in the transform" if mechanism_id == "dyadic" else None
        domain = summary[cells] if cells else DENSE.domain_size
        assert summary[key] * domain <= params["max_cells"]  # clamped to the limit instead
        raised += any(k.endswith("raised above what the target size asks") for k in summary)
        derived_from_estimates(mechanism, release)
    assert raised or mechanism_id == "threshold"


def test_wide_noise_is_sampled_not_refused():
    """Before: a threshold sample with ε/Δ = 2·10⁻⁶ refused in the middle of the draw ("noise too wide")."""
    small = dpdesk.from_cells([3, 50], [5, 9], 10_000)
    release = dpdesk.release(small, "threshold", epsilon=2e-6, tau=1e8, rng=1)
    assert len(release.cells) > 0 and np.all(release.cells.weights != 0)


# -- C1: exact draws -------------------------------------------------------------------------------------

def test_release_path_draws_no_floating_point_probabilities(monkeypatch):
    """Before: threshold coins, value tables and priorities came from 53-bit float uniforms."""
    def refuse(self, *args, **kwargs):
        raise AssertionError("a floating-point uniform on the release path")

    monkeypatch.setattr(RandomSource, "uniform01", refuse)
    monkeypatch.setattr(RandomSource, "bernoulli", refuse)
    for mechanism_id, params in CASES:
        for data in PAIRS["person in an empty cell"]:
            dpdesk.release(data, mechanism_id, epsilon=1.0, rng=3, **params)


def test_an_empty_cell_stays_possible_below_the_float_range(monkeypatch):
    """p = 2α^θ/(1+α) for θ = 2000 and ε = 1 is about e^−2000: not a float, but not 0 either.

    Before: the walk received p = 0.0 and never listed an empty cell, while a cell with one
    person passes θ with positive probability — an event impossible on D and possible on D′.
    """
    from dpdesk.mechanisms.sparse import shortcut

    seen = []
    honest = shortcut.choose_free_cells

    def spy(source, occupied, domain, probability):
        seen.append(probability)
        return honest(source, occupied, domain, probability)

    monkeypatch.setattr(shortcut, "choose_free_cells", spy)
    dpdesk.release(table(), "filter2", epsilon=1.0, threshold=2000, rng=1)
    (probability,) = seen
    low = probability.enclosure(40).lo if hasattr(probability, "enclosure") else probability
    assert low > 0


# -- B3: priority sampling's τ_s -------------------------------------------------------------------------

def _on_grid(u):
    """Whether u is a value of ``uniform01`` ((w + 0.5)·2⁻⁵³ rounded to a float)."""
    t = u * 2.0**53
    return np.where(t < 2**52, (t - np.floor(t)) == 0.5, t == np.floor(t)) & (u > 0) & (u < 1)


def _on_lattice(priorities: np.ndarray, tau: float, largest: int = 3) -> np.ndarray:
    """Whether each float is fl(a / fl(u·fl(a/τ))) for some a ≤ ``largest`` and a uniform01 value u:
    the lattice of empty-cell priorities drawn below a guessed τ (how the earlier shortcut made them)."""
    hit = np.zeros(priorities.size, dtype=bool)
    with np.errstate(all="ignore"):
        for a in range(1, largest + 1):
            c = a / tau
            base_r = a / priorities
            for dr in range(-3, 4):
                r = base_r.copy()
                for _ in range(abs(dr)):
                    r = np.nextafter(r, np.inf if dr > 0 else 0)
                matches = (a / r) == priorities
                base_u = r / c
                for du in range(-3, 4):
                    u = base_u.copy()
                    for _ in range(abs(du)):
                        u = np.nextafter(u, np.inf if du > 0 else 0)
                    hit |= matches & _on_grid(u) & ((u * c) == r)
    return hit


def _priority_runs(data, runs, seed):
    mechanism = dpdesk.mechanisms.get("priority")
    values = mechanism.validate(data, 8.0, {"size": 1})
    prepared = prepare(data, mechanism, 8.0, values)
    source = SeededRandom(np.random.default_rng(seed))
    levels, taus = [], []
    for _ in range(runs):
        release = mechanism.run(data, prepared, 8.0, values, source)
        levels.append(release.internal["threshold_sample_tau"])
        taus.append(release.cells.info["tau_s"])
    return np.array(levels), np.array(taus)


def test_tau_s_carries_no_data_dependent_lattice():
    """D: no one; D′: one person. Before, the internal τ depended on n (38.4 vs sometimes 40.1), and
    τ_s = fl(a/fl(u·fl(a/τ))) lay on τ's lattice: off D's lattice never on D, in ~2% of D′'s runs.

    Now the first level is a public power of two and every priority is fl(|v|·2⁵³/(2w + 1)):
    the same on both, and the event "τ_s off D's lattice" equally frequent.
    """
    first, second = dpdesk.from_cells([], [], 10**6), dpdesk.from_cells([77], [1], 10**6)
    levels_first, taus_first = _priority_runs(first, 2000, seed=1)
    levels_second, taus_second = _priority_runs(second, 2000, seed=2)
    reference = levels_first[0]
    off_first = int(np.count_nonzero(~_on_lattice(taus_first, reference)))
    off_second = int(np.count_nonzero(~_on_lattice(taus_second, reference)))
    # an event that never happens on one neighbour must not happen often on the other
    assert not (off_first == 0 and off_second >= 10) and not (off_second == 0 and off_first >= 10), \
        (off_first, off_second)
    assert np.all(levels_first == reference) and np.all(levels_second == reference)  # τ from public inputs


# -- audits: the released value of the cell that differs (the harness of test_sparse.py) ----------------

AUDITED = [("priority", {"size": 5}), ("threshold", {"tau": 4.0}), ("filter-priority", {"threshold": 2, "size": 4})]


@pytest.mark.parametrize("mechanism_id,params", AUDITED[:2], ids=[c[0] for c in AUDITED[:2]])
def test_audit_of_the_exact_samplers_stays_below_the_claim(mechanism_id, params):
    first, second = neighbours(0)  # 0 → 1: the empty-cell law against the noisy count
    result = audit(cell_sampler(dpdesk.mechanisms.get(mechanism_id), 0, **params), first, second, runs=1500,
                   features=clipped, seed=11)
    assert result.epsilon_lower <= AUDIT_EPS, str(result)


@pytest.mark.slow
@pytest.mark.parametrize("mechanism_id,params", AUDITED, ids=[c[0] for c in AUDITED])
@pytest.mark.parametrize("count", [0, 2])
def test_audit_of_the_exact_samplers_long(mechanism_id, params, count):
    first, second = neighbours(count)
    result = audit(cell_sampler(dpdesk.mechanisms.get(mechanism_id), 0, **params), first, second, runs=20_000,
                   features=clipped, seed=12)
    assert result.epsilon_lower <= AUDIT_EPS, str(result)
