"""LPA, ALPA and DIFF: error against theory, parameters, and the privacy audit."""

import math

import numpy as np
import pytest

import dpdesk
from dpdesk.errors import ParameterError
from dpdesk.mechanisms.counts import LPA
from dpdesk.privacy.noise import discrete_laplace_mean_abs
from tests.audit import audit, release_sampler, run_sampler

EPS = math.log(3)


@pytest.fixture(scope="module")
def retail(data_dir=None):
    from tests.conftest import DATA

    return dpdesk.load(DATA / "retail.dat.gz")


def small():
    # every row within Δ = 3, so the counts are exact before noise
    rng = np.random.default_rng(1)
    matrix = np.zeros((400, 50), dtype=np.uint8)
    for row in matrix:
        row[rng.choice(50, size=rng.integers(0, 4), replace=False)] = 1
    return dpdesk.from_matrix(matrix)


def test_lpa_error_matches_theory():
    data = small()
    # bound_holds: nothing of ε estimates what Δ cut off (it cuts nothing here), so the counts get all of it
    errors = np.concatenate([dpdesk.release(data, "lpa", epsilon=0.5, bound=3, bound_holds=True, rng=s).values
                             - data.column_counts for s in range(200)])
    assert np.mean(np.abs(errors)) == pytest.approx(discrete_laplace_mean_abs(3 / 0.5), rel=0.03)
    assert np.mean(errors) == pytest.approx(0, abs=0.1)
    laplace = np.concatenate([dpdesk.release(data, "lpa", epsilon=0.5, bound=3, noise="laplace", bound_holds=True,
                                             rng=s).values - data.column_counts for s in range(200)])
    assert np.mean(np.abs(laplace)) == pytest.approx(6.0, rel=0.03)  # E|Lap(b)| = b


def test_lpa_truncates_and_reports_internally(retail):
    release = dpdesk.release(retail, "lpa", epsilon=EPS, bound=10, rng=1)
    assert release.internal["rows_truncated"] == int((retail.row_counts > 10).sum())
    assert "rows_truncated" not in str(release.report)
    assert release.exploration and release.values.shape == (retail.n_items,)
    assert release.budget.check().spent == pytest.approx(EPS)
    clamped = dpdesk.release(retail, "lpa", epsilon=EPS, bound=10, clamp=True, rng=1)
    assert clamped.values.min() >= 0


def test_alpa_publishes_one_average():
    data = small()
    release = dpdesk.release(data, "alpa", epsilon=1.0, rng=3)
    assert np.unique(release.values).size == 1
    averages = [dpdesk.release(data, "alpa", epsilon=1.0, rng=s).values[0] for s in range(400)]
    true_average = data.column_counts.mean()
    # without a bound the average's sensitivity is 1: noise of scale 1/ε = 1 on the average
    assert np.mean(np.abs(np.array(averages) - true_average)) == pytest.approx(
        discrete_laplace_mean_abs(data.n_items / 1.0) / data.n_items, rel=0.1)
    bounded = [dpdesk.release(data, "alpa", epsilon=1.0, bound=3, rng=s).values[0] for s in range(400)]
    assert np.std(bounded) < np.std(averages) / 5


def test_diff_scales_follow_the_index(tmp_path):
    data = small()
    index = tmp_path / "index.csv"
    weights = {label: (10.0 if i % 2 else 1.0) for i, label in enumerate(data.item_labels)}
    index.write_text("item,weight\n" + "".join(f"{k},{v}\n" for k, v in weights.items()))
    release = dpdesk.release(data, "diff", epsilon=1.0, index=str(index), rng=5)
    gamma = np.array([weights[label] for label in data.item_labels])
    alpha = np.sum(1 / gamma) / 1.0  # Shoaran Eq. 8
    assert release.report["noise_scales"]["alpha"] == pytest.approx(alpha)
    errors = np.stack([dpdesk.release(data, "diff", epsilon=1.0, index=str(index), rng=s).values - data.column_counts
                       for s in range(60)])
    small_noise, large_noise = np.abs(errors[:, gamma == 1]).mean(), np.abs(errors[:, gamma == 10]).mean()
    assert large_noise / small_noise == pytest.approx(10, rel=0.15)
    # a declared bound shrinks α to the Δ largest 1/γ (see the module proof)
    bounded = dpdesk.release(data, "diff", epsilon=1.0, index=str(index), bound=3, rng=5, bound_holds=True)
    assert bounded.report["noise_scales"]["alpha"] == pytest.approx(3.0)
    uniform = dpdesk.release(data, "diff", epsilon=1.0, index="uniform", bound=3, rng=5, bound_holds=True)
    assert uniform.report["noise_scales"]["alpha"] == pytest.approx(3.0)  # = LPA's Δ/ε
    # with a bound that may cut, 5% of ε estimates what it cut off (the margins): α follows the counts' ε
    cut = dpdesk.release(data, "diff", epsilon=1.0, index="uniform", bound=3, rng=5)
    assert cut.report["noise_scales"]["alpha"] == pytest.approx(3.0 / 0.95)


