"""Sparse-domain summaries (Cormode et al.): scale, speed against the laborious approach, real data.

Sections (all by default; pick with --only):

* ``huge`` — m = 10^12 cells, n = 10^6 non-zeros: ``filter``, ``threshold`` and ``priority``
  with an output of about n cells; target < 5 s each, peak memory (tracemalloc, which sees
  numpy buffers) proportional to n plus the output, never m (the laborious table would be
  16 TB);
* ``speedup`` — m = 10^7, density 0.01: every shortcut against ``geometric`` (noise on all m
  cells), ratio of times measured in the same run; target ≥ 100x;
* ``throughput`` — non-zeros processed per second by each method at densities 10^-1, 10^-2,
  10^-3 with m fixed and the output size s = n (the paper's Fig. 4);
* ``adult`` — UCI Adult (7 categorical attributes, m = 907,200 cells), ε = 0.1 and 1: summary
  size and range/subset-query errors of every method against ``geometric`` (mean of repeats;
  these use the true data: internal figures).

Timings use a seeded generator (exploration mode) so that they measure the algorithms, not
the operating system's random source; ``--secure`` times the huge section with os.urandom.
Data values follow the paper's synthetic setup: non-zero counts N(100, 20²) rounded, ≥ 1,
placed uniformly; ε = 0.1 unless stated.

Run: python benchmarks/bench_sparse.py [--only huge,speedup,throughput,adult] [--repeats 5]
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from pathlib import Path

import numpy as np

import dpdesk
from dpdesk.api import prepare, validate
from dpdesk.evaluation.summaries import evaluate_summary
from dpdesk.privacy.randomness import SecureRandom, SeededRandom

ADULT = Path(__file__).resolve().parent.parent / "tests" / "data" / "adult.data.gz"
ADULT_ATTRIBUTES = [1, 3, 5, 6, 7, 8, 9]  # workclass, education, marital status, occupation, relationship, race, sex


def synthetic(m: int, n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    if n * 20 < m:  # distinct uniform cells without materializing the domain
        indices = np.unique(rng.integers(0, m, size=int(n * 1.01) + 100))
        indices = np.sort(rng.choice(indices, size=n, replace=False))
    else:
        indices = np.sort(rng.choice(m, size=n, replace=False))
    counts = np.maximum(1, np.round(rng.normal(100, 20, size=n))).astype(np.int64)
    return dpdesk.from_cells(indices, counts, m)


def settings_for(method: str, data, size: int) -> dict:
    """Each method at an output of about ``size`` cells (declared n and ‖M‖₁: benchmark data are public)."""
    facts = {"nonzeros": data.n_cells, "total": data.total}
    return {
        "geometric": {},
        "filter": {"target_size": size, "nonzeros": facts["nonzeros"]},
        "filter2": {"target_size": size, "nonzeros": facts["nonzeros"]},
        "threshold": {"target_size": size, **facts},
        "priority": {"size": size},
        "filter-threshold": {"threshold": 40, "target_size": size, **facts},
        "filter-priority": {"threshold": 40, "size": size},
    }[method]


def timed(data, method: str, params: dict, epsilon: float, source, repeats: int = 1):
    """Best time of ``mechanism.run`` (prepare done once, as a comparison would) and the release."""
    mechanism, eps, values = validate(data, method, epsilon, params)
    prepared = prepare(data, mechanism, eps, values)
    best, release = float("inf"), None
    for _ in range(repeats):
        started = time.perf_counter()
        release = mechanism.run(data, prepared, eps, values, source)
        best = min(best, time.perf_counter() - started)
    return best, release


def peak_memory(data, method: str, params: dict, epsilon: float, source) -> int:
    tracemalloc.start()
    timed(data, method, params, epsilon, source)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def section_huge(args) -> None:
    m, n = 10**12, 10**6
    started = time.perf_counter()
    data = synthetic(m, n, seed=1)
    made = time.perf_counter() - started
    source = SecureRandom() if args.secure else SeededRandom(np.random.default_rng(1))
    print(f"\n## m = 10^12 cells, n = 10^6 non-zeros, ε = 0.1, output ≈ n "
          f"({'os.urandom' if args.secure else 'seeded'}; making the input took {made:.2f} s)")
    input_bytes = data.indices.nbytes + data.counts.nbytes
    print(f"{'method':<10} {'seconds':>8} {'of 5 s':>7} {'cells out':>10} {'peak MiB':>9} {'peak / (n + out)':>17}")
    for method in ("filter", "threshold", "priority"):
        params = settings_for(method, data, n)
        seconds, release = timed(data, method, params, 0.1, source)
        peak = peak_memory(data, method, params, 0.1, source)
        per_cell = peak / (n + len(release.cells))
        print(f"{method:<10} {seconds:8.2f} {seconds / 5:7.0%} {len(release.cells):10,} {peak / 2**20:9.0f} "
              f"{per_cell:13.0f} B/cell")
    print(f"(input: {input_bytes / 2**20:.0f} MiB; the laborious table would need {16 * m / 2**40:.0f} TiB)")


def section_speedup(args) -> None:
    m, n = 10**7, 10**5
    data = synthetic(m, n, seed=2)
    source = SeededRandom(np.random.default_rng(2))
    base, _ = timed(data, "geometric", {}, 0.1, source, repeats=args.repeats)
    print(f"\n## m = 10^7, density 0.01 (n = 10^5), ε = 0.1: shortcut vs the laborious geometric mechanism")
    print(f"geometric (noise on all 10^7 cells): {base * 1000:.0f} ms")
    print(f"{'method':<18} {'ms':>8} {'cells out':>10} {'speed-up':>9}")
    for method in ("filter", "filter2", "threshold", "priority", "filter-threshold", "filter-priority"):
        seconds, release = timed(data, method, settings_for(method, data, n), 0.1, source, repeats=args.repeats)
        print(f"{method:<18} {seconds * 1000:8.1f} {len(release.cells):10,} {base / seconds:8.0f}x")


def section_throughput(args) -> None:
    m = args.throughput_m
    source = SeededRandom(np.random.default_rng(3))
    methods = ("geometric", "filter", "filter2", "threshold", "priority", "filter-threshold", "filter-priority")
    print(f"\n## Throughput (non-zeros per second), m = {m:,}, output s = n, ε = 0.1 (the paper's Fig. 4)")
    print(f"{'density':>8} {'n':>9} " + " ".join(f"{name:>16}" for name in methods))
    for density in (1e-1, 1e-2, 1e-3):
        n = int(m * density)
        data = synthetic(m, n, seed=4)
        rates = []
        for method in methods:
            seconds, _ = timed(data, method, settings_for(method, data, n), 0.1, source, repeats=args.repeats)
            rates.append(n / seconds)
        print(f"{density:8.0e} {n:9,} " + " ".join(f"{rate:16,.0f}" for rate in rates))


def handmade_empty(domain_size: int):
    """A release that lists no cell (for the reference row 'every answer 0')."""
    from dpdesk.mechanisms.base import CellSummary, Release
    from dpdesk.privacy.budget import BudgetSplit

    cells = CellSummary(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), None,
                        {"kind": "cells", "domain_size": domain_size})
    return Release("nothing", 1.0, BudgetSplit.single(1.0, "none"), {}, cells=cells)


def section_adult(args) -> None:
    data = dpdesk.load(ADULT, format="records", attributes=ADULT_ATTRIBUTES)
    declared = {"nonzeros": 7000, "total": 32561}  # 32,561 records is UCI's published figure; n rounded up
    t = 7000
    print(f"\n## UCI Adult, {data.domain_size:,} cells (7 categorical attributes); summaries of about {t:,} cells; "
          f"mean of {args.repeats} repeats; internal figures (true data)")
    print("declared public facts: n = 7,000 (rounded up), ‖M‖₁ = 32,561 (the number of records UCI publishes)")
    for epsilon in (0.1, 1.0):
        scale = 1 / epsilon
        candidates = [("geometric", {})]
        candidates += [("filter", {"target_size": t, "nonzeros": declared["nonzeros"]}),
                       ("filter2", {"target_size": t, "nonzeros": declared["nonzeros"]}),
                       ("threshold", {"target_size": t, **declared}),
                       ("priority", {"size": t})]
        for factor in (1, 2, 3, 4, 5):
            theta = max(1, round(factor * scale))
            candidates.append(("filter-threshold", {"threshold": theta, "target_size": t, **declared}))
            candidates.append(("filter-priority", {"threshold": theta, "size": t}))
        candidates += [("dyadic", {"method": "filter2", "target_size": t, "nonzeros": declared["nonzeros"]}),
                       ("dyadic", {"method": "filter-priority", "threshold": round(3 * 21 * scale), "size": t}),
                       ("sketch", {"width": t, "depth": 1})]
        rows = []
        for method, params in candidates:
            metrics = [evaluate_summary(data, dpdesk.release(data, method, epsilon=epsilon, rng=seed, **params),
                                        queries=100, seed=0) for seed in range(args.repeats)]
            mean = {key: float(np.mean([m[key] for m in metrics])) for key in metrics[0]}
            shown = ", ".join(f"{k}={v}" for k, v in params.items() if k not in ("nonzeros", "total"))
            rows.append((f"{method} ({shown})" if shown else method, mean))
        nothing = handmade_empty(data.domain_size)  # answering 0 everywhere: the error is the true sum
        rows.append(("(nothing published: every answer 0)", evaluate_summary(data, nothing, queries=100, seed=0)))
        base = rows[0][1]
        sizes = sorted(int(k.split("@")[1]) for k in base if k.startswith("range_mae@"))
        print(f"\nε = {epsilon:g}")
        print(f"{'summary':<52} {'size':>8} " + " ".join(f"{'range@' + str(s):>11}" for s in sizes)
              + " " + " ".join(f"{'subset@' + str(s):>12}" for s in sizes) + f" {'range MRE':>9} {'subset MRE':>10}")
        for label, mean in rows:
            print(f"{label:<52} {mean['summary_size']:8,.0f} "
                  + " ".join(f"{mean[f'range_mae@{s}']:11,.1f}" for s in sizes) + " "
                  + " ".join(f"{mean[f'subset_mae@{s}']:12,.1f}" for s in sizes)
                  + f" {mean['range_mre']:9.3f} {mean['subset_mre']:10.3f}")
        print("mean absolute error relative to geometric (range, subset), averaged over sizes:")
        for label, mean in rows[1:]:
            ratio_r = np.mean([mean[f"range_mae@{s}"] / base[f"range_mae@{s}"] for s in sizes])
            ratio_s = np.mean([mean[f"subset_mae@{s}"] / base[f"subset_mae@{s}"] for s in sizes])
            print(f"  {label:<52} {ratio_r:6.2f} {ratio_s:6.2f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default="huge,speedup,throughput,adult")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--secure", action="store_true", help="time the huge section with os.urandom")
    parser.add_argument("--throughput-m", dest="throughput_m", type=int, default=10**7)
    args = parser.parse_args()
    sections = {"huge": section_huge, "speedup": section_speedup, "throughput": section_throughput,
                "adult": section_adult}
    for name in args.only.split(","):
        sections[name.strip()](args)


if __name__ == "__main__":
    main()
