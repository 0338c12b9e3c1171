"""The sparse-domain mechanisms through dpdesk.release and the CLI: schemas, parameters,
public facts and budget, the dyadic and sketch summaries, exports, and the privacy audit."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pandas as pd
import pytest

import dpdesk
from dpdesk.api import prepare
from dpdesk.errors import ParameterError
from dpdesk.evaluation.summaries import estimate_points, estimate_ranges, true_ranges
from dpdesk.mechanisms.sparse import shortcut
from dpdesk.mechanisms.sparse.mechanisms import Filter
from dpdesk.privacy.randomness import SeededRandom
from dpdesk.report.export import release_table, render_release
from tests.audit import audit

from tests.secure_run import secure_run

SPARSE = ("geometric", "filter", "filter2", "threshold", "priority", "filter-threshold", "filter-priority",
          "dyadic", "sketch")
ADULT_ATTRIBUTES = [1, 3, 5, 6, 7, 8, 9]  # workclass, education, marital status, occupation, relationship, race, sex


@pytest.fixture(scope="module")
def adult():
    from tests.conftest import DATA

    return dpdesk.load(DATA / "adult.data.gz", format="records", attributes=ADULT_ATTRIBUTES)


def synthetic(m=200_000, n=2000, seed=3):
    rng = np.random.default_rng(seed)
    indices = np.sort(rng.choice(m, size=n, replace=False))
    counts = np.maximum(1, np.round(rng.normal(100, 20, size=n))).astype(int)
    return dpdesk.from_cells(indices, counts, m)


def test_registered_with_their_contract_names():
    cells = {m.id: m for m in dpdesk.mechanisms("cells")}
    assert set(SPARSE) <= set(cells)
    names = {mid: {p.name for p in cells[mid].params} for mid in SPARSE}
    assert {"threshold", "target_size"} <= names["filter"] and {"threshold", "target_size"} <= names["filter2"]
    assert {"tau", "target_size"} <= names["threshold"] and "size" in names["priority"]
    assert {"threshold", "tau"} <= names["filter-threshold"] and {"threshold", "size"} <= names["filter-priority"]
    assert {"method", "consistency", "threshold", "tau", "size"} <= names["dyadic"]
    assert {"width", "depth"} == names["sketch"] - {"max_cells"}
    for mid in SPARSE:
        described = cells[mid].describe()
        assert described["data"] == "cells" and described["reference"] and described["summary"]
        assert all(p["help"] for p in described["parameters"])


def test_release_exposes_the_summary_cells(adult):
    release = dpdesk.release(adult, "filter2", epsilon=1.0, threshold=5, rng=4)
    cells = release.cells
    assert release.values is None and release.exploration
    assert isinstance(cells.indices, np.ndarray) and isinstance(cells.values, np.ndarray)
    assert np.all(np.diff(cells.indices) > 0) and np.all(np.abs(cells.values) >= 5)
    assert cells.weights is None and cells.info["kind"] == "cells"
    assert cells.info["labels"][0] == adult.cell_labels(cells.indices[:1])[0]
    assert " | " in cells.info["labels"][0]
    assert release.internal["nonzero_cells"] == adult.n_cells and release.internal["total"] == adult.total
    sampled = dpdesk.release(adult, "priority", epsilon=1.0, size=500, rng=4).cells
    assert len(sampled) == 500 and isinstance(sampled.weights, np.ndarray)
    tau_s = sampled.info["tau_s"]
    assert np.allclose(sampled.weights, np.sign(sampled.values) * np.maximum(np.abs(sampled.values), tau_s))


def test_public_report_has_no_true_data(adult):
    release = dpdesk.release(adult, "filter2", epsilon=1.0, target_size=5000, rng=4)
    text = json.dumps(release.report, default=str)
    assert str(adult.n_cells) not in text and f"{adult.n_cells:,}" not in text
    assert str(adult.total) not in text and f"{adult.total:,}" not in text
    facts = release.report["public_facts"]
    assert facts["domain size m (cells)"] == 907_200
    assert "values found in the data (exploration only" in facts["cells"]
    assert "estimated with a share of ε" in facts["non-empty cells n and people ‖M‖₁"]
    noisy = release.report["estimates"]["non-empty cells n"]
    assert abs(noisy - adult.n_cells) < 200  # ε = 0.05 on a count of sensitivity 1
    steps = release.budget_split
    assert [s["step"] for s in steps] == ["estimate non-empty cells n", "noisy summary"]
    assert steps[0]["epsilon"] == pytest.approx(0.05) and sum(s["epsilon"] for s in steps) == pytest.approx(1.0)


def test_declared_facts_spend_nothing_and_say_so(adult):
    release = dpdesk.release(adult, "threshold", epsilon=1.0, target_size=3000, nonzeros=7000, total=32561, rng=4)
    assert len(release.budget_split) == 1
    assert "declared by the steward (7,000)" in release.report["public_facts"]["non-empty cells n and people ‖M‖₁"]
    direct = dpdesk.release(adult, "filter", epsilon=1.0, threshold=4, rng=4)
    assert direct.report["public_facts"]["non-empty cells n and people ‖M‖₁"].startswith("not used")


def test_target_sizes_are_met_on_average():
    data = synthetic()
    n, total = data.n_cells, data.total
    sizes = [len(dpdesk.release(data, "threshold", epsilon=0.5, target_size=3000, nonzeros=n, total=total,
                                rng=s).cells) for s in range(5)]
    assert np.mean(sizes) == pytest.approx(3000, rel=0.1)
    filtered = dpdesk.release(data, "filter2", epsilon=0.5, target_size=3000, nonzeros=n, rng=1)
    empty = ~np.isin(filtered.cells.indices, data.indices)
    assert empty.sum() <= 3000 * 1.1  # θ rounds up: at most about t empty cells
    assert len(dpdesk.release(data, "priority", epsilon=0.5, size=1234, rng=1).cells) == 1234


@pytest.mark.parametrize("mechanism,params,message", [
    ("filter", {}, "either a filter threshold"),
    ("filter", {"threshold": 3, "target_size": 10}, "not both"),
    ("threshold", {}, "either a sampling threshold"),
    ("priority", {}, "(?i)sample size"),
    ("filter-priority", {"size": 10}, "(?i)filter threshold"),
    ("filter-threshold", {"threshold": 2}, "either a sampling threshold τ"),
    ("dyadic", {"method": "priority"}, "sample size"),
    ("filter", {"bound": 3, "threshold": 2}, "no parameter 'bound'"),
    ("priority", {"size": 10**9}, "above max_cells"),
    ("sketch", {"width": 2**20, "depth": 64}, "max_cells"),
])
def test_parameter_errors(mechanism, params, message):
    with pytest.raises(ParameterError, match=message):
        dpdesk.release(synthetic(), mechanism, epsilon=1.0, rng=1, **params)


def test_dyadic_ignores_the_other_methods_settings():
    release = dpdesk.release(synthetic(), "dyadic", epsilon=1.0, method="priority", size=50, threshold=3, tau=9.0,
                             rng=1)
    assert release.params["threshold"] is None and release.params["tau"] is None and release.params["size"] == 50
    with pytest.raises(ParameterError, match="'dyadic' with method 'filter2' needs either"):
        dpdesk.release(synthetic(), "dyadic", epsilon=1.0, method="filter2", size=50, rng=1)


def test_geometric_refuses_huge_domains_before_any_noise():
    huge = dpdesk.from_cells([5, 10**12], [3, 4], 10**13)
    with pytest.raises(ParameterError, match="every one of the 10,000,000,000,000 cells"):
        dpdesk.release(huge, "geometric", epsilon=1.0, rng=1)
    with pytest.raises(ParameterError, match="max_cells"):
        dpdesk.release(synthetic(m=1000, n=10), "geometric", epsilon=1.0, max_cells=999, rng=1)
    with pytest.raises(ParameterError, match="empty cells"):  # a filter that would list ~10^11 cells
        dpdesk.release(huge, "filter2", epsilon=1.0, threshold=1, rng=1)
    small = synthetic(m=5000, n=50)
    release = dpdesk.release(small, "geometric", epsilon=1.0, clamp=True, rng=1)
    assert release.cells.info["dense"] and release.cells.values.min() >= 1  # zeros are implicit
    listed = len(dpdesk.release(small, "geometric", epsilon=1.0, rng=1).cells)  # every cell whose noisy value ≠ 0
    alpha = math.exp(-1.0)
    assert listed == pytest.approx(5000 * 2 * alpha / (1 + alpha), abs=150)


def test_huge_domain_shortcuts_run_in_memory_of_n():
    rng = np.random.default_rng(0)
    indices = np.unique(rng.integers(0, 10**15, size=20_000))
    data = dpdesk.from_cells(indices, np.full(indices.size, 50), 10**15)
    release = dpdesk.release(data, "filter", epsilon=1.0, target_size=20_000, nonzeros=20_000, rng=2)
    empty = ~np.isin(release.cells.indices, indices)
    assert 20_000 / math.e * 0.9 < empty.sum() < 22_000 and release.cells.indices.max() < 10**15  # θ rounds up
    sample = dpdesk.release(data, "filter-priority", epsilon=1.0, threshold=10, size=15_000, rng=2)
    assert len(sample.cells) == 15_000


def test_dyadic_ranges_answer_from_few_nodes(adult):
    release = dpdesk.release(adult, "dyadic", epsilon=1.0, method="filter2", threshold=60, rng=3)
    levels = release.cells.info["levels"]
    assert levels == math.ceil(math.log2(adult.domain_size)) + 1
    assert release.report["summary"]["sensitivity Δ"] == levels
    assert f"Δ = {levels}" in release.budget_split[0]["description"]
    from dpdesk.mechanisms.sparse.dyadic import DyadicTree

    tree = DyadicTree(adult.domain_size)
    assert tree.consistent(release.cells.indices).all()  # the consistency check ran
    starts = np.array([0, 1000, 123_456])
    stops = np.array([adult.domain_size, 500_000, 123_457])
    estimate = estimate_ranges(release, starts, stops)
    truth = true_ranges(adult, starts, stops)
    assert abs(estimate[0] - truth[0]) < 20 * levels  # the root alone: noise of scale L/ε
    assert release.cells.info["labels"][0].startswith("cell")
    loose = dpdesk.release(adult, "dyadic", epsilon=1.0, method="filter2", threshold=60, consistency=False, rng=3)
    assert len(loose.cells) >= len(release.cells)
    for method, extra in (("threshold", {"tau": 200.0}), ("priority", {"size": 2000}),
                          ("filter-priority", {"threshold": 40, "size": 1500}), ("geometric", {})):
        other = dpdesk.release(adult, "dyadic", epsilon=1.0, method=method, rng=5, **extra)
        assert np.isfinite(estimate_ranges(other, starts, stops)).all()


def test_sketch_has_sensitivity_d_and_answers_points():
    data = synthetic(m=50_000, n=300)
    release = dpdesk.release(data, "sketch", epsilon=1.0, width=4096, depth=3, rng=7)
    assert len(release.cells) == 3 * 4096 and release.cells.info["kind"] == "sketch"
    assert "scale d/ε = 3" in release.budget_split[0]["description"]
    # the heavy cells stand out: their estimates are near their counts (collisions are rare at w = 4096)
    estimates = estimate_points(release, data.indices)
    assert np.median(np.abs(estimates - data.counts)) < 10
    # a recipient rebuilds the hashes from the published key alone
    key = release.report["summary"]["hash key"]
    assert key == release.cells.info["hash_key"] and len(bytes.fromhex(key)) == 32


def test_export_table_and_secure_release(adult):
    declared = dpdesk.declare(adult, "from-data", items_are_public=True)
    release = secure_run(declared, "filter-priority", epsilon=1.0, threshold=3, size=800)  # secure
    table = release_table(release)
    assert list(table.columns) == ["cell", "label", "value", "weight"] and len(table) == 800
    files = render_release(release, ("csv", "json"))
    metadata = json.loads(files["release.json"])
    assert metadata["mechanism"]["id"] == "filter-priority" and "summary" in metadata
    described = json.dumps({k: v for k, v in metadata.items() if k != "values"})  # cell numbers may contain digits
    # whole numbers only: a hex digest or a hash key may hold the digits by chance ("…fb6d7e312f681637…")
    numbers = set(re.findall(r"(?<![0-9A-Za-z.])\d+(?![0-9A-Za-z.])", described))
    assert str(adult.total) not in numbers and str(adult.n_cells) not in numbers


def test_cli_release_on_adult(tmp_path, data_dir, dpdesk_home):
    from tests.test_cli import run

    out = tmp_path / "out"
    result = run("release", data_dir / "adult.data.gz", "--format", "records", "--attributes",
                 ",".join(map(str, ADULT_ATTRIBUTES)), "--mechanism", "filter2", "--epsilon", "1",
                 "--param", "target_size=6000", "--param", "nonzeros=7000", "--out", out,
                 "--domains", "from-data", "--domains-are-public", "--raw")  # raw: negative counts listed too
    assert result.returncode == 0, result.stderr
    table = pd.read_csv(out / "release.csv")
    assert list(table.columns) == ["cell", "label", "value", "margin95"] and 3000 < len(table) < 15000
    refused = run("release", data_dir / "adult.data.gz", "--format", "records", "--attributes", "1,3",
                  "--mechanism", "priority", "--epsilon", "1", "--out", tmp_path / "x",
                  "--domains", "from-data", "--domains-are-public")
    assert refused.returncode == 2 and "Sample size s) is required" in refused.stderr


# -- privacy audit: neighbours differ by one person in one cell --------------------------------------

AUDIT_EPS = 1.0
CELL = 3


def neighbours(count):
    """D has ``count`` people in cell 3, D′ one more (count 0 → 1 exercises the empty-cell law)."""
    base_indices, base_counts = [1, 7, 12], [4, 2, 9]
    first = dpdesk.from_cells(base_indices + ([CELL] if count else []), base_counts + ([count] if count else []), 20)
    second = dpdesk.from_cells(base_indices + [CELL], base_counts + [count + 1], 20)
    return first, second


def clipped(outputs):
    """Features: the value, clipped to [−5, 5] so that rare extreme values do not make rare events."""
    return np.clip(outputs, -5, 5)


def cell_sampler(mechanism, absent, **params):
    """Outputs = the released value of cell 3 (``absent`` when it is not listed)."""
    def sample(data, generator, n):
        values = mechanism.validate(data, AUDIT_EPS, params)
        prepared = prepare(data, mechanism, AUDIT_EPS, values)
        source = SeededRandom(generator)
        out = np.empty(n)
        for i in range(n):
            cells = mechanism.run(data, prepared, AUDIT_EPS, values, source).cells
            found = np.flatnonzero(cells.indices == CELL)
            out[i] = cells.values[found[0]] if found.size else absent
        return out[:, None]

    return sample


# 0 → 1 is where the shortcut matters: D′'s cell follows the empty-cell law, D's gets noise directly
AUDIT_CASES = [("geometric", 0, {}), ("filter", 0, {"threshold": 2}), ("filter", 2, {"threshold": 2}),
               ("geometric", 2, {}), ("filter2", 0, {"threshold": 2})]


@pytest.mark.parametrize("mechanism_id,count,params", AUDIT_CASES[:2], ids=[f"{c[0]}-{c[1]}" for c in AUDIT_CASES[:2]])
def test_audit_stays_below_claim(mechanism_id, count, params):
    mechanism = dpdesk.mechanisms.get(mechanism_id)
    first, second = neighbours(count)
    result = audit(cell_sampler(mechanism, 0, **params), first, second, runs=3000, features=clipped, seed=7)
    assert result.epsilon_lower <= AUDIT_EPS, str(result)


def test_audit_catches_a_filter_that_never_lists_empty_cells(monkeypatch):
    monkeypatch.setattr(shortcut, "choose_free_cells", lambda source, occupied, m, p: np.zeros(0, dtype=np.int64))
    first, second = neighbours(0)
    result = audit(cell_sampler(Filter(), 0, threshold=2), first, second, runs=2000, features=clipped,
                   seed=8)
    assert result.epsilon_lower > AUDIT_EPS, str(result)


@pytest.mark.slow
@pytest.mark.parametrize("mechanism_id,count,params", AUDIT_CASES, ids=[f"{c[0]}-{c[1]}" for c in AUDIT_CASES])
def test_audit_long(mechanism_id, count, params):
    mechanism = dpdesk.mechanisms.get(mechanism_id)
    first, second = neighbours(count)
    result = audit(cell_sampler(mechanism, 0, **params), first, second, runs=60_000, features=clipped, seed=9)
    assert result.epsilon_lower <= AUDIT_EPS, str(result)
    assert result.epsilon_lower > 0.6 * AUDIT_EPS  # tight enough to mean something
