"""``--items discover`` on retail against OpenDP and PipelineDP (issue 29).

For ε ∈ {0.5, 1, 2}, Δ = 20, δ = 10⁻⁶, mechanism ``lpa``, each variant runs 5 times through the
real release path (``workflow.secure_release``: secure randomness, the plan chosen from declared
inputs, a real ledger in a temporary folder, the published whole numbers ≥ 0) and is scored
against the true, untruncated counts: items released, recall of the true top 100, and the mean
absolute error on the true top 100 (an item not released counts as 0).

Variants:

* ``default`` — nothing but ε, δ, Δ declared: the plan chooses route, share and the bound while
  finding on a stand-in of assumed facts;
* ``default + facts`` — the same with the facts a steward knows roughly declared (88,000 people,
  10 items a person, 16,000 distinct items);
* ``one pass`` — ``--discover-route one-pass`` (OpenDP's and PipelineDP's post-aggregation
  thresholding, with dpdesk's threshold);
* ``old default`` — the former default, 10% of ε with Δ items per person while finding.

The peers' figures are the issue's (OpenDP 0.16, PipelineDP 0.3 with post-aggregation
thresholding, same baskets and settings, 5 repeats); they are printed beside dpdesk's, not
re-measured here (neither library is a dependency of dpdesk).

Run: nice python benchmarks/bench_discovery.py [--repeats 5] [--data tests/data/retail.dat.gz]
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

import numpy as np

PEERS = {  # ε: (recall, top-100 MAE) — OpenDP, PipelineDP post-aggregation (issue 29's table)
    0.5: {"OpenDP": (0.96, 176), "PipelineDP post-agg.": (0.96, 172)},
    1.0: {"OpenDP": (1.0, 142), "PipelineDP post-agg.": (1.0, 143)},
    2.0: {"OpenDP": (1.0, 141), "PipelineDP post-agg.": (1.0, 142)},
}
FACTS = {"people": 88_000, "row_length": 10.0, "expected_items": 16_000}
VARIANTS = {"default": {}, "default + facts": FACTS, "one pass": {"route": "one-pass"},
            "old default": {"share": 0.1, "bound": 20}}


def score(release, truth: dict, top: list[str]) -> tuple[int, float, float]:
    published = dict(zip(release.labels, release.values))
    estimates = np.array([published.get(item, 0.0) for item in top])
    true = np.array([truth[item] for item in top], dtype=float)
    return len(published), float(np.mean([item in published for item in top])), float(np.mean(np.abs(estimates - true)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(Path(__file__).resolve().parent.parent / "tests" / "data" / "retail.dat.gz"))
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    os.environ["DPDESK_HOME"] = tempfile.mkdtemp(prefix="bench-discovery-")

    import dpdesk
    from dpdesk.data.domain import DomainDeclaration
    from dpdesk.errors import ChargedRefusal
    from dpdesk.privacy.ledger import Ledger
    from dpdesk.workflow import discovery_plan, secure_release

    data = dpdesk.load(args.data)
    truth = dict(zip(data.item_labels, data.column_counts.astype(float)))
    top = [data.item_labels[j] for j in np.argsort(-data.column_counts, kind="stable")[:100]]
    ledger = Ledger.open()
    print(f"{Path(args.data).name}: Δ = 20, δ = 1e-6, lpa, {args.repeats} repeats each, published form; "
          "items released / recall of the true top 100 / MAE on the true top 100 (± s.e.)")
    rows = []
    for epsilon in (0.5, 1.0, 2.0):
        for name, settings in VARIANTS.items():
            items = DomainDeclaration("discovered", delta=1e-6, **settings)
            plan = discovery_plan(items, "lpa", epsilon, {"bound": 20})
            results = []
            for _ in range(args.repeats):
                try:
                    release, _ = secure_release(data, "lpa", epsilon, {"bound": 20}, dataset="retail", items=items,
                                                ledger=ledger, override_cap=True)
                    results.append(score(release, truth, top))
                except ChargedRefusal:  # nothing found: nothing released, every top item counted as 0
                    results.append((0, 0.0, float(np.mean([truth[item] for item in top]))))
            found, recall, mae = (np.array(column) for column in zip(*results))
            how = (f"{plan.route}" + (f", {plan.share:.0%} of ε, {plan.discovery_bound}/person"
                                      if plan.route == "two-step" else ""))
            rows.append((epsilon, name, how, found.mean(), recall.mean(), mae.mean(),
                         mae.std(ddof=1) / np.sqrt(mae.size) if mae.size > 1 else float("nan")))
            print(f"ε {epsilon:<4g} {name:<16} ({how}): {found.mean():7.0f} / {recall.mean():.2f} / "
                  f"{mae.mean():7.1f} ± {rows[-1][-1]:.1f}", flush=True)
    print()
    print("| retail, Δ 20, δ 1e-6 | dpdesk default | dpdesk default + facts | dpdesk one pass | dpdesk old default "
          "| OpenDP | PipelineDP post-agg. |")
    print("|---|---|---|---|---|---|---|")
    for epsilon in (0.5, 1.0, 2.0):
        cells = [f"{found:.0f} / {recall:.2f} / {mae:.0f}" for e, _, _, found, recall, mae, _ in rows if e == epsilon]
        peers = [f"{recall:.2f} / {mae}" for recall, mae in PEERS[epsilon].values()]
        print(f"| ε {epsilon:g} | " + " | ".join(cells + peers) + " |")
    print()
    worst = [(e, name, recall, mae) for e, name, _, _, recall, mae, _ in rows if name == "default"]
    for epsilon, name, recall, mae in worst:
        best_recall = max(r for r, _ in PEERS[epsilon].values())
        best_mae = min(m for _, m in PEERS[epsilon].values())
        print(f"ε {epsilon:g}: default recall {recall:.2f} vs the peers' best {best_recall:.2f}; top-100 MAE "
              f"{mae:.0f} vs {best_mae} (ratio {mae / best_mae:.2f})")


if __name__ == "__main__":
    main()
