"""DPSense and DPSense-S: scores against brute force, selection, noise, privacy audit, real data."""

import json
import math
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

import dpdesk
from dpdesk.api import prepare
from dpdesk.errors import Cancelled, ParameterError
from dpdesk.mechanisms import dpsense
from dpdesk.mechanisms.dpsense import DPSense, DPSenseS, value_grid, weight_grid
from dpdesk.privacy import exponential
from dpdesk.privacy.noise import discrete_laplace
from dpdesk.privacy.randomness import SeededRandom
from dpdesk.tasks import CancelToken, no_progress
from tests.audit import audit
from tests.conftest import DATA


def prepared_for(mechanism_id, data, epsilon, **params):
    mechanism = dpdesk.mechanisms.get(mechanism_id)
    values = mechanism.validate(data, epsilon, params)
    return mechanism.prepare(data, epsilon, values, no_progress, None)


def random_data(seed, n=40, d=7, valued=False):
    rng = np.random.default_rng(seed)
    dense = (rng.random((n, d)) < rng.uniform(0.2, 0.7)).astype(float)
    dense[0] = 1  # someone holds every item
    dense[1] = 0  # and someone holds none
    dense[2, :2] = 1
    if valued:
        dense *= rng.choice([0.5, 1.0, 2.5, 4.0, 6.0, 7.25], size=(n, d))
    return dense


