"""A comparison run on retail.dat: 3 mechanisms × 5 ε × 30 repeats, after loading (privacy core).

Target: under 10 s on this 2-core machine. Prints the time, the load time and their ratio.

Run: python benchmarks/bench_compare.py [--mechanisms lpa,alpa,diff]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import dpdesk
from dpdesk.evaluation.compare import Entry, run_comparison

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "retail.dat.gz"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mechanisms", default="lpa,alpa,diff")
    parser.add_argument("--bound", type=int, default=20)
    args = parser.parse_args()
    t = time.perf_counter()
    data = dpdesk.load(DATA)
    load = time.perf_counter() - t
    params = {"lpa": {"bound": args.bound}, "alpa": {}, "diff": {"index": "uniform", "bound": args.bound}}
    entries = []
    for mechanism_id in args.mechanisms.split(","):
        mechanism = dpdesk.mechanisms.get(mechanism_id)
        names = {p.name for p in mechanism.params}
        chosen = params.get(mechanism_id, {"bound": args.bound})
        entries.append(Entry(mechanism_id, {k: v for k, v in chosen.items() if k in names}))
    epsilons = [0.1, 0.4, 0.69, 1.1, 2.0]
    t = time.perf_counter()
    comparison = run_comparison(data, entries, epsilons, 30, seed=1)
    elapsed = time.perf_counter() - t
    runs = len(comparison.results)
    print(f"retail.dat loaded in {load:.2f} s; comparison of {len(entries)} mechanisms × {len(epsilons)} ε × 30 "
          f"repeats = {runs} runs in {elapsed:.2f} s ({elapsed / runs * 1000:.1f} ms per run, metrics included; "
          f"target < 10 s); ratio to load time {elapsed / load:.1f}")
    print(comparison.summary[comparison.summary.metric == "mae"][["label", "epsilon", "mean"]].to_string(index=False))


if __name__ == "__main__":
    main()
