#!/usr/bin/env python
"""Learn the mechanism recommendation rule and write resources/recommend/rule.json.

Like Pythia (Kotsogiannis et al., SIGMOD 2017): every releasable incidence mechanism
(dpdesk/evaluation/arms.py) is compared with seeded exploration runs on public data — the
seven real datasets in tests/data/ and synthetic data of varied shape — over a grid of ε
and of declared Δ ÷ typical row length; each case is described by the declared facts only
(ε, d, Δ, L) and a shallow decision tree per situation picks the mechanism that is within
10% of the best mean absolute error most often (dpdesk/evaluation/rule_learning.py) — per goal
(every count, the 10 or 100 largest, a target "counts above N within ±R%": dpdesk/evaluation/
goals.py), over every mechanism and over those that publish margins of error.

The rule file also records how often each tree hits on data it was not trained on: leave
one real dataset out (learn on the other six and the synthetic data), and synthetic data
held out from training, with three baselines (always gs, always lpa, always the best
single choice).

Running time with the defaults (7 real + 48 + 16 synthetic datasets, 7 ε × (8 arms with Δ × 6 Δ
ratios + 3 without) × 8 repeats: 202,776 seeded releases): see ``settings.measuring_seconds`` in the
rule file (about 10 minutes with `--repeats 4 --synthetic 24 --held-out 8`, 13 arms, on the development machine's two cores
shared with other work), nearly all of it in the comparisons; every goal is measured on the same
runs. A new arm in dpdesk/evaluation/arms.py needs nothing else: the same one command retrains every
goal. Not run in
CI: tests/evaluation/test_recommend.py checks the shipped file and re-learns on a tiny grid.
``--measurements FILE`` keeps the measured table (and FILE.seconds, the time it took);
``--reuse`` re-learns from it in half a minute (to change the tree settings without
re-running the comparisons).

    .venv/bin/python scripts/learn_recommendation.py [--repeats 8] [--synthetic 48] [--held-out 16]
        [--seed 19] [--measurements results.csv [--reuse]] [--out resources/recommend/rule.json]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import dpdesk  # noqa: E402
from dpdesk.evaluation.rule_learning import (HELD_OUT_GROUP, TrainingSet, learn_rule, measure,  # noqa: E402
                                             typical_row_length)
from tests.mechanisms.gs_utility import long_tailed  # noqa: E402

from tests.data import SHARED  # noqa: E402

DATA = ROOT / "tests" / "data"
REAL = SHARED  # the seven shared datasets (tests/data/SOURCES.md)
EPSILONS = (0.1, 0.2, 0.4, 0.7, 1.1, 2.0, 4.0)
MOST_CELLS = 2_500_000  # people × mean row length of a synthetic dataset (keeps a run in seconds)


def synthetic_records(people: int, attributes: int, values: int, skew: float, seed: int) -> dpdesk.Dataset:
    """Records like mushroom, chess or adult: one value per attribute and person (every row has
    ``attributes`` items), values Zipf(``skew``)-popular within their attribute."""
    rng = np.random.default_rng(seed)
    sizes = np.maximum(2, np.round(values * np.exp(rng.normal(0, 0.6, attributes)))).astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    columns = []
    for size, offset in zip(sizes, offsets):
        weights = 1.0 / np.arange(1, size + 1) ** skew
        columns.append(offset + rng.choice(size, size=people, p=weights / weights.sum()))
    indices = np.stack(columns, axis=1).ravel()
    indptr = np.arange(people + 1) * attributes
    matrix = sp.csr_matrix((np.ones(indices.size, np.uint8), indices, indptr), shape=(people, int(sizes.sum())))
    return dpdesk.from_matrix(matrix, name=f"records {people:,} × {attributes} attributes")


def draw_synthetic(rng: np.random.Generator, index: int, group: str) -> tuple[TrainingSet, dict]:
    """One synthetic dataset of random shape: baskets with long-tailed row lengths (2 in 3) or records."""
    seed = int(rng.integers(2**31))
    while True:
        people = int(round(math.exp(rng.uniform(math.log(300), math.log(100_000)))))
        skew = float(rng.uniform(0.3, 1.5))
        if rng.random() < 2 / 3:
            items = int(round(math.exp(rng.uniform(math.log(30), math.log(30_000)))))
            length = float(math.exp(rng.uniform(math.log(1.5), math.log(min(100.0, items / 4)))))
            tail = float(rng.uniform(1.8, 8.0))
            if people * length > MOST_CELLS:
                continue
            data = long_tailed(people, items, length, tail=tail, skew=skew, seed=seed)
            shape = {"shape": "baskets", "people": people, "items": items, "mean_length": round(length, 3),
                     "tail": round(tail, 3), "skew": round(skew, 3), "seed": seed}
        else:
            attributes = int(rng.integers(3, 40))
            values = int(round(math.exp(rng.uniform(math.log(2), math.log(200)))))
            if people * attributes > MOST_CELLS:
                continue
            data = synthetic_records(people, attributes, values, skew, seed)
            shape = {"shape": "records", "people": people, "attributes": attributes, "values": values,
                     "skew": round(skew, 3), "seed": seed}
        name = f"{'held-out ' if group == HELD_OUT_GROUP else ''}synthetic {index + 1}"
        item = TrainingSet(name, data, group, typical_row_length(data))
        return item, {"name": name, "group": group, "items": data.n_items,
                      "typical_row_length": round(item.typical_row_length, 3), **shape}


def training_sets(synthetic: int, held_out: int, seed: int) -> tuple[list[TrainingSet], list[dict]]:
    sets, described = [], []
    for name, file in REAL.items():
        data = dpdesk.load(DATA / file)
        item = TrainingSet(name, data, "real", typical_row_length(data))
        sets.append(item)
        described.append({"name": name, "group": "real", "file": f"tests/data/{file}", "people": data.n_rows,
                          "items": data.n_items, "typical_row_length": round(item.typical_row_length, 3)})
    rng = np.random.default_rng(seed)
    for k in range(synthetic + held_out):
        item, description = draw_synthetic(rng, k, "synthetic" if k < synthetic else HELD_OUT_GROUP)
        sets.append(item)
        described.append(description)
    return sets, described


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=8, help="seeded runs per mechanism, ε and Δ (default 8)")
    parser.add_argument("--synthetic", type=int, default=48, help="synthetic training datasets (default 48)")
    parser.add_argument("--held-out", type=int, default=16, help="synthetic datasets kept out of training (default 16)")
    parser.add_argument("--seed", type=int, default=19, help="seed of the synthetic shapes and of the runs")
    parser.add_argument("--measurements", type=Path,
                        help="CSV file of the measured MAEs (written, or read with --reuse)")
    parser.add_argument("--reuse", action="store_true", help="learn from --measurements without running comparisons")
    parser.add_argument("--out", type=Path, default=ROOT / "resources" / "recommend" / "rule.json")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    sets, described = training_sets(args.synthetic, args.held_out, args.seed)
    if args.reuse:
        if not args.measurements:
            parser.error("--reuse needs --measurements FILE")
        measurements = pd.read_csv(args.measurements)
        timing = args.measurements.with_suffix(".seconds")
        seconds = int(timing.read_text()) if timing.exists() else None  # of the run that measured them
    else:
        shown = set()

        def progress(fraction, message):
            dataset = message.split(":")[0]
            if dataset not in shown:  # one line per dataset
                shown.add(dataset)
                print(f"{fraction:6.1%} {time.perf_counter() - started:6.0f} s  {dataset}", file=sys.stderr, flush=True)

        measurements = measure(sets, EPSILONS, repeats=args.repeats, seed=args.seed, progress=progress)
        seconds = round(time.perf_counter() - started)
        if args.measurements:
            measurements.to_csv(args.measurements, index=False)
            args.measurements.with_suffix(".seconds").write_text(f"{seconds}\n")
    settings = {"repeats": args.repeats, "synthetic": args.synthetic, "held_out": args.held_out, "seed": args.seed,
                "measuring_seconds": seconds}
    rule = learn_rule(measurements, datasets=described, settings=settings)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rule, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    for goal, variants in rule["goals"].items():
        for variant, situations in variants.items():
            for situation, part in situations.items():
                evaluation = part["evaluation"]
                if evaluation is None:
                    print(f"{goal} ({'margins required' if variant == 'margins' else 'any mechanism'}) {situation}: "
                          "no mechanism to choose from")
                    continue
                loo, held = evaluation["leave_one_real_dataset_out"], evaluation["held_out_synthetic"]
                guard = evaluation.get("largest_guard") or evaluation.get("margins_guard")
                print(f"{goal} ({'margins required' if variant == 'margins' else 'any mechanism'}) {situation}: "
                      f"leave-one-real-dataset-out {loo['rule']:.0%} "
                      f"({', '.join(f'{k} {v:.0%}' for k, v in loo['baselines'].items())})"
                      + (f"; held-out synthetic {held['rule']:.0%} "
                         f"({', '.join(f'{k} {v:.0%}' for k, v in held['baselines'].items())})" if held else "")
                      + (f"; error at most {guard['worst_ratio']:.2f}× the best on the shared datasets "
                         f"({guard['cases_over_guard']} of {guard['real_cases']} cases over {guard['guard']:g}×)"
                         if guard else ""))
    print(f"{args.out} ({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