def brute_force(dense, r, steps, epsilon_counts):
    """q(θ) and q_s(θ, α) from their definitions, normalizing the whole matrix for every θ.

    The row weights are the paper's min(1, θ/row total), rounded down to the public grid 1/K.
    ``r`` None: every non-zero cell counts as 1.
    """
    n, d = dense.shape
    grid, cell_max = value_grid(r)
    big_k = weight_grid(cell_max, d)
    cells = (dense != 0) if r is None else np.minimum(np.floor(dense * grid), cell_max)
    cells = cells.astype(np.int64)
    row_totals = cells.sum(axis=1)
    truth = cells.sum(axis=0)
    quality = np.empty(d)
    scaled = np.empty((d, steps + 1))
    paper = np.empty(d)  # with the exact weights min(1, θ/T), for the rounding bound
    for k in range(1, d + 1):
        threshold = k * cell_max
        weights = np.where(row_totals > threshold, threshold * (big_k // np.maximum(row_totals, 1)), big_k)
        kept = weights @ cells  # exact integers in units of 1/(K·V)
        theta = threshold / grid
        quality[k - 1] = kept.sum() / (big_k * grid * d) - theta / epsilon_counts
        exact_weights = np.minimum(1.0, threshold / np.maximum(row_totals, 1))
        paper[k - 1] = (exact_weights @ cells).sum() / (grid * d) - theta / epsilon_counts
        for a in range(steps, 2 * steps + 1):
            error = np.abs(a * kept - steps * big_k * truth).sum() / (steps * big_k * grid * d)
            scaled[k - 1, a - steps] = -error - (a / steps) * theta / epsilon_counts
    return quality, scaled, paper, row_totals, big_k, grid, cell_max


CASES = [(seed, False, 1.0) for seed in range(4)] + [(10, True, 5.0), (11, True, 4.5), (12, True, 0.75)]


@pytest.mark.parametrize("seed,valued,r", CASES)
def test_scores_match_brute_force(seed, valued, r):
    dense = random_data(seed, valued=valued)
    data = dpdesk.from_matrix(dense)
    assert data.binary == (not valued)
    params = {"max_value": r} if valued else {}
    epsilon = 0.7
    steps = 5
    quality, scaled, paper, row_totals, big_k, grid, cell_max = brute_force(
        dense, r if valued else None, steps, 0.9 * epsilon)
    plain = prepared_for("dpsense", data, epsilon, **params)
    with_scaling = prepared_for("dpsense-s", data, epsilon, alpha_steps=steps, selection_share=0.1, **params)
    # exact integers underneath: equal up to the final float conversion
    np.testing.assert_allclose(plain.sampler.scores, quality, rtol=1e-13, atol=1e-12)
    np.testing.assert_allclose(with_scaling.sampler.scores.reshape(scaled.shape), scaled, rtol=1e-13, atol=1e-12)
    # the power-of-two rounding of the weights moves q by less than Σ_long θ·T_i/K /(d·V)
    for k in range(1, data.n_items + 1):
        long = row_totals > k * cell_max
        bound = (k * cell_max * row_totals[long]).sum() / (big_k * grid * data.n_items)
        assert abs(quality[k - 1] - paper[k - 1]) <= bound + 1e-12
    assert plain.sensitivity == pytest.approx(cell_max / grid) and cell_max / grid <= r


def test_every_theta_and_alpha_on_a_larger_random_matrix():
    rng = np.random.default_rng(5)
    lengths = np.minimum(rng.zipf(1.7, 300), 60)
    dense = np.zeros((300, 60))
    for row, length in zip(dense, lengths):
        row[rng.choice(60, length, replace=False)] = 1
    data = dpdesk.from_matrix(dense)
    quality, _, *_ = brute_force(dense, None, 100, 0.9)
    _, scaled, *_ = brute_force(dense, None, 100, 0.7)  # DPSense-S's default: 30% of ε chooses θ and α
    np.testing.assert_allclose(prepared_for("dpsense", data, 1.0).sampler.scores, quality, rtol=1e-13)
    np.testing.assert_allclose(prepared_for("dpsense-s", data, 1.0).sampler.scores.reshape(scaled.shape), scaled,
                               rtol=1e-13, atol=1e-12)


def test_normalized_counts_keep_every_row_within_theta():
    dense = random_data(3, n=60, d=9, valued=True)
    data = dpdesk.from_matrix(dense)
    layout = dpsense.integer_layout(data, 5.0)
    cells = np.minimum(np.floor(dense * layout.value_grid), layout.cell_max).astype(np.int64)
    totals = cells.sum(axis=1)
    for k in (1, 2, 3, 7, 9):
        for grid in (layout.weight_grid, 2**10):
            threshold = k * layout.cell_max
            weights = np.where(totals > threshold, threshold * (grid // np.maximum(totals, 1)), grid)
            assert np.all(weights * totals <= threshold * grid)  # each row sums to at most θ
            np.testing.assert_array_equal(dpsense.normalized_counts(layout, k, grid), weights @ cells)


def test_chosen_theta_follows_the_exponential_mechanism():
    # a small case: 5 items, rows of 1..5 items; chi-square of the chosen θ against the probabilities
    rng = np.random.default_rng(2)
    dense = np.zeros((30, 5))
    for i, row in enumerate(dense):
        row[rng.choice(5, 1 + i % 5, replace=False)] = 1
    data = dpdesk.from_matrix(dense)
    epsilon, runs = 2.0, 3000
    for form, coefficient in (("standard", 0.5), ("one-directional", 1.0)):
        mechanism = dpdesk.mechanisms.get("dpsense")
        params = mechanism.validate(data, epsilon, {"selection_share": 0.5, "selection_form": form})
        prepared = prepare(data, mechanism, epsilon, params)
        source = SeededRandom(np.random.default_rng(9))
        chosen = [mechanism.run(data, prepared, epsilon, params, source).report["selection"]["theta"]
                  for _ in range(runs)]
        counts = np.bincount(np.array(chosen, dtype=int) - 1, minlength=5)
        quality = brute_force(dense, None, 1, 1.0)[0]  # ε_p = 1
        expected = exponential.probabilities(quality, 1.0, 1.0, monotone=form == "one-directional")
        assert np.allclose(expected, np.exp(coefficient * quality) / np.exp(coefficient * quality).sum())
        assert stats.chisquare(counts, expected * runs).pvalue > 1e-6
        other = exponential.probabilities(quality, 1.0, 1.0, monotone=form != "one-directional")
        assert stats.chisquare(counts, other * runs).pvalue < 1e-6  # the test can tell the forms apart


def test_chosen_theta_and_alpha_follow_the_exponential_mechanism():
    dense = random_data(4, n=25, d=3)
    data = dpdesk.from_matrix(dense)
    epsilon, runs, steps = 3.0, 3000, 2
    mechanism = dpdesk.mechanisms.get("dpsense-s")
    params = mechanism.validate(data, epsilon, {"selection_share": 0.5, "alpha_steps": steps})
    prepared = prepare(data, mechanism, epsilon, params)
    source = SeededRandom(np.random.default_rng(4))
    picks = []
    for _ in range(runs):
        selection = mechanism.run(data, prepared, epsilon, params, source).report["selection"]
        picks.append((int(selection["theta"]) - 1) * (steps + 1) + round((selection["alpha"] - 1) * steps))
    counts = np.bincount(picks, minlength=3 * (steps + 1))
    scores = brute_force(dense, None, steps, 1.5)[1].ravel()
    expected = exponential.probabilities(scores, 1.5, 1.0)
    keep = expected * runs > 5
    assert stats.chisquare(counts[keep], expected[keep] / expected[keep].sum() * counts[keep].sum()).pvalue > 1e-6
    wrong = exponential.probabilities(scores, 1.5, 0.5)  # half the sensitivity: too concentrated
    assert stats.chisquare(counts[keep], wrong[keep] / wrong[keep].sum() * counts[keep].sum()).pvalue < 1e-6


def test_dpsense_scores_move_one_way_but_dpsense_s_scores_do_not():
    dense = np.vstack([np.ones((1, 4)), np.eye(4)[:2]])
    shorter = dpdesk.from_matrix(dense)
    longer = dpdesk.from_matrix(np.vstack([dense, [[1, 0, 0, 0]]]))  # one more person, one item
    lift = prepared_for("dpsense", longer, 1.0).sampler.scores - prepared_for("dpsense", shorter, 1.0).sampler.scores
    assert np.all(lift >= 0)  # adding a person never lowers q(θ): the one-directional form is valid
    change = (prepared_for("dpsense-s", longer, 1.0, alpha_steps=4).sampler.scores
              - prepared_for("dpsense-s", shorter, 1.0, alpha_steps=4).sampler.scores)
    assert change.max() > 0 > change.min()  # q_s moves both ways: only the standard form is valid
    assert "selection_form" not in [p.name for p in dpdesk.mechanisms.get("dpsense-s").params]


def test_noise_has_scale_theta_over_epsilon_p():
    # every person holds exactly 2 of 20 items; with ε_p = 0.1 and ε_c = 3 the choice is θ = 2 almost surely
    rng = np.random.default_rng(8)
    dense = np.zeros((2000, 20))
    for row in dense:
        row[rng.choice(20, 2, replace=False)] = 1
    data = dpdesk.from_matrix(dense)
    errors, thetas = [], set()
    for seed in range(300):
        release = dpdesk.release(data, "dpsense", epsilon=3.1, selection_share=3.0 / 3.1, rng=seed)
        thetas.add(release.report["selection"]["theta"])
        errors.append(release.values - data.column_counts)
        grid = release.report["noise_scales"]["grid"]
        assert np.all(release.values / grid == np.round(release.values / grid))  # exact grid values
    assert thetas == {2.0}
    errors = np.concatenate(errors)
    # no row is normalized at θ = 2, so the error is the noise: E|Lap(2/0.1)| = 20
    assert np.mean(np.abs(errors)) == pytest.approx(20.0, rel=0.04)
    assert np.mean(errors) == pytest.approx(0.0, abs=0.8)


def test_release_report_and_diagnostics():
    data = dpdesk.load(DATA / "groceries.csv.gz")
    release = dpdesk.release(data, "dpsense-s", epsilon=math.log(3), rng=1)
    report = release.report
    # DPSense-S's default share for choosing θ and α is 30% (module notes, "How sharply θ is chosen")
    assert [step["epsilon"] for step in report["budget"]] == pytest.approx([0.3 * math.log(3), 0.7 * math.log(3)])
    assert "not needed and not used" in report["public_facts"]["bound Δ"]
    assert report["public_facts"]["number of items (d)"] == data.n_items
    assert report["selection"]["form"].startswith("standard")
    assert report["selection"]["candidates"] == data.n_items * 101
    assert 1.0 <= report["selection"]["alpha"] <= 2.0 and report["selection"]["theta"] in range(1, data.n_items + 1)
    assert "noise scale" in report["expected_error"]["text"]
    assert release.exploration and release.values.min() >= 0
    # no true-data figure in the public report: the longest row (32 items) and the true counts stay internal
    text = json.dumps(report, default=str)
    assert "max_row_count" not in text and "rows_normalized" not in text
    assert str(int(data.column_counts.max())) not in text
    assert release.internal["rows_normalized"] == int((data.row_counts > report["selection"]["theta"]).sum())
    quality = release.diagnostics["quality"]
    assert quality.internal and quality.x and quality.y and quality.caption
    assert quality.data["theta"].shape == quality.data["quality"].shape == (data.n_items,)
    assert quality.data["selection_probability"].sum() == pytest.approx(1.0)
    assert quality.data["chosen_theta"] == report["selection"]["theta"]
    curve = release.diagnostics["expected_mae"]
    assert curve.internal and curve.data["theta"].shape == curve.data["expected_mae"].shape
    assert not release.diagnostics["chosen"].internal
    assert release.diagnostics["chosen"].data == {"theta": report["selection"]["theta"],
                                                  "alpha": report["selection"]["alpha"]}
    plain = dpdesk.release(data, "dpsense", epsilon=math.log(3), selection_form="one-directional", rng=1)
    assert plain.report["selection"]["form"].startswith("one-directional")
    assert "alpha" not in plain.report["selection"]


def test_expected_error_curve_matches_simulation():
    data = dpdesk.load(DATA / "groceries.csv.gz")
    prepared = prepared_for("dpsense", data, 1.0)
    curve = prepared.diagnostics["expected_mae"].data
    layout = prepared.layout
    source = SeededRandom(np.random.default_rng(3))
    for at in (0, 3, len(curve["theta"]) // 2):
        k = int(curve["theta"][at])
        kept = dpsense.normalized_counts(layout, k, layout.weight_grid) / layout.weight_grid
        grid = layout.weight_grid
        noise = discrete_laplace(source, k / 0.9 * grid, 400 * kept.size).reshape(400, -1) / grid
        simulated = np.abs(np.maximum(kept + noise, 0) - data.column_counts).mean()
        assert simulated == pytest.approx(curve["expected_mae"][at], rel=0.03)


def test_prepare_is_cached_and_repeats_only_sample():
    data = dpdesk.from_matrix(random_data(6, n=200, d=30))
    first = dpdesk.release(data, "dpsense-s", epsilon=1.0, rng=1)
    mechanism = dpdesk.mechanisms.get("dpsense-s")
    values = mechanism.validate(data, 1.0, {})
    assert prepare(data, mechanism, 1.0, values) is prepare(data, mechanism, 1.0, values)
    again = dpdesk.release(data, "dpsense-s", epsilon=1.0, rng=1)
    np.testing.assert_array_equal(first.values, again.values)  # same seed, same release
    # the ε-independent tables are shared between ε values
    other = prepare(data, mechanism, 2.0, mechanism.validate(data, 2.0, {}))
    assert other.layout is prepare(data, mechanism, 1.0, values).layout


def test_cancel_stops_preparation():
    data = dpdesk.from_matrix(random_data(7, n=300, d=200))
    token = CancelToken()
    token.cancel()
    mechanism = dpdesk.mechanisms.get("dpsense-s")
    with pytest.raises(Cancelled):
        mechanism.prepare(data, 1.0, mechanism.validate(data, 1.0, {}), no_progress, token)


def test_parameters_and_values():
    valued = dpdesk.from_matrix(random_data(8, valued=True))
    # without a declared r the values are not refused: every non-zero cell counts as 1 (the yes/no view)
    yes_no = dpdesk.release(valued, "dpsense", epsilon=1.0, rng=1)
    assert "counts as 1" in yes_no.report["public_facts"]["cell values"]
    assert yes_no.report["selection"]["quality_sensitivity"] == 1.0
    assert "values_counted_as_one" in yes_no.internal
    assert "values_counted_as_one" not in json.dumps(yes_no.report, default=str)
    structure = dpdesk.from_matrix(random_data(8, valued=True) != 0)
    again = dpdesk.release(structure, "dpsense", epsilon=1.0, rng=1)
    np.testing.assert_array_equal(yes_no.values, again.values)  # the same release as the 0/1 data
    with pytest.raises(ParameterError, match="at most 0.99"):
        dpdesk.release(valued, "dpsense", epsilon=1.0, max_value=5, selection_share=1.0, rng=1)
    with pytest.raises(ParameterError, match="needs no bound Δ and does not use one"):
        dpdesk.release(valued, "dpsense", epsilon=1.0, max_value=5, bound=3, rng=1)
    with pytest.raises(ParameterError, match="too small"):
        dpdesk.release(valued, "dpsense", epsilon=1e-14, max_value=5, rng=1)
    release = dpdesk.release(valued, "dpsense-s", epsilon=1.0, max_value=5, alpha_steps=20, rng=1)
    assert release.report["public_facts"]["declared maximum cell value r"] == 5
    assert release.report["selection"]["quality_sensitivity"] == 5.0
    assert release.report["selection"]["candidates"] == valued.n_items * 21
    described = dpdesk.mechanisms.get("dpsense-s").describe()
    assert [p["name"] for p in described["parameters"]] == ["selection_share", "alpha_steps", "max_value"]
    assert [p["name"] for p in dpdesk.mechanisms.get("dpsense").describe()["parameters"]] == [
        "selection_share", "selection_form", "max_value"]


def test_valued_data_estimates_column_sums(data_dir):
    # groceries with a quantity of 1, 1.5, 2 or 3 per item bought; r = 3 declared
    baskets = dpdesk.load(data_dir / "groceries.csv.gz")
    matrix = baskets.matrix.astype(np.float64)
    matrix.data = np.random.default_rng(0).choice([1.0, 1.5, 2.0, 3.0], size=matrix.nnz)
    quantities = dpdesk.from_matrix(matrix, list(baskets.item_labels))
    flat = np.abs(quantities.column_sums.mean() - quantities.column_sums).mean()  # one average for all
    for mechanism in ("dpsense", "dpsense-s"):
        releases = [dpdesk.release(quantities, mechanism, epsilon=math.log(3), max_value=3, rng=s) for s in range(6)]
        error = np.mean([np.abs(r.values - quantities.column_sums).mean() for r in releases])
        assert error < 0.25 * flat, (mechanism, error, flat)
        assert all(r.report["selection"]["theta"] % 3 == 0 for r in releases)  # Θ = {3, 6, …, 3d}
    # real ratings (0.5 … 5 stars): sensitivity r = 5, values on a quarter-star grid or finer
    ratings = dpdesk.load(data_dir / "ml-latest-small_ratings.csv.gz", value="rating", keep_values=True)
    assert not ratings.binary
    release = dpdesk.release(ratings, "dpsense-s", epsilon=math.log(3), max_value=5, rng=1)
    assert release.report["selection"]["quality_sensitivity"] == 5.0
    assert release.values.shape == (ratings.n_items,) and release.values.min() >= 0


@pytest.mark.parametrize("mechanism,extra,candidates", [("dpsense", [], 169), ("dpsense-s", ["--param", "alpha_steps=50"],
                                                                                    169 * 51)])
def test_cli_release(tmp_path, data_dir, mechanism, extra, candidates):
    out = tmp_path / "out"
    subprocess.run([sys.executable, "-m", "dpdesk.cli", "release", str(data_dir / "groceries.csv.gz"),
                    "--mechanism", mechanism, "--epsilon", "1.0", *extra, "--out", str(out),
                    "--items", "from-data", "--items-are-public"],
                   check=True, capture_output=True, text=True)
    published = json.loads((out / "release.json").read_text())
    assert published["mechanism"]["id"] == mechanism
    assert published["selection"]["candidates"] == candidates
    assert len(published["values"]) == 169 and published["mode"] == "release"


# --- privacy audit -------------------------------------------------------------------------------

class DPSenseTenthSensitivity(DPSense):
    """Planted bug: quality computed as if its sensitivity were a tenth of the true one."""

    id = "dpsense-tenth-sensitivity"

    def quality_sensitivity(self, layout):
        return super().quality_sensitivity(layout) / 10


class DPSenseSTenthSensitivity(DPSenseS):
    id = "dpsense-s-tenth-sensitivity"

    def quality_sensitivity(self, layout):
        return super().quality_sensitivity(layout) / 10


def published_sampler(mechanism, epsilon, **params):
    """Everything a release publishes: the counts and the chosen θ and α."""

    def sample(data, generator, n):
        values = mechanism.validate(data, epsilon, params)
        prepared = prepare(data, mechanism, epsilon, values)
        source = SeededRandom(generator)
        outputs = []
        for _ in range(n):
            release = mechanism.run(data, prepared, epsilon, values, source)
            selection = release.report["selection"]
            outputs.append(np.concatenate([release.values, [selection["theta"], selection.get("alpha", 1.0)]]))
        return np.array(outputs)

    return sample


def features(out):
    theta, alpha, counts = out[:, -2], out[:, -1], out[:, :-2]
    return np.column_stack([theta, alpha, theta * 10 + alpha, counts.sum(axis=1), counts[:, 0]])


def neighbours():
    # 20 people hold all 4 items: with ε_p = 0.2, q(θ) = 5θ − θ/ε_p is flat, and one more such
    # person tilts every score by θ/4: the selection step carries the privacy loss
    everyone = np.ones((20, 4))
    return dpdesk.from_matrix(np.vstack([everyone, np.ones((1, 4))])), dpdesk.from_matrix(everyone)


EPS = 1.0
AUDIT = {"selection_share": 0.8}


@pytest.mark.parametrize("mechanism,params", [(DPSense(), {}), (DPSenseS(), {"alpha_steps": 1})])
def test_audit_stays_below_claim(mechanism, params):
    first, second = neighbours()
    result = audit(published_sampler(mechanism, EPS, **AUDIT, **params), first, second, runs=1500,
                   features=features, seed=5)
    assert result.epsilon_lower <= EPS, str(result)


@pytest.mark.parametrize("mechanism,params", [(DPSenseTenthSensitivity(), {}),
                                              (DPSenseSTenthSensitivity(), {"alpha_steps": 1})])
def test_audit_catches_a_tenth_of_the_sensitivity(mechanism, params):
    # the buggy selection picks θ = 1 with probability 1/4 on the first dataset and about 0.03 on
    # the second (θ = 1, α = 1 for DPSense-S: 1/6 against 0.02): a privacy loss near 2 > ε
    first, second = neighbours()
    result = audit(published_sampler(mechanism, EPS, **AUDIT, **params), first, second, runs=1500,
                   features=features, seed=3)
    assert result.epsilon_lower > EPS, str(result)


@pytest.mark.slow
@pytest.mark.parametrize("mechanism,params", [(DPSense(), {}), (DPSense(), {"selection_form": "one-directional"}),
                                              (DPSenseS(), {"alpha_steps": 1}), (DPSenseS(), {"alpha_steps": 4})])
def test_audit_long(mechanism, params):
    first, second = neighbours()
    result = audit(published_sampler(mechanism, EPS, **AUDIT, **params), first, second, runs=20_000,
                   features=features, seed=13)
    assert result.epsilon_lower <= EPS, str(result)


# --- real data -----------------------------------------------------------------------------------

def mean_mae(data, mechanism, epsilon, repeats, **params):
    return np.mean([np.abs(dpdesk.release(data, mechanism, epsilon=epsilon, rng=seed, **params).values
                           - data.column_counts).mean() for seed in range(repeats)])


def test_real_data_beats_lpa_with_the_observed_maximum():
    retail = dpdesk.load(DATA / "retail.dat.gz")
    assert int(retail.row_counts.max()) == 76  # what the GS paper declared as Δ (not private; a baseline here)
    for epsilon in (math.log(1.5), math.log(3)):
        lpa = mean_mae(retail, "lpa", epsilon, 8, bound=76)
        plain = mean_mae(retail, "dpsense", epsilon, 8)
        scaled = mean_mae(retail, "dpsense-s", epsilon, 8)
        assert plain < 0.5 * lpa and scaled < 0.5 * lpa, (epsilon, lpa, plain, scaled)


def test_scaling_corrects_the_under_estimate_on_real_data():
    # DPSense only lowers counts (normalization); DPSense-S scales them back up by α*. With the paper's
    # 10% for selection, α* is nearly uniform on these small datasets (the scores differ by less than
    # 2/ε_c across α); with half of ε for selection the correction shows clearly (see the report)
    groceries = dpdesk.load(DATA / "groceries.csv.gz")
    epsilon, share = math.log(1.5), 0.5
    signed = np.mean([dpdesk.release(groceries, "dpsense", epsilon=epsilon, selection_share=share, rng=s).values
                      - groceries.column_counts for s in range(10)])
    assert signed < 0  # under-estimate
    plain = mean_mae(groceries, "dpsense", epsilon, 60, selection_share=share)
    scaled = mean_mae(groceries, "dpsense-s", epsilon, 60, selection_share=share)
    assert scaled < 0.9 * plain, (plain, scaled)


@pytest.mark.parametrize("epsilon", [0.1, math.log(2)])
def test_dpsense_s_choice_of_theta_is_stable_over_seeds(epsilon):
    """Issue 29: with the paper's 10% of ε for the choice, θ* wandered over 1–73 and the published MAE over
    seeds by up to 47× (bench_dpsense.py --stability). With dpdesk's 30% the MAE of 12 seeded releases on
    Groceries stays within 3× of its smallest; with 10% it does not (4.2× at ε = 0.1, 9.2× at ln 2)."""
    from dpdesk.mechanisms.publish import publish

    data = dpdesk.load(DATA / "groceries.csv.gz")

    def spread(**params):
        errors = [np.abs(publish(dpdesk.release(data, "dpsense-s", epsilon=epsilon, rng=seed, **params)).values
                         - data.column_counts).mean() for seed in range(12)]
        return max(errors) / min(errors)

    assert spread() <= 3.0
    assert spread(selection_share=0.1) > 3.0  # the paper's share: the test can fail