def test_diff_index_problems(tmp_path):
    data = small()
    with pytest.raises(ParameterError, match="required"):
        dpdesk.release(data, "diff", epsilon=1.0, rng=1)
    partial = tmp_path / "partial.csv"
    partial.write_text("0,1\n1,2\n")
    with pytest.raises(ParameterError, match="no weight for 48 item"):
        dpdesk.release(data, "diff", epsilon=1.0, index=str(partial), rng=1)
    negative = tmp_path / "negative.csv"
    negative.write_text("".join(f"{label},{-1 if label == '3' else 1}\n" for label in data.item_labels))
    with pytest.raises(dpdesk.errors.DataError, match="line 4.*not positive"):
        dpdesk.release(data, "diff", epsilon=1.0, index=str(negative), rng=1)


def test_parameter_errors():
    data = small()
    with pytest.raises(ParameterError, match="Unknown mechanism"):
        dpdesk.release(data, "nope", epsilon=1.0)
    with pytest.raises(ParameterError, match="required"):
        dpdesk.release(data, "lpa", epsilon=1.0)
    with pytest.raises(ParameterError, match="at least 1"):
        dpdesk.release(data, "lpa", epsilon=1.0, bound=0)
    with pytest.raises(ParameterError, match="greater than 0"):
        dpdesk.release(data, "lpa", epsilon=0, bound=2)
    with pytest.raises(ParameterError, match="no parameter 'delta'"):
        dpdesk.release(data, "lpa", epsilon=1.0, bound=2, delta=3)


def test_schema_listed():
    ids = [m.id for m in dpdesk.mechanisms()]
    assert {"lpa", "alpa", "diff"} <= set(ids)
    lpa = dpdesk.mechanisms.get("lpa").describe()
    assert lpa["parameters"][0]["name"] == "bound" and lpa["parameters"][0]["required"]
    assert lpa["paper"] and lpa["family"]


# --- privacy audit ------------------------------------------------------------------------------

def neighbours():
    base = np.array([[1, 0, 1, 0], [0, 1, 1, 0], [1, 1, 0, 0], [0, 0, 1, 1]])
    extra = np.array([[1, 1, 0, 1]])  # the added person holds items 0, 1, 3
    return dpdesk.from_matrix(np.vstack([base, extra])), dpdesk.from_matrix(base)


def person_features(out):
    # the attacker knows everyone else: base counts of items 0, 1, 3 are 2, 2, 1
    shifted = np.column_stack([out[:, 0] - 2, out[:, 1] - 2, out[:, 3] - 1])
    return np.column_stack([shifted, shifted.sum(axis=1), shifted.min(axis=1)])


RUNS = 6000


@pytest.mark.parametrize("mechanism,params", [
    ("lpa", {"bound": 3}),
    ("lpa", {"bound": 3, "noise": "laplace"}),
    ("lpa", {"bound": 9}),  # Δ above the d = 4 items: noise of scale Δ' = min(Δ, d) = 4
    ("alpa", {}),
    ("alpa", {"bound": 3}),
    ("diff", {"index": "uniform", "bound": 3}),
])
def test_audit_stays_below_claim(mechanism, params):
    first, second = neighbours()
    result = audit(release_sampler(mechanism, epsilon=EPS, **params), first, second, runs=RUNS,
                   features=person_features, seed=7)
    assert result.epsilon_lower <= EPS, str(result)


def test_lpa_noise_is_scaled_to_at_most_d_items():
    """Δ' = min(Δ, d): nobody holds more than the d items, so a Δ above d buys no more noise (issue 29: chess,
    d = 75, Δ = 148). The scale is stated in the budget table and the noise has it."""
    data = dpdesk.from_matrix(np.zeros((50, 4), dtype=np.uint8))
    release = dpdesk.release(data, "lpa", epsilon=1.0, bound=9, rng=3, clamp=False, margin_share=0)
    assert "Δ' = min(Δ, d) = 4" in release.budget.steps[0].description
    noise = np.concatenate([dpdesk.release(data, "lpa", epsilon=1.0, bound=9, rng=seed, clamp=False,
                                           margin_share=0).values for seed in range(500)])
    expected = discrete_laplace_mean_abs(4.0)
    assert abs(np.abs(noise).mean() - expected) < 0.08 * expected  # 9/ε would give 2.2× as much


def test_audit_catches_lpa_with_half_the_noise():
    class HalfNoiseLPA(LPA):
        id = "lpa-half-noise"

        def run(self, data, prepared, epsilon, params, source):
            return super().run(data, prepared, 2 * epsilon, params, source)  # scale Δ/(2ε)

    first, second = neighbours()
    result = audit(run_sampler(HalfNoiseLPA(), EPS, bound=3), first, second, runs=RUNS,
                   features=person_features, seed=7)
    assert result.epsilon_lower > EPS, str(result)


@pytest.mark.slow
@pytest.mark.parametrize("mechanism,params", [("lpa", {"bound": 3}), ("diff", {"index": "uniform", "bound": 3})])
def test_audit_long(mechanism, params):
    first, second = neighbours()
    result = audit(release_sampler(mechanism, epsilon=EPS, **params), first, second, runs=60_000,
                   features=person_features, seed=11)
    assert result.epsilon_lower <= EPS, str(result)
    assert result.epsilon_lower > 0.6 * EPS  # the audit is tight enough to mean something
