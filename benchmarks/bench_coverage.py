"""Do the margins of error cover the total error at their stated rate? (issue 28)

For every releasable incidence mechanism × the seven datasets in /work/shared/data (the
copies in tests/data) × ε ∈ {0.1, ln 2, 2} × Δ ∈ {the mean row length rounded up, 4× that,
the longest row}, 20 seeded exploration runs of the release's own code path (the mechanism's
``run`` and :func:`dpdesk.mechanisms.publish.publish`, whole numbers ≥ 0, as released), and
for the cell mechanisms on UCI Adult (7 categorical attributes) at the same ε:

* coverage: the share of items whose TRUE count (untruncated) lies within ±margin95 of the
  published value, over all items and over the 100 largest true counts;
* ratio: the median margin over the median absolute error (a margin that covers everything by
  being huge does not count);
* how many of the runs published no margin (the mechanism withheld it; those runs are left
  out of the coverage).

A cell passes when coverage ≥ 93% (all items) and ≥ 90% (top 100) and ratio ≤ 3. Where the noise
dominates the error the ratio cannot pass: a Laplace variable's 95% point is ln 20/ln 2 = 4.32 times
its median absolute value (and any margin covering 93% of Laplace errors is at least
ln(1/0.07)/ln 2 = 3.84 times it), and where most published values are 0 and most true counts
too (whole numbers ≥ 0 of sparse counts) the median error is 0 and the ratio infinite. The
summary lists the cells that fail coverage, and how many exceed the ratio with coverage kept.

    nice .venv/bin/python benchmarks/bench_coverage.py [--quick] [--seeds 20] [--only gs,lpa]
        [--datasets retail,chess] [--csv results.csv]

``--quick``: 4 seeds, ε ∈ {ln 2}, Δ ∈ {the mean rounded up, the longest row}.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import dpdesk  # noqa: E402
from dpdesk import api  # noqa: E402
from dpdesk.mechanisms import all_mechanisms, get  # noqa: E402
from dpdesk.mechanisms.publish import publish  # noqa: E402
from dpdesk.privacy.randomness import SeededRandom  # noqa: E402
from tests.data import SHARED  # noqa: E402

DATA = ROOT / "tests" / "data"
DATASETS = SHARED  # the seven shared datasets (tests/data/SOURCES.md)
ADULT_ATTRIBUTES = [1, 3, 5, 6, 7, 8, 9]  # as benchmarks/bench_sparse.py: 907,200 cells
EPSILONS = (0.1, math.log(2), 2.0)
TOP = 100
COVERAGE_ALL, COVERAGE_TOP, RATIO = 0.93, 0.90, 3.0
# the cell mechanisms' settings: sizes from the Adult table's m (public), θ from ε (recommend.filter_threshold)
CELL_SETTINGS = {"filter": {"target_size": 2000}, "filter2": {"target_size": 2000},
                 "threshold": {"target_size": 2000}, "priority": {"size": 2000},
                 "filter-threshold": {"target_size": 2000, "threshold": 5}, "filter-priority": {"size": 2000,
                                                                                               "threshold": 5},
                 "dyadic": {"method": "filter2", "target_size": 4000}, "sketch": {"width": 4096, "depth": 3},
                 "geometric": {"max_cells": 2_000_000}}


def grid_bounds(data) -> list[int]:
    lengths = data.row_counts
    lengths = lengths[lengths > 0]
    mean = math.ceil(float(lengths.mean()))
    return sorted({mean, 4 * mean, int(lengths.max())})


def incidence_mechanisms(only) -> list[str]:
    return [m.id for m in all_mechanisms("incidence") if m.releasable and (not only or m.id in only)]


def cell_mechanisms(only) -> list[str]:
    return [m.id for m in all_mechanisms("cells") if m.releasable and (not only or m.id in only)]


def runs(data, mechanism_id: str, epsilon: float, params: dict, seeds: int):
    """Published releases of ``seeds`` seeded runs (the same code path as a release: run, then publish)."""
    mechanism, eps, values = api.validate(data, mechanism_id, epsilon, params)
    prepared = api.prepare(data, mechanism, eps, values)
    for seed in range(seeds):
        source = SeededRandom(np.random.default_rng(np.random.SeedSequence(28, spawn_key=(seed,))), seed=seed)
        release = mechanism.run(data, prepared, eps, values, source)
        yield publish(release, mechanism=mechanism)


def cell_view(truth: np.ndarray, release):
    """(published values, true values, margins, which are among the largest true) of a cell summary with margins:
    the geometric mechanism over every cell of the table (a cell not listed is published as 0, with the same margin
    as every cell), a count sketch over its buckets (their true values: the signed sums of the cells hashed there)."""
    from dpdesk.mechanisms.sparse.sketch import hash_tables, index_bytes, sketch_counts

    info = release.cells.info
    margin = np.asarray(release.margin95, dtype=float)
    if info.get("kind") == "sketch":
        nonzero = np.flatnonzero(truth)
        tables = hash_tables(bytes.fromhex(info["hash_key"]), info["depth"], index_bytes(truth.size))
        true = sketch_counts(tables, nonzero, truth[nonzero].astype(np.int64), info["width"]).ravel().astype(float)
        values = np.asarray(release.cells.values, dtype=float)
        return values, true, margin, np.argsort(-np.abs(true), kind="stable")[:TOP]
    values = np.zeros(truth.size)
    values[release.cells.indices] = release.cells.values
    assert np.all(margin == margin[0])  # noise of one scale on every cell
    top = np.zeros(truth.size, dtype=bool)
    top[np.argsort(-truth, kind="stable")[:TOP]] = True
    return values, truth, np.full(truth.size, margin[0]), top


def measure(truth: np.ndarray, releases, cells: bool = False) -> dict:
    covered, covered_top, margins, errors, withheld, published = [], [], [], [], 0, 0
    top = np.argsort(-truth, kind="stable")[:TOP]
    for release in releases:
        published += 1
        if release.margin95 is None:
            withheld += 1
            continue
        if cells:
            values, true, margin, largest = cell_view(truth, release)
            error = np.abs(values - true)
            covered_top.append(error[largest] <= margin[largest])
        else:
            error = np.abs(np.asarray(release.values, dtype=float) - truth)
            margin = np.asarray(release.margin95, dtype=float)
            covered_top.append(error[top] <= margin[top])
        covered.append(error <= margin)
        margins.append(margin)
        errors.append(error)
    out = {"runs": published, "withheld": withheld}
    if covered:
        margins, errors = np.concatenate(margins), np.concatenate(errors)
        median_error = float(np.median(errors))
        out.update(coverage=float(np.concatenate(covered).mean()),
                   coverage_top=float(np.concatenate(covered_top).mean()) if sum(map(len, covered_top)) else math.nan,
                   median_margin=float(np.median(margins)), median_error=median_error,
                   ratio=float(np.median(margins)) / median_error if median_error > 0 else math.inf)
    else:
        reason = (releases_reason[0] if releases_reason else "")
        out.update(coverage=math.nan, coverage_top=math.nan, median_margin=math.nan, median_error=math.nan,
                   ratio=math.nan, reason=reason)
    return out


releases_reason: list[str] = []


def _remember_reason(releases):
    releases_reason.clear()
    for release in releases:
        reason = (release.report.get("publication") or {}).get("margin_withheld")
        if reason and not releases_reason:
            releases_reason.append(reason)
        yield release


def verdict(row: dict) -> str:
    if row["runs"] == row["withheld"]:
        return "no margin"
    ok = (row["coverage"] >= COVERAGE_ALL and (math.isnan(row["coverage_top"]) or row["coverage_top"] >= COVERAGE_TOP))
    ratio_ok = row["ratio"] <= RATIO
    return ("pass" if ok and ratio_ok else "coverage ok, ratio > 3" if ok else "FAIL")


def print_row(row: dict) -> None:
    print(f"{row['dataset']:10s} {row['mechanism']:10s} ε={row['epsilon']:<5.3g} Δ={row.get('bound', '-')!s:>5s} "
          f"runs {row['runs']:2d} (no margin {row['withheld']:2d})  all {row['coverage']:6.1%}  top {row['coverage_top']:6.1%}"
          f"  margin {row['median_margin']:9.4g} / error {row['median_error']:9.4g} = {row['ratio']:6.2f}  "
          f"{row['verdict']}", flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="4 seeds, ε = ln 2, Δ = the mean and the longest row")
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--only", help="comma-separated mechanism ids")
    parser.add_argument("--datasets", help="comma-separated dataset names (" + ", ".join(DATASETS) + ")")
    parser.add_argument("--no-cells", action="store_true", help="leave out the cell mechanisms on Adult")
    parser.add_argument("--csv", type=Path, help="also write every cell's figures to this CSV file")
    args = parser.parse_args(argv)
    only = set(args.only.split(",")) if args.only else None
    seeds = 4 if args.quick else args.seeds
    epsilons = (math.log(2),) if args.quick else EPSILONS
    names = args.datasets.split(",") if args.datasets else list(DATASETS)
    started = time.perf_counter()
    rows = []
    for name in names:
        data = dpdesk.load(DATA / DATASETS[name])
        truth = np.asarray(data.column_counts, dtype=float)
        bounds = grid_bounds(data)
        if args.quick:
            bounds = sorted({bounds[0], bounds[-1]})
        for mechanism_id in incidence_mechanisms(only):
            mechanism = get(mechanism_id)
            takes_bound = any(p.name == "bound" for p in mechanism.params)
            extra = {"diagnostics": False} if any(p.name == "diagnostics" for p in mechanism.params) else {}
            if mechanism_id == "diff":
                extra["index"] = "uniform"
            for bound in (bounds if takes_bound else [None]):
                for epsilon in epsilons:
                    params = dict(extra, **({"bound": bound} if bound is not None else {}))
                    row = {"dataset": name, "mechanism": mechanism_id, "epsilon": epsilon,
                           "bound": "" if bound is None else str(bound)}
                    row.update(measure(truth, _remember_reason(runs(data, mechanism_id, epsilon, params, seeds))))
                    row["verdict"] = verdict(row)
                    rows.append(row)
                    print_row(row)
    if not args.no_cells and (not args.datasets or "adult" in names):
        cells = dpdesk.load(DATA / DATASETS["adult"], format="records", attributes=ADULT_ATTRIBUTES)
        truth = np.zeros(cells.domain_size)
        truth[cells.indices] = cells.counts
        for mechanism_id in cell_mechanisms(only):
            for epsilon in epsilons:
                row = {"dataset": "adult cells", "mechanism": mechanism_id, "epsilon": epsilon, "bound": ""}
                params = CELL_SETTINGS.get(mechanism_id, {})
                row.update(measure(truth, _remember_reason(runs(cells, mechanism_id, epsilon, params, seeds)),
                                   cells=True))
                row["verdict"] = verdict(row)
                rows.append(row)
                print_row(row)
    table = pd.DataFrame(rows)
    if args.csv:
        table.to_csv(args.csv, index=False)
    print(f"\n{len(table)} cells, {time.perf_counter() - started:.0f} s")
    for verdict_name, count in table["verdict"].value_counts().items():
        print(f"  {verdict_name}: {count}")
    failed = table[table["verdict"] == "FAIL"]
    if len(failed):
        print("\ncells whose coverage fails (all items < 93% or the 100 largest < 90%):")
        for row in failed.to_dict("records"):
            print_row(row)
    published = table[table["verdict"] != "no margin"]
    if len(published):
        print(f"\nmedian ratio over the cells with margins: {published['ratio'].replace(math.inf, np.nan).median():.2f} "
              f"(noise alone: {math.log(20) / math.log(2):.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
