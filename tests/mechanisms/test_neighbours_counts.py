"""Neighbour tests for the count mechanisms (issue #13, rows B1, B2, B4, B5).

For D and D′ = D plus one person, everything a release publishes except the noisy values
(and hashes and dates) must be identical, and the outputs must lie on the same public
lattice, so that no output has probability 0 on one and > 0 on the other. Both datasets
carry the same declared item list (the workflow's contract after issue #13 S1): items
nobody in D holds are all-zero columns.

A choice the mechanism pays for with ε (DPSense's θ and α) is a noisy value too: releases
are compared among those that made the same choice. So are the margins (issue 28): their
estimates (``report['margin_estimates']``) are noisy sums paid for with their own steps, and
whether a release withholds its margins is decided from those noisy figures; what must be
equal is their public skeleton — which estimates ran, at which level, with which noise scale —
and the budget steps that paid for them.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import scipy.sparse as sp

import dpdesk
from dpdesk.data.dataset import Dataset
from dpdesk.errors import ParameterError
from dpdesk.mechanisms import counts, dpsense, fpa
from tests.conftest import DATA

SECRET = "secret_disease"


class DeclaredDomain:
    """What the workflow hands to ``check`` before the data is read: declared facts only.

    Reading anything else (row counts, whether values are binary, …) fails the test.
    """

    kind = "incidence"

    def __init__(self, labels, name="declared"):
        self.item_labels = np.asarray(labels, dtype=object)
        self.n_items = int(self.item_labels.size)
        self.name = name
        self.domain = None  # the declaration itself is public too (dpdesk.data.domain.PublicView)

    def __getattr__(self, attribute):
        raise AssertionError(f"check() read '{attribute}', which is not public before the data is read")


# --- the datasets ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def groceries():
    """The first 1,500 real Groceries baskets, with one more declared item that nobody holds."""
    full = dpdesk.load(DATA / "groceries.csv.gz")
    matrix = sp.hstack([full.matrix[:1500], sp.csr_matrix((1500, 1), dtype=np.uint8)], format="csr")
    return Dataset(matrix, np.append(full.item_labels, SECRET), name="groceries")


def with_person(data: Dataset, items: dict) -> Dataset:
    """D′: ``data`` plus one person holding ``items`` ({label: value}); the same declared item list."""
    position = {label: j for j, label in enumerate(data.item_labels)}
    columns = sorted(position[label] for label in items)
    values = [items[data.item_labels[j]] for j in columns]
    binary = data.binary and all(v == 1 for v in values)
    dtype = np.uint8 if binary else np.float64
    row = sp.csr_matrix((np.array(values, dtype=dtype), columns, [0, len(columns)]), shape=(1, data.n_items))
    matrix = sp.vstack([data.matrix.astype(dtype), row], format="csr")
    return Dataset(matrix, data.item_labels, name=data.name)


def valued(data: Dataset) -> Dataset:
    """Groceries with a quantity of 1, 1.5, 2 or 3 per item bought (non-binary data)."""
    matrix = data.matrix.astype(np.float64)
    matrix.data = np.random.default_rng(0).choice([1.0, 1.5, 2.0, 3.0], size=matrix.nnz)
    return Dataset(matrix, data.item_labels, name=data.name)


def newcomers(data: Dataset) -> dict:
    labels = list(data.item_labels)
    return {
        "many items": {label: 3.0 if not data.binary else 1 for label in labels},
        "an item nobody else has": {SECRET: 1, labels[0]: 1, labels[5]: 1},
        "a large value": {labels[1]: 10.0**6, labels[2]: 1},
        "nothing": {},
    }


# --- what a release publishes ------------------------------------------------------------------

def canonical(value):
    if isinstance(value, dict):
        return {str(k): canonical(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [canonical(v) for v in value]
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        return value.item()
    return value


def margin_skeleton(estimates: dict | None) -> dict | None:
    """The public part of a release's margin estimates: which ran, at which level, with which noise scale (their
    noisy figures — and the windows, laid out from the published values — are noisy values)."""
    if estimates is None:
        return None
    public = {"truncation": ("level", "what", "noise_scale"), "smoothing": ("noise_scale",)}
    return {name: {key: part[key] for key in public[name]} for name, part in estimates.items()}


def published(release) -> str:
    """Everything public except the noisy values, the date, the data's hash and the randomness
    source (which names an exploration run's seed; compared on its own), as canonical JSON."""
    report = {k: v for k, v in release.report.items() if k not in ("created", "randomness")}
    report["margin_estimates"] = margin_skeleton(report.get("margin_estimates"))
    return json.dumps(canonical({
        "report": report, "labels": list(release.labels), "count": len(release.values),
        "budget": release.budget_split, "delta": release.delta, "params": release.params,
        "mechanism": release.mechanism, "epsilon": release.epsilon, "mode": release.exploration,
        "dataset": release.dataset_name,
        "diagnostics": {name: plot.data for name, plot in release.diagnostics.items() if not plot.internal},
    }), sort_keys=True, default=repr)


def paid_choice(release):
    """The part of the output chosen with ε before the counts (DPSense's θ and α; AHP's clusters, chosen from
    its noisy counts, with what the report says of them: their number, and θ when it is adaptive), and whether
    the margins were withheld (decided from the margins' noisy estimates), or None."""
    if release.mechanism == "ahp":
        return (json.dumps(release.report["clusters"], sort_keys=True),
                tuple(step.description for step in release.budget.steps), release.margin_withheld)
    selection = release.report.get("selection")
    chosen = None if selection is None else (selection["theta"], selection.get("alpha"))
    return (chosen, release.margin_withheld) if release.margin_withheld else chosen


def assert_on_lattice(release):
    """The outputs lie on the lattice the mechanism's public settings define."""
    values, params, mechanism = release.values, release.params, release.mechanism

    def whole(x, tolerance=1e-6):
        assert np.all(np.abs(x - np.round(x)) <= tolerance * np.maximum(1.0, np.abs(x))), mechanism

    if mechanism in ("lpa", "diff"):
        whole(values / (1.0 if params.get("noise", "geometric") == "geometric"
                        else counts.laplace_grid(params["bound"] / release.epsilon)), 0)
    elif mechanism == "alpa":
        whole(values * values.size)
    elif mechanism == "fpa":
        d, rho, grid = values.size, params["rho"], release.report["noise"]["grid"]
        whole(fpa.pack(np.fft.rfft(values)[:rho], d) / grid)
    elif mechanism == "ahp":  # (whole total + whole noise) / the cluster's size; a median is whole
        sizes = np.maximum(release.cluster_sizes, 1)
        whole(values * sizes)
    elif mechanism.startswith("dpsense"):
        alpha = release.report["selection"].get("alpha", 1.0)
        whole(values / (alpha * release.report["noise_scales"]["grid"]))
    else:  # pragma: no cover
        raise AssertionError(mechanism)


def assert_same_publication(mechanism, first, second, params, seeds=range(8)):
    """Over several seeds: for every paid choice made on both D and D′, equal publications.

    Exploration runs name their seed in the report ("randomness"); it is compared per seed.
    ``params`` may hold the ε to use (default 1).
    """
    params = dict(params)
    epsilon = params.pop("epsilon", 1.0)
    seen: dict = {}
    for name, data in (("D", first), ("D′", second)):
        for seed in seeds:
            release = dpdesk.release(data, mechanism, epsilon=epsilon, rng=seed, **params)
            assert_on_lattice(release)
            assert release.randomness == dpdesk.release(first, mechanism, epsilon=epsilon, rng=seed,
                                                        **params).randomness
            seen.setdefault(paid_choice(release), {}).setdefault(name, set()).add(published(release))
    shared = [choice for choice, by_data in seen.items() if len(by_data) == 2]
    assert shared, f"{mechanism}: no choice made on both datasets ({list(seen)})"
    for choice in shared:
        on_first, on_second = seen[choice]["D"], seen[choice]["D′"]
        assert len(on_first) == 1 and on_first == on_second, (mechanism, choice, on_first ^ on_second)
    return len(shared)


def index_file(tmp_path, labels):
    """A public query index: a weight for every declared item (the largest for the item nobody in D
    holds), and one for an item outside the list."""
    path = tmp_path / "index.csv"
    rows = [f"{label},{10 if label == SECRET else 1 + (j % 4)}" for j, label in enumerate(labels)]
    rows.append("not_in_the_list,0.001")
    path.write_text("item,weight\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return str(path)


BINARY_SETTINGS = [
    ("lpa", {"bound": 5}), ("lpa", {"bound": 5, "noise": "laplace"}),
    ("lpa", {"bound": 500}),  # Δ above the d = 169 items: Δ' = min(Δ, d), never anything the data holds
    ("alpa", {}), ("alpa", {"bound": 5}),
    ("fpa", {"bound": 5, "rho": 12}),
    ("ahp", {"bound": 5}), ("ahp", {"bound": 5, "small_counts": "median", "threshold": "adaptive"}),
    ("ahp", {"bound": 5, "small_counts": "median", "threshold": "adaptive", "counts_share": 0.1}),  # the lean arm
    ("dpsense", {"selection_share": 0.5}), ("dpsense-s", {"selection_share": 0.9, "alpha_steps": 4, "epsilon": 10.0}),
    ("diff", {"index": "uniform"}), ("diff", {"index": "FILE", "bound": 4}),
]
VALUED_SETTINGS = [
    ("dpsense", {"selection_share": 0.5, "max_value": 3}),
    ("dpsense-s", {"selection_share": 0.9, "alpha_steps": 4, "max_value": 3, "epsilon": 10.0}),
]


@pytest.mark.parametrize("mechanism,params", BINARY_SETTINGS, ids=lambda x: str(x))
def test_binary_neighbours_publish_the_same(groceries, tmp_path, mechanism, params):
    params = {k: index_file(tmp_path, groceries.item_labels) if v == "FILE" else v for k, v in params.items()}
    # AHP's clusters (and its adaptive θ) vary from seed to seed: more seeds find the same ones on D and D′
    seeds = range(40) if mechanism == "ahp" else range(8)
    for who, items in newcomers(groceries).items():
        assert_same_publication(mechanism, groceries, with_person(groceries, items), params, seeds=seeds)


@pytest.mark.parametrize("mechanism,params", VALUED_SETTINGS, ids=lambda x: str(x))
def test_valued_neighbours_publish_the_same(groceries, mechanism, params):
    base = valued(groceries)
    for who, items in newcomers(base).items():
        assert_same_publication(mechanism, base, with_person(base, items), params)


# --- every check() works on the declared domain alone (B4) -------------------------------------

@pytest.mark.parametrize("mechanism,params", BINARY_SETTINGS + VALUED_SETTINGS, ids=lambda x: str(x))
def test_check_reads_only_declared_facts(groceries, tmp_path, mechanism, params):
    params = {k: index_file(tmp_path, groceries.item_labels) if v == "FILE" else v for k, v in params.items()}
    params = {k: v for k, v in params.items() if k != "epsilon"}
    implementation = dpdesk.mechanisms.get(mechanism)
    domain = DeclaredDomain(groceries.item_labels)
    assert implementation.validate(domain, 1.0, params) == implementation.validate(groceries, 1.0, params)
    facts = implementation.public_facts(domain, implementation.validate(domain, 1.0, params))
    assert facts["number of items (d)"] == groceries.n_items


def test_refusals_are_decided_on_the_declared_domain(tmp_path):
    labels = [f"item{j}" for j in range(40)]
    domain = DeclaredDomain(labels)

    def refused(mechanism, epsilon, match, **params):
        implementation = dpdesk.mechanisms.get(mechanism)
        with pytest.raises(ParameterError, match=match):
            implementation.validate(domain, epsilon, params)

    refused("fpa", 1.0, "at most 21 Fourier", bound=3, rho=22)
    big = DeclaredDomain([str(j) for j in range(200_000)])
    with pytest.raises(ParameterError, match="exact transform"):
        dpdesk.mechanisms.get("fpa").validate(big, 1.0, {"bound": 3, "rho": fpa.MAX_PRODUCTS // 200_000 + 1})
    refused("dpsense", 1e-14, "too small", max_value=5)
    refused("lpa", 1e-15, "too small", bound=10**6)
    refused("alpa", 1e-14, "too small")
    # DIFF: the index must weigh every item of the declared list, and names the missing ones;
    # an index line for an item outside the list is ignored
    path = tmp_path / "partial.csv"
    path.write_text("\n".join(f"{label},2" for label in labels[:-1] + ["elsewhere"]) + "\n", encoding="utf-8")
    refused("diff", 1.0, "no weight for 1 item.*'item39'", index=str(path))
    path.write_text("\n".join(f"{label},2" for label in labels + ["elsewhere"]) + "\n", encoding="utf-8")
    assert dpdesk.mechanisms.get("diff").validate(domain, 1.0, {"index": str(path)})["index"] == str(path)


# --- B1: FPA's path does not depend on the data ------------------------------------------------

def test_fpa_branch_through_a_lower_threshold(groceries, monkeypatch):
    """A test-only threshold between the truncated totals of D and D′: D below, D′ above.

    Before the fix, FPA fell back to the floating-point FFT at ``EXACT_CELLS`` and published
    which path it took, with a different sensitivity and scale. Now every evaluation path of
    the exact sums gives the same integers: the publications agree and, for one dataset, even
    the noisy values are bit for bit the same on either side of the threshold.
    """
    second = with_person(groceries, newcomers(groceries)["many items"])
    params = {"bound": 5, "rho": 12, "diagnostics": False}
    total = lambda data: int(np.minimum(data.row_counts, 5).sum())  # noqa: E731 - the truncated total
    threshold = total(second)
    assert total(groceries) < threshold
    below = dpdesk.release(second, "fpa", epsilon=1.0, rng=7, **params)
    for name in ("EXACT_CELLS", "SINGLE_PASS_TOTAL"):  # the old name and the new one
        monkeypatch.setattr(fpa, name, threshold, raising=False)
    assert_same_publication("fpa", groceries, second, params)
    above = dpdesk.release(second, "fpa", epsilon=1.0, rng=7, **params)
    assert published(above) == published(below)
    np.testing.assert_array_equal(above.values, below.values)
    assert above.report["noise"]["transform"].startswith("exact integer sums")


# --- B2: DPSense's grid does not depend on the values ------------------------------------------

def pairs_file(path, rows):
    path.write_text("person,item,value\n" + "".join(f"{p},{i},{v}\n" for p, i, v in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize("mechanism", ["dpsense", "dpsense-s"])
@pytest.mark.parametrize("declared", [{}, {"max_value": 5}], ids=["no r", "r=5"])
def test_dpsense_grid_is_declared(tmp_path, mechanism, declared):
    """A pairs file whose values are all 1 is binary; its neighbour with a 2 is not. Before the
    fix the first was released on the grid 1 and the second refused (no r) or released on the
    grid 1/8 (r = 5): a probability-0 event for one of them."""
    rng = np.random.default_rng(4)
    rows = [(f"p{p}", f"i{i}", 1) for p in range(300) for i in rng.choice(12, 3, replace=False)]
    (tmp_path / "with").mkdir()
    first = dpdesk.load(pairs_file(tmp_path / "people.csv", rows), value="value", keep_values=True)
    second = dpdesk.load(pairs_file(tmp_path / "with" / "people.csv", rows + [("newcomer", "i3", 2)]),
                         value="value", keep_values=True)
    assert first.binary and not second.binary and list(first.item_labels) == list(second.item_labels)
    params = {"selection_share": 0.9, "epsilon": 10.0, **declared} | (
        {"alpha_steps": 2} if mechanism == "dpsense-s" else {})
    assert_same_publication(mechanism, first, second, params)


# --- B4: DPSense does not refuse large totals ------------------------------------------------

def test_dpsense_large_totals_are_released_not_refused():
    """r = 2^20 and cells at that value: the integer tables exceed what int64 holds. Before the fix
    D (80 such cells) was released and D′ (88) refused after the data was read ("too large for
    DPSense's exact integer arithmetic"); now both are released, with the same publication."""
    r = float(dpsense.LARGEST_VALUE) if hasattr(dpsense, "LARGEST_VALUE") else 2.0**20
    first = dpdesk.from_matrix(np.full((10, 8), r), [f"i{j}" for j in range(8)])
    second = dpdesk.from_matrix(np.full((11, 8), r), [f"i{j}" for j in range(8)])
    assert_same_publication("dpsense", first, second, {"max_value": r, "selection_share": 0.5})
    assert_same_publication("dpsense-s", first, second, {"max_value": r, "selection_share": 0.9, "alpha_steps": 100,
                                                         "epsilon": 40.0}, seeds=range(16))
    release = dpdesk.release(second, "dpsense-s", epsilon=1.0, rng=1, max_value=r, alpha_steps=100)
    assert np.all(np.isfinite(release.values)) and release.values.min() >= 0


def test_wide_integer_tables_equal_the_int64_ones(monkeypatch):
    """Forcing the Python-integer tables on small data gives the very same scores and counts."""
    rng = np.random.default_rng(11)
    dense = (rng.random((80, 9)) < 0.4) * rng.choice([0.5, 1.0, 2.0, 4.0], size=(80, 9))
    dense[0] = 4.0
    results = []
    for limit in (dpsense.INT64_SAFE, 1):
        monkeypatch.setattr(dpsense, "INT64_SAFE", limit)
        data = dpdesk.from_matrix(dense)  # a new object: nothing cached
        layout = dpsense.integer_layout(data, 4.0)
        assert (layout.integer_type(7) is object) == (limit == 1)
        tables = dpsense.scaled_error_table(layout, 7, lambda *a: None, None)
        results.append((dpsense.average_kept(layout), tables.average_error,
                        [list(dpsense.normalized_counts(layout, k, layout.weight_grid)) for k in (1, 2, 5)]))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])
    assert results[0][2] == results[1][2]


def test_score_error_is_public_and_small():
    """The exponential mechanism's widening comes from declared values only, and is tiny."""
    for r, d, epsilon_counts in ((None, 169, 0.9), (5.0, 9724, 0.1), (2.0**20, 8, 10.0), (None, 1, 1.0)):
        grid, cell_max = dpsense.value_grid(r)
        error = dpsense.score_error(cell_max, grid, d, epsilon_counts)
        assert 0 < 2 * error <= 0.005 * cell_max / grid  # at most 0.5% of Δq (2⁻⁹/d at d = 1)


# --- B5: DIFF's published scales come from the declared list -----------------------------------

def test_diff_scales_come_from_the_declared_list(groceries, tmp_path):
    index = index_file(tmp_path, groceries.item_labels)
    mechanism = dpdesk.mechanisms.get("diff")
    for bound in (None, 4):
        params = mechanism.validate(groceries, 1.0, {"index": index, "bound": bound})
        from_domain = mechanism.noise_summary(DeclaredDomain(groceries.item_labels), 1.0, params)
        for data in (groceries, with_person(groceries, newcomers(groceries)["an item nobody else has"])):
            release = dpdesk.release(data, "diff", epsilon=1.0, rng=2, index=index, bound=bound)
            assert release.report["noise_scales"] == pytest.approx(from_domain)
        # the largest weight is that of the item nobody in D holds: the extreme scales cover the whole list
        assert from_domain["largest"] == pytest.approx(from_domain["alpha"] * 10)
        assert from_domain["smallest"] == pytest.approx(from_domain["alpha"] * 1)
    assert math.isclose(mechanism.noise_summary(DeclaredDomain(groceries.item_labels), 2.0, params)["alpha"] * 2,
                        from_domain["alpha"])
