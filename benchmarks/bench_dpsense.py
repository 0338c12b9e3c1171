"""DPSense / DPSense-S at kosarak scale, against the naive per-θ recomputation.

Synthetic data shaped like kosarak (DPSense Table 2): 990,002 people, 41,270 items,
about 8 million non-zeros, heavy-tailed rows up to 2,497 items, popular items Zipf-like.

Prints, from one run:

* load time (building the dataset object) and, on fresh caches, dpsense prepare + first
  release, dpsense-s prepare + first release, and the mean of further releases;
* the same mechanisms' score computation against the naive one (normalize the whole
  dataset for every θ, and for DPSense-S evaluate every α over every column) on a smaller
  dataset, as a ratio, and that naive cost extrapolated to kosarak size.

Targets (issue 5): dpsense-s including preparation < 15 s; each further repeat < 0.2 s;
dpsense < 1 s after loading.

    python benchmarks/bench_dpsense.py            # kosarak size
    python benchmarks/bench_dpsense.py --scale 0.1
    python benchmarks/bench_dpsense.py --utility  # MAE / MRE / top-k on the real datasets
    python benchmarks/bench_dpsense.py --stability  # DPSense-S's choice of θ over seeds (issue 29)

``--stability`` runs dpsense-s on the 7 real datasets at ε ∈ {0.1, ln 2, 1, 2} with 12 seeds for
each selection share in ``--shares`` (default 0.1, the paper's, and 0.3, dpdesk's default since
issue 29) and prints the chosen θ (smallest, median, largest) and α, the published MAE (mean,
smallest, largest) and the spread (largest over smallest MAE): why θ wanders is in
dpdesk/mechanisms/dpsense.py, "How sharply θ is chosen".
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

import dpdesk
from dpdesk.data.dataset import Dataset
from dpdesk.mechanisms import dpsense
from dpdesk.tasks import no_progress

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"


def kosarak_like(seed: int = 0, rows: int = 990_002, items: int = 41_270, longest: int = 2_497) -> Dataset:
    """Heavy-tailed click-stream-like incidence data (about 8.1 non-zeros per row on average)."""
    rng = np.random.default_rng(seed)
    lengths = np.minimum(np.floor(rng.pareto(1.6, rows) * 5.0 + 1).astype(np.int64), longest)
    lengths[0] = longest
    popularity = 1.0 / (np.arange(items) + 8.0) ** 1.05
    cdf = np.cumsum(popularity)
    cdf /= cdf[-1]
    total = int(lengths.sum())
    columns = np.searchsorted(cdf, rng.random(total), side="right")
    columns[:longest] = rng.choice(items, longest, replace=False)  # one row of exactly `longest` items
    matrix = sp.csr_matrix((np.ones(total, np.uint8), (np.repeat(np.arange(rows), lengths), columns)),
                           shape=(rows, items))
    matrix.sum_duplicates()  # repeated clicks count once
    matrix.data[:] = 1
    return Dataset(matrix, np.array([str(j) for j in range(items)], dtype=object), name="kosarak-like")


def naive_scores(data: Dataset, epsilon_counts: float, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """q(θ) and q_s(θ, α) by normalizing the whole dataset for every θ (the paper's loops, Alg. 1–2)."""
    rows = data.row_counts.astype(np.float64)
    truth = data.column_counts.astype(np.float64)
    transposed = data.matrix.T.tocsr().astype(np.float64)
    alphas = np.arange(steps, 2 * steps + 1) / steps
    d = data.n_items
    quality = np.empty(d)
    scaled_quality = np.empty((d, alphas.size))
    for theta in range(1, d + 1):
        weights = np.minimum(1.0, theta / np.maximum(rows, 1))
        normalized = transposed @ weights
        quality[theta - 1] = normalized.mean() - theta / epsilon_counts
        for a, alpha in enumerate(alphas):
            scaled_quality[theta - 1, a] = -np.abs(alpha * normalized - truth).mean() - alpha * theta / epsilon_counts
    return quality, scaled_quality


def fast_scores(data: Dataset, steps: int) -> None:
    layout = dpsense.integer_layout(data, None)  # yes/no data: no declared r
    dpsense.average_kept(layout)
    dpsense.scaled_error_table(layout, steps, no_progress, None)


def timed(function, *args, **kwargs):
    start = time.perf_counter()
    result = function(*args, **kwargs)
    return time.perf_counter() - start, result


def bench_scale(scale: float, repeats: int) -> None:
    dpdesk.mechanisms()  # import every mechanism module now, not inside the first timing
    rows, items = int(990_002 * scale), int(41_270 * scale)
    longest = min(2_497, items)
    load, data = timed(kosarak_like, 0, rows, items, longest)
    print(f"data: {data.n_rows:,} rows × {data.n_items:,} items, {data.nnz:,} non-zeros, "
          f"longest row {int(data.row_counts.max()):,}; built in {load:.2f} s")
    epsilon = math.log(3)
    first, release = timed(dpdesk.release, data, "dpsense", epsilon=epsilon, rng=1)
    print(f"dpsense   prepare + first release: {first:6.2f} s  (target < 1 s)   θ* = {release.report['selection']['theta']:g}")
    times = [timed(dpdesk.release, data, "dpsense", epsilon=epsilon, rng=s)[0] for s in range(2, 2 + repeats)]
    print(f"dpsense   further release (mean of {repeats}): {np.mean(times):6.3f} s")
    dpsense._TABLES.clear()  # dpsense-s from scratch: no layout shared with the run above
    first, release = timed(dpdesk.release, data, "dpsense-s", epsilon=epsilon, rng=1)
    selection = release.report["selection"]
    print(f"dpsense-s prepare + first release: {first:6.2f} s  (target < 15 s)  "
          f"θ* = {selection['theta']:g}, α* = {selection['alpha']:g}, {selection['candidates']:,} candidates")
    times = [timed(dpdesk.release, data, "dpsense-s", epsilon=epsilon, rng=s)[0] for s in range(2, 2 + repeats)]
    print(f"dpsense-s further release (mean of {repeats}, max {np.max(times):.3f}): {np.mean(times):6.3f} s"
          "  (target < 0.2 s)")
    print(f"ratios: dpsense-s first / load = {first / load:.2f}; further release / load = {np.mean(times) / load:.3f}")


def bench_naive(repeats: int = 1) -> None:
    small = kosarak_like(1, 40_000, 1_600, 400)
    steps = 100
    fast = min(timed(fast_scores, small, steps)[0] for _ in range(repeats))
    naive, (quality, scaled_quality) = timed(naive_scores, small, 0.9 * math.log(3), steps)
    print(f"naive per-θ scores on {small.n_rows:,} × {small.n_items:,} ({small.nnz:,} non-zeros): {naive:.2f} s; "
          f"sweep: {fast:.3f} s; naive / sweep = {naive / fast:.0f}×")
    # the naive cost grows like d·(nnz + |A|·d); extrapolate to kosarak size
    per_unit = naive / (small.n_items * (small.nnz + (steps + 1) * small.n_items))
    kosarak = per_unit * 41_270 * (8_019_015 + (steps + 1) * 41_270)
    print(f"naive extrapolated to kosarak size: {kosarak / 3600:.1f} hours")
    # sanity: the sweep's scores are the naive ones up to the power-of-two rounding of the weights
    mechanism = dpdesk.mechanisms.get("dpsense-s")
    params = mechanism.validate(small, math.log(3), {})
    prepared = mechanism.prepare(small, math.log(3), params, no_progress, None)
    gap = np.max(np.abs(prepared.sampler.scores.reshape(scaled_quality.shape) - scaled_quality))
    print(f"largest score difference sweep vs naive: {gap:.2e} (weights rounded down to 1/{prepared.layout.weight_grid})")


def bench_utility(repeats: int, share: float) -> None:
    """MAE, MRE and top-k accuracy on the real datasets (seeded; internal numbers)."""
    from dpdesk.evaluation.metrics import count_metrics

    cases = [("retail.dat.gz", {"lpa": {"bound": 76}}), ("mushroom.dat.gz", {}), ("chess.dat.gz", {}),
             ("groceries.csv.gz", {}), ("ml-latest-small_ratings.csv.gz", {}),
             ("hetrec2011-lastfm-2k_user_artists.dat.gz", {})]
    for epsilon in (math.log(1.5), math.log(3)):
        print(f"\nε = {epsilon:.3f}, {share:.0%} of ε for selection   "
              f"(mean over {repeats} seeded repeats; top-k with k = 100, or d/10 if smaller)")
        print(f"{'dataset':42s} {'mechanism':22s} {'MAE':>10s} {'± s.e.':>7s} {'MRE':>8s} {'top-k acc':>9s}")
        for name, extra in cases:
            data = dpdesk.load(DATA / name)
            k = min(100, max(1, data.n_items // 10))
            split = {"selection_share": share}
            runs = [("dpsense", split), ("dpsense-s", split)] + [(m, p) for m, p in extra.items()]
            for mechanism, params in runs:
                metrics = [count_metrics(dpdesk.release(data, mechanism, epsilon=epsilon, rng=seed, **params).values,
                                         data.column_counts, n_rows=data.n_rows, k=k) for seed in range(repeats)]
                label = mechanism + (f" Δ={params['bound']}" if "bound" in params else "")
                mae = np.array([m["mae"] for m in metrics])
                print(f"{name:42s} {label:22s} {mae.mean():10.3f} {mae.std(ddof=1) / math.sqrt(repeats):7.3f} "
                      f"{np.mean([m['mre'] for m in metrics]):8.4f} {np.mean([m['topk_accuracy'] for m in metrics]):9.3f}")


STABILITY_DATA = ("retail.dat.gz", "mushroom.dat.gz", "chess.dat.gz", "adult.data.gz",
                  "ml-latest-small_ratings.csv.gz", "groceries.csv.gz", "hetrec2011-lastfm-2k_user_artists.dat.gz")


def bench_stability(repeats: int, shares) -> None:
    """DPSense-S's θ, α and published MAE over seeds, for each selection share (true data: internal)."""
    from dpdesk.mechanisms.publish import publish

    print(f"dpsense-s over {repeats} seeds: θ* smallest/median/largest, α* range, published MAE mean "
          "[smallest, largest], spread = largest/smallest MAE")
    print(f"{'dataset':42s} {'ε':>5s} {'share':>5s} {'θ*':>14s} {'α*':>10s} {'MAE':>24s} {'spread':>6s}")
    totals = {share: [] for share in shares}
    for name in STABILITY_DATA:
        data = dpdesk.load(DATA / name)
        truth = data.column_counts
        for epsilon in (0.1, math.log(2), 1.0, 2.0):
            for share in shares:
                thetas, alphas, errors = [], [], []
                for seed in range(repeats):
                    release = dpdesk.release(data, "dpsense-s", epsilon=epsilon, rng=seed, selection_share=share)
                    thetas.append(release.report["selection"]["theta"])
                    alphas.append(release.report["selection"]["alpha"])
                    errors.append(float(np.abs(publish(release).values - truth).mean()))
                errors = np.array(errors)
                spread = errors.max() / errors.min()
                totals[share].append((errors.mean(), spread))
                print(f"{name:42s} {epsilon:5.3g} {share:5.2f} {min(thetas):4g}/{np.median(thetas):4g}/"
                      f"{max(thetas):4g} {min(alphas):4.2f}–{max(alphas):4.2f} {errors.mean():9.2f} "
                      f"[{errors.min():6.2f}, {errors.max():6.2f}] {spread:6.2f}")
    for share, rows in totals.items():
        means, spreads = np.array(rows).T
        print(f"share {share:.2f}: largest spread {spreads.max():.2f}, median spread {np.median(spreads):.2f}; "
              f"mean MAE relative to share {shares[0]:.2f}: geometric mean "
              f"{math.exp(np.mean(np.log(means / np.array(totals[shares[0]])[:, 0]))):.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of kosarak's rows and items")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--utility", action="store_true", help="MAE/MRE/top-k on the real datasets instead")
    parser.add_argument("--selection-share", type=float, default=0.1, help="with --utility: DPSense's ε_c share")
    parser.add_argument("--stability", action="store_true", help="dpsense-s's θ and MAE over seeds instead")
    parser.add_argument("--shares", default="0.1,0.3", help="with --stability: the selection shares compared")
    args = parser.parse_args()
    if args.stability:
        bench_stability(12 if args.repeats == 10 else args.repeats, [float(s) for s in args.shares.split(",")])
        return
    if args.utility:
        bench_utility(args.repeats, args.selection_share)
        return
    bench_scale(args.scale, args.repeats)
    bench_naive()


if __name__ == "__main__":
    main()
