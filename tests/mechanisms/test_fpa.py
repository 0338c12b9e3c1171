"""FPA: the derived sensitivity against every neighbour of small inputs, the noise formula, the
privacy audit (with a planted too-small sensitivity), the non-private oracle, real data."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import dpdesk
from dpdesk.errors import ParameterError
from dpdesk.mechanisms import fpa
from dpdesk.mechanisms.gs import plot_sizes
from dpdesk.privacy.noise import grid_scale
from tests.audit import audit, release_sampler, run_sampler
from tests.conftest import DATA
from tests.mechanisms.test_gs import incidence, single_items


def coordinate_change(delta: np.ndarray, rho: int) -> float:
    """L1 change of the released real coordinates when the counts change by ``delta``."""
    return float(np.abs(fpa.pack(np.fft.rfft(delta)[:rho], delta.size)).sum())


def test_pack_and_unpack_are_inverse():
    rng = np.random.default_rng(1)
    for d in range(1, 14):
        spectrum = np.fft.rfft(rng.integers(0, 50, d).astype(float))
        for rho in range(1, d // 2 + 2):
            real_only, complex_count = fpa.kept_slots(d, rho)
            coordinates = fpa.pack(spectrum[:rho], d)
            assert coordinates.size == real_only + 2 * complex_count
            back = fpa.unpack(coordinates, d, rho)
            assert np.allclose(back.real, spectrum[:rho].real)
            # the real-only coefficients (F_0, F_{d/2}) have no imaginary part to release
            assert np.allclose(back[1:1 + complex_count].imag, spectrum[1:1 + complex_count].imag)
    with pytest.raises(ValueError):
        fpa.kept_slots(10, 7)


def test_sensitivity_bounds_every_neighbour_of_small_inputs():
    """max over all persons (any ≤ Δ items) of the L1 change, against min(T, P), exhaustively."""
    for d in range(1, 11):
        for bound in (1, 2, 3, d):
            for rho in range(1, d // 2 + 2):
                worst = 0.0
                for size in range(1, min(bound, d) + 1):
                    for items in itertools.combinations(range(d), size):
                        delta = np.zeros(d)
                        delta[list(items)] = 1.0
                        worst = max(worst, coordinate_change(delta, rho))
                claimed = fpa.fpa_sensitivity(d, rho, bound)
                assert worst <= claimed * (1 + 1e-12), (d, bound, rho, worst, claimed)
                # the paper's Theorem 2 value is valid too, and Appendix A's is larger by √Δ
                effective = min(bound, d)
                assert worst <= math.sqrt(rho * d * effective) * (1 + 1e-12)
                assert math.sqrt(rho * d) * effective >= claimed * (1 - 1e-12)


def test_sensitivity_is_attained():
    """d = 8, ρ = 2, Δ = 1, item 1: F_0 moves by 1 and F_1 by e^{−iπ/4}: 1 + √2 exactly."""
    delta = np.zeros(8)
    delta[1] = 1
    assert coordinate_change(delta, 2) == pytest.approx(1 + math.sqrt(2), rel=1e-12)
    assert fpa.fpa_sensitivity(8, 2, 1) == pytest.approx(1 + math.sqrt(2), rel=1e-12)
    # where Parseval is smaller (many coefficients of few items) it is the one used
    assert fpa.fpa_sensitivity(4, 3, 4) == pytest.approx(math.sqrt(3 * 4 * 4))


def test_reconstruction_and_error_curve():
    rng = np.random.default_rng(2)
    for d in (1, 2, 7, 16, 33):
        counts = rng.integers(0, 100, d).astype(float)
        spectrum = np.fft.rfft(counts)
        assert np.allclose(fpa.reconstruct(spectrum, d), counts)
        curve = fpa.error_curve(counts, 3, 1.0)
        for rho in range(1, d // 2 + 2):
            direct = np.sqrt(np.mean((fpa.reconstruct(spectrum[:rho], d) - counts) ** 2))
            assert curve["reconstruction_rmse"][rho - 1] == pytest.approx(direct, abs=1e-6 * (1 + counts.max()))
        absolute = fpa.mae_curve(counts.astype(np.int64), np.arange(1, d // 2 + 2), 3, 1.0)
        assert np.all(absolute["expected_mae"] >= absolute["reconstruction_mae"] - 1e-9)
        assert absolute["reconstruction_mae"][-1] == pytest.approx(0, abs=1e-9)


@pytest.mark.parametrize("d,rho", [(50, 1), (50, 6), (50, 26), (51, 26)])
def test_noise_on_each_count_has_the_public_variance(d, rho):
    """Empirical RMS of (release − exact reconstruction) against b·√(2(R + 4K))/d (Nyquist case too)."""
    rng = np.random.default_rng(3)
    data = incidence([list(rng.choice(d, size=3, replace=False)) for _ in range(400)], d)
    exact = fpa.reconstruct(np.fft.rfft(data.column_counts.astype(float))[:rho], d)
    epsilon, releases = 1.0, 1000
    deviations = np.stack([dpdesk.release(data, "fpa", epsilon=epsilon, bound=3, rho=rho, rng=seed,
                                          diagnostics=False).values - exact for seed in range(releases)])
    real_only, complex_count = fpa.kept_slots(d, rho)
    coordinates = real_only + 2 * complex_count
    _, scale = grid_scale(fpa.fpa_sensitivity(d, rho, 3), epsilon, coordinates)
    expected = fpa.noise_rms(d, rho, scale)
    # relative standard error of an RMS of Laplace draws: ½·√(Var X²)/E X² / √n = ½·√5/√n
    tolerance = 5 * 0.5 * math.sqrt(5) / math.sqrt(releases * coordinates)
    assert np.sqrt(np.mean(deviations ** 2)) == pytest.approx(expected, rel=tolerance)


def test_release_report_and_checks():
    rng = np.random.default_rng(4)
    data = incidence([list(rng.choice(40, size=int(rng.integers(1, 9)), replace=False)) for _ in range(500)], 40)
    release = dpdesk.release(data, "fpa", epsilon=0.5, bound=4, rho=5, rng=1)
    assert release.budget_split[0]["epsilon"] == 0.5 and len(release.budget_split) == 1
    assert release.report["noise"]["sensitivity"] == pytest.approx(fpa.fpa_sensitivity(40, 5, 4))
    assert release.report["expected_error"]["noise_rms_per_count"] > 0
    assert release.diagnostics["reconstruction"].internal
    assert "reconstruction_mae" in release.internal and "reconstruction_mae" not in repr(release.report)
    assert release.report["noise"]["transform"].startswith("exact integer sums")
    with pytest.raises(ParameterError, match="too large"):
        dpdesk.release(data, "fpa", epsilon=0.5, bound=4, rho=22, rng=1)
    assert dpdesk.release(data, "fpa", epsilon=0.5, bound=4, rho=21, rng=1).values.size == 40
    # little noise (RMS ≈ 0.09 per count) and every coefficient kept: the counts come back
    counts = rng.integers(0, 60, 40)
    exact = dpdesk.release(single_items(counts), "fpa", epsilon=100, bound=1, rho=21, rng=1)
    assert np.abs(exact.values - counts).max() < 0.5


def brute_force_coefficients(counts, rho):
    """Σ_n c_n·C_kn with Python integers, straight from the definition of the public weights."""
    d = len(counts)
    cos_table, sin_table = fpa.weight_tables(d)
    real = [sum(int(c) * int(cos_table[(k * n) % d]) for n, c in enumerate(counts)) for k in range(rho)]
    imaginary = [sum(int(c) * int(sin_table[(k * n) % d]) for n, c in enumerate(counts)) for k in range(rho)]
    return real, imaginary


@pytest.mark.parametrize("largest", [60, 2**25, 2**39])
def test_exact_coefficients_are_exact_for_any_total(monkeypatch, largest):
    """Every evaluation path (one float pass, 16-bit limbs, Python-integer sums) gives the same
    integers as the definition, up to counts of 2^39 (totals far beyond what fits in memory)."""
    rng = np.random.default_rng(largest % 1000)
    d, rho = 37, 9
    counts = rng.integers(0, largest, d)
    counts[3] = largest  # the largest count, to exercise every limb
    expected = brute_force_coefficients(counts, rho)
    for single_pass, wide in ((fpa.SINGLE_PASS_TOTAL, fpa.WIDE_SUM), (0, fpa.WIDE_SUM), (0, 0)):
        monkeypatch.setattr(fpa, "SINGLE_PASS_TOTAL", single_pass)
        monkeypatch.setattr(fpa, "WIDE_SUM", wide)
        monkeypatch.setattr(fpa, "_ITEM_BLOCK", 8)  # several blocks of items
        monkeypatch.setattr(fpa, "_BLOCK_CELLS", 24)  # and of coefficients
        real, imaginary = fpa.exact_coefficients(counts, rho)
        assert [int(x) for x in real] == expected[0] and [int(x) for x in imaginary] == expected[1]
    # the weights are within 2⁻²⁵ (plus the float cosine's error) of the true cosines and sines
    cos_table, sin_table = fpa.weight_tables(d)
    angle = 2 * np.pi * np.arange(d) / d
    assert np.abs(cos_table / 2**24 - np.cos(angle)).max() <= fpa.WEIGHT_ERROR
    assert np.abs(sin_table / 2**24 + np.sin(angle)).max() <= fpa.WEIGHT_ERROR


def test_grid_units_round_exactly():
    from fractions import Fraction

    values = np.array([0, 1, -1, 2**23, -(2**23), 3 * 2**22, -(3 * 2**22), 2**70 + 12345, -(2**70) - 1], dtype=object)
    for gamma in (2.0**-30, 2.0**-24, 2.0**-3, 1.0, 4.0):
        units = fpa.grid_units(values, gamma)
        for x, u in zip(values, units):
            exact = Fraction(int(x), 2**24) / Fraction(gamma)
            assert abs(Fraction(int(u)) - exact) <= Fraction(1, 2)  # moved by at most half a grid step
    with pytest.raises(ValueError):
        fpa.grid_units(values, 0.3)


def test_oracle_is_never_releasable(dpdesk_home, tmp_path):
    from dpdesk.workflow import release_to_files

    rng = np.random.default_rng(5)
    data = incidence([list(rng.choice(60, size=4, replace=False)) for _ in range(300)], 60)
    assert not dpdesk.mechanisms.get("fpa-oracle").releasable
    with pytest.raises(ParameterError, match="non-private"):
        dpdesk.release(data, "fpa-oracle", epsilon=1.0, bound=4)
    with pytest.raises(ParameterError, match="non-private"):
        release_to_files(data, "fpa-oracle", 1.0, {"bound": 4}, tmp_path / "out")
    release = dpdesk.release(data, "fpa-oracle", epsilon=1.0, bound=4, rng=1)
    assert release.exploration and "NOT PRIVATE" in release.report["notes"][0]
    candidates = plot_sizes(31, fpa.ORACLE_CANDIDATES)
    assert release.internal["kept_coefficients"] in candidates


# --- privacy audit ------------------------------------------------------------------------------

class HalfSensitivityFPA(fpa.FPA):
    """PLANTED BUG: half the derived sensitivity, so half the noise (really 2ε)."""

    def sensitivity(self, d, rho, bound):
        return super().sensitivity(d, rho, bound) / 2


BASE = [5, 3, 7, 2, 4, 6, 1, 3]  # d = 8; the extra person holds item 1 (the case where T is attained)


def coefficient_features(first, second, rho, epsilon, bound):
    """Recovered noisy coordinates and their exact Laplace log-likelihood ratio (the best test)."""
    d = first.n_items
    mean_first = fpa.pack(np.fft.rfft(first.column_counts.astype(float))[:rho], d)
    mean_second = fpa.pack(np.fft.rfft(second.column_counts.astype(float))[:rho], d)
    _, scale = grid_scale(fpa.fpa_sensitivity(d, rho, bound), epsilon, mean_first.size)

    def features(values):
        coordinates = np.stack([fpa.pack(np.fft.rfft(v)[:rho], d) for v in np.asarray(values)])
        ratio = (np.abs(coordinates - mean_second) - np.abs(coordinates - mean_first)).sum(axis=1) / scale
        return np.column_stack([ratio, coordinates])

    return features


def fpa_audit(sampler, runs, seed):
    first, second = single_items(BASE), single_items(BASE, [[1]])
    features = coefficient_features(first, second, 2, 1.0, 1)
    return audit(sampler, first, second, runs=runs, features=features, seed=seed)


def test_audit_fpa():
    result = fpa_audit(release_sampler("fpa", epsilon=1.0, bound=1, rho=2, diagnostics=False), 1500, 51)
    print(result)
    assert result.epsilon_lower <= 1.0, str(result)


def test_planted_bug_half_sensitivity_is_caught():
    result = fpa_audit(run_sampler(HalfSensitivityFPA(), 1.0, bound=1, rho=2, diagnostics=False), 2500, 52)
    print(result)
    assert result.epsilon_lower > 1.0, str(result)


@pytest.mark.slow
def test_audit_fpa_full_strength():
    result = fpa_audit(release_sampler("fpa", epsilon=1.0, bound=1, rho=2, diagnostics=False), 40000, 53)
    print(result)
    assert result.epsilon_lower <= 1.0, str(result)


# --- real data: GS beats FPA (GS §5, Fig. 9), even FPA with the best ρ --------------------------

def test_gs_beats_fpa_on_retail():
    data = dpdesk.load(DATA / "retail.dat.gz")
    truth = data.column_counts
    epsilon, bound = math.log(2), 30

    def mae(mechanism, **params):
        return np.mean([np.abs(dpdesk.release(data, mechanism, epsilon=epsilon, bound=bound, rng=seed,
                                              diagnostics=False, **params).values - truth).mean()
                        for seed in range(3)])

    gs_mae, fpa_mae, oracle_mae = mae("gs"), mae("fpa", rho=20), mae("fpa-oracle")
    print(f"retail Δ=30 ε=ln 2: GS {gs_mae:.2f}, FPA(ρ=20) {fpa_mae:.2f}, FPA oracle {oracle_mae:.2f}")
    assert gs_mae < 0.8 * min(fpa_mae, oracle_mae)
