"""Private discovery's two routes (issue 29): the one-pass stability histogram and the two-step
route, their thresholds, budget claims, an audit, the plan made from declared inputs only, and the
release path (dry run, one-pass release, a discovery that finds nothing)."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
import scipy.sparse as sp

import dpdesk
from dpdesk import cli
from dpdesk.data.domain import DomainDeclaration, parse_items_option
from dpdesk.errors import ParameterError
from dpdesk.evaluation.discovery import plan_discovery
from dpdesk.mechanisms.discovery import (ONE_PASS, TWO_STEP, discovery_threshold, listing_probability,
                                      stability_histogram)
from dpdesk.privacy.ledger import Ledger
from dpdesk.workflow import discovery_plan
from tests.audit import audit
from tests.privacy.claims import check, measured_epsilon
from tests.privacy.test_budget_claims import EPSILONS, paired, rows_matrix, seeded, threshold_claims, threshold_counts


# --- the threshold -----------------------------------------------------------------------------------

@pytest.mark.parametrize("epsilon,delta,bound", [(0.5, 1e-6, 20), (1.0, 1e-6, 20), (2.0, 1e-6, 20), (3.0, 1e-9, 3),
                                                 (0.1, 0.2, 1), (0.3, 0.05, 2), (8.0, 1e-6, 4)])
def test_the_threshold_covers_every_one_of_a_new_persons_items(epsilon, delta, bound):
    """A person with Δ items nobody else has makes each listed with P1 = P(1 + Z ≥ τ); τ is the smallest
    with Δ·P1 ≤ δ (so the chance any is listed is at most δ) and P1 ≤ 1 − q (the direction D against D′,
    ``discovery_threshold``). A threshold computed for one item per person would give Δ·P1 ≈ Δ·δ."""
    tau, achieved = discovery_threshold(epsilon, delta, bound)
    q = math.exp(-epsilon / bound)
    p1 = float(listing_probability(tau - 1, q))
    assert achieved == pytest.approx(bound * p1) and achieved <= delta
    assert p1 <= 1 - q
    # the smallest such τ: one less breaks one of the two conditions
    p1_lower = float(listing_probability(tau - 2, q))
    assert tau == 2 or bound * p1_lower > delta or p1_lower > 1 - q
    # exact chance that one of the person's Δ new items is listed, at most δ
    assert 1 - (1 - p1) ** bound <= delta


def test_the_reverse_direction_needs_p1_below_one_minus_q():
    """With δ/Δ above 1 − q, δ alone would allow P1 > 1 − q, and then D against D′ would need δ > 0:
    the threshold is raised until P1 ≤ 1 − q."""
    epsilon, delta, bound = 0.1, 0.2, 1
    q = math.exp(-epsilon / bound)
    assert delta / bound > 1 - q
    tau, _ = discovery_threshold(epsilon, delta, bound)
    assert float(listing_probability(tau - 1, q)) <= 1 - q


# --- the one-pass route's budget claims -----------------------------------------------------------

@pytest.mark.parametrize("epsilon", EPSILONS)
def test_one_pass_discovery(epsilon):
    """``stability_histogram`` with Δ = 2 items per person, δ = 0.01: its listing follows discrete Laplace
    noise of scale Δ/ε at τ(ε, δ, Δ) (ε and δ measured as for ``discover_items``), and the published
    values are those noisy counts: the noise of items far above τ (always listed) has scale Δ/ε."""
    bound, delta, runs = 2, 0.01, 300
    tau, _ = discovery_threshold(epsilon, delta, bound)
    scale = bound / epsilon
    far = int(tau + 40 * scale)
    counts = np.concatenate([threshold_counts(tau, int(math.ceil(3 * scale)) + 2), [far] * 12])
    first, second = paired(counts)
    rows = [[a, b] if b >= 0 else [a] for a, b in zip(first, second)]
    data = dpdesk.from_matrix(rows_matrix(rows, counts.size))
    assert np.array_equal(data.column_counts, counts) and data.row_counts.max() <= bound
    source = seeded(31)
    listed = np.zeros(counts.size)
    far_noise = []
    for _ in range(runs):
        domain, values = stability_histogram(data, epsilon, delta, bound, source)
        assert domain.route == ONE_PASS and domain.threshold == tau and values.size == domain.size
        assert np.all(values >= tau)  # only counts at or above τ are published
        mask = np.isin(data.item_labels, domain.labels)
        listed += mask
        by_label = dict(zip(domain.labels, values))
        far_noise.extend(by_label[label] - far for label in data.item_labels[counts == far])
    assert domain.epsilon == epsilon
    threshold_claims(counts[:-12], listed[:-12], runs, tau, bound, domain.epsilon, domain.delta,
                     "one-pass discovery")
    check(measured_epsilon(np.array(far_noise), bound, domain.epsilon, what="one-pass published counts"))


def one_pass_sampler(bound: int, epsilon: float, delta: float, features_of):
    def sample(data, generator, n):
        from dpdesk.privacy.randomness import SeededRandom

        source = SeededRandom(generator)
        outputs = []
        for _ in range(n):
            domain, values = stability_histogram(data, epsilon, delta, bound, source)
            outputs.append(features_of(dict(zip(domain.labels, values))))
        return np.array(outputs, dtype=float)

    return sample


def audit_neighbours():
    """D: 5 people holding items a and b, 5 holding c alone; D′: one more person with a and b."""
    rows = [[0, 1]] * 5 + [[2]] * 5
    d = dpdesk.from_matrix(rows_matrix(rows, 3), ["a", "b", "c"])
    d_plus = dpdesk.from_matrix(rows_matrix(rows + [[0, 1]], 3), ["a", "b", "c"])
    return d, d_plus


def held_features(listed: dict) -> list[float]:
    """The published counts of a and b (−100 when not listed) and their sum."""
    a, b = listed.get("a", -100.0), listed.get("b", -100.0)
    return [a, b, a + b]


def test_audit_of_the_one_pass_route():
    """Neighbours whose extra person holds two items others hold too: the published list and counts are
    ε-DP (no new item, so no δ), and the audit's lower bound stays at or below ε."""
    d, d_plus = audit_neighbours()
    epsilon, bound = 1.0, 2
    tau, _ = discovery_threshold(epsilon, 0.2, bound)
    assert tau == 5  # the counts (5 and 6) sit at τ: listing is informative
    result = audit(one_pass_sampler(bound, epsilon, 0.2, lambda listed: held_features(listed)), d, d_plus,
                   runs=3000, features=lambda x: x, seed=5)
    assert result.epsilon_lower <= epsilon, str(result)


def test_audit_catches_a_one_pass_threshold_without_the_bound(monkeypatch):
    """The planted bug: noise and threshold for one item per person while each person keeps two. The
    person changes two counts by one each at noise scale 1/ε: a privacy loss of 2ε, found by the audit."""
    import dpdesk.mechanisms.discovery as discovery

    real = discovery.noisy_threshold
    monkeypatch.setattr(discovery, "noisy_threshold",
                        lambda counts, epsilon, delta, bound, source: real(counts, epsilon, delta, 1, source))
    d, d_plus = audit_neighbours()
    result = audit(one_pass_sampler(2, 1.0, 0.2, lambda listed: held_features(listed)), d, d_plus,
                   runs=3000, features=lambda x: x, seed=5)
    assert result.epsilon_lower > 1.0, str(result)


# --- the plan: declared inputs only ----------------------------------------------------------------

def declaration(**settings) -> DomainDeclaration:
    return DomainDeclaration("discovered", delta=1e-6, **settings)


def test_the_plan_is_a_function_of_declared_inputs_and_keeps_declared_settings():
    first = plan_discovery(declaration(people=50_000, row_length=8.0), "lpa", 1.0, {"bound": 16})
    again = plan_discovery(declaration(people=50_000, row_length=8.0), "lpa", 1.0, {"bound": 16})
    assert first.to_json() == again.to_json()
    assert first.threshold == discovery_threshold(first.discovery_epsilon, 1e-6, first.discovery_bound)[0]
    assert first.assumed == ["expected_items", "skew"] and first.facts["people"] == 50_000
    chosen = min(first.candidates, key=lambda c: c.expected_error)
    assert first.chosen.expected_error <= chosen.expected_error * 3  # the guarded choice is among the good ones
    fixed = plan_discovery(declaration(share=0.25, bound=5), "gs", 1.0, {"bound": 16})
    assert (fixed.route, fixed.share, fixed.discovery_bound) == (TWO_STEP, 0.25, 5)
    assert fixed.fixed == ["share", "bound"] and len(fixed.candidates) == 1
    assert plan_discovery(declaration(route="one-pass"), "lpa", 1.0, {"bound": 16}).route == ONE_PASS
    # one pass publishes LPA's counts: no other mechanism, and not LPA's laplace variant
    assert {c.route for c in plan_discovery(declaration(), "gs", 1.0, {"bound": 16}).candidates} == {TWO_STEP}
    with pytest.raises(ParameterError, match="--mechanism lpa"):
        plan_discovery(declaration(route="one-pass"), "lpa", 1.0, {"bound": 16, "noise": "laplace"})
    with pytest.raises(ParameterError, match="--discover-bound"):
        plan_discovery(declaration(), "dpsense", 1.0, {})


def test_the_plan_takes_one_pass_when_it_is_expected_to_be_better():
    """Many people with short baskets and a bound well above them: little is truncated, every top item is
    far above any threshold, and the one-pass route keeps all of ε for the counts (noise Δ/ε, not Δ/(ε−sε)).
    With ten times fewer people the top items' counts are near the thresholds, and a two-step discovery
    with fewer items per person finds more of them."""
    plan = plan_discovery(declaration(people=1_000_000, row_length=1.0, expected_items=5_000), "lpa", 1.0,
                          {"bound": 10})
    assert plan.route == ONE_PASS and plan.share == 1.0 and plan.discovery_bound == 10
    fewer = plan_discovery(declaration(people=100_000, row_length=1.0, expected_items=5_000), "lpa", 1.0,
                           {"bound": 10})
    assert fewer.route == TWO_STEP and fewer.discovery_bound < 10


def test_the_plan_expects_what_the_stand_in_gives():
    """The plan's expected number of listed items is the stand-in's, not a guess: a stand-in drawn with
    the same facts, discovered 20 times, lists about that many (within 10%)."""
    from dpdesk.evaluation.standin import DeclaredFacts, synthetic_incidence
    from dpdesk.mechanisms.discovery import discover_items

    facts = dict(people=20_000, row_length=6.0, expected_items=2_000, skew=1.0)
    plan = plan_discovery(declaration(**facts, share=0.5, bound=3), "lpa", 1.0, {"bound": 12})
    standin = synthetic_incidence(DeclaredFacts(rows=20_000, items=2_000, mean_items_per_person=6.0, skew=1.0),
                                  seed=3)
    found = [discover_items(standin, plan.discovery_epsilon, 1e-6, 3, seeded(k)).size for k in range(20)]
    assert np.mean(found) == pytest.approx(plan.chosen.expected_items, rel=0.1)


# --- the release path ---------------------------------------------------------------------------------

RETAIL = ["--mechanism", "lpa", "--bound", "20", "--items", "discover", "--delta", "1e-6"]


def test_dry_run_shows_the_threshold_and_the_chances_and_spends_nothing(tmp_path, dpdesk_home, capsys):
    """Nothing is read (the file does not even exist), drawn or recorded; the JSON has the threshold,
    the route and the stand-in's expectations, the same as the GUI's ``workflow.discovery_plan``."""
    missing = str(tmp_path / "not-there.dat")
    assert cli.main(["release", missing, "--epsilon", "0.5", *RETAIL, "--people", "88000",
                     "--typical-row-length", "10", "--dry-run", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    plan = discovery_plan(parse_items_option("discover", delta=1e-6, facts={"people": 88000, "row_length": 10.0}),
                          "lpa", 0.5, {"bound": 20})
    assert shown["dry_run"] and shown["discovery"] == json.loads(json.dumps(plan.to_json()))
    assert shown["discovery"]["threshold"] == plan.threshold > 0
    assert 0 <= shown["discovery"]["standin"]["chance_nothing"] <= 1 and shown["epsilon"] == 0.5
    assert Ledger.open().totals() == {}
    assert cli.main(["release", missing, "--epsilon", "0.5", *RETAIL, "--dry-run"]) == 0
    text = capsys.readouterr().out
    assert f"reaches {plan.threshold:,}" not in text or plan.assumed  # the assumed facts differ from the JSON's
    assert "assumed" in text and "would spend ε = 0.5" in text and "nothing was read" in text


def test_a_one_pass_release_spends_all_of_epsilon_in_one_step_with_its_delta(tmp_path, dpdesk_home, data_dir,
                                                                             capsys):
    assert cli.main(["release", str(data_dir / "retail.dat.gz"), "--epsilon", "1", *RETAIL,
                     "--discover-route", "one-pass", "--raw", "--out", str(tmp_path / "out")]) == 0
    assert "one pass" in capsys.readouterr().err  # told before anything was spent
    metadata = json.loads((tmp_path / "out" / "release.json").read_text())
    (step,) = metadata["budget"]
    tau, achieved = discovery_threshold(1.0, 1e-6, 20)
    assert step["epsilon"] == 1.0 and step.get("delta", 0.0) == pytest.approx(achieved) and "one pass" in step["step"]
    assert metadata["domain"]["route"] == ONE_PASS and metadata["domain"]["threshold"] == tau
    import pandas as pd

    table = pd.read_csv(tmp_path / "out" / "release.csv", dtype={"item": str})
    assert len(table) > 100 and (table["noisy_count"] >= tau).all()  # the raw counts that passed τ
    entry = Ledger.open().entries()[-1]
    assert entry.kind == "release" and entry.epsilon == 1.0 and entry.delta == pytest.approx(achieved)
    assert any("one pass" in note for note in metadata["notes"])


def test_a_discovery_that_finds_nothing_was_announced_and_is_charged(tmp_path, dpdesk_home, capsys):
    """Five people with one item each: the dry run says beforehand that nothing is likely to pass; the
    release then stops, says what the chance was, and its discovery's ε and δ are recorded."""
    tiny = tmp_path / "tiny.dat"
    tiny.write_text("a\nb\nc\nd\ne\n")
    args = ["release", str(tiny), "--mechanism", "lpa", "--epsilon", "0.5", "--bound", "1", "--items", "discover",
            "--delta", "1e-6", "--people", "5", "--typical-row-length", "1", "--expected-items", "5"]
    assert cli.main([*args, "--dry-run"]) == 0
    shown = capsys.readouterr().out
    assert "chance that none is listed is above 99.99%" in shown
    plan = discovery_plan(parse_items_option("discover", delta=1e-6, facts={"people": 5, "row_length": 1.0,
                                                                            "expected_items": 5}),
                          "lpa", 0.5, {"bound": 1})
    assert cli.main([*args, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "No item passed" in err and "recorded in the budget ledger" in err and "a stand-in gave this" in err
    entry = Ledger.open().entries()[-1]
    assert entry.kind == "charged" and entry.epsilon == pytest.approx(plan.discovery_epsilon) and entry.delta > 0


def test_declaring_settings_that_contradict_the_route_is_refused_before_reading(tmp_path, dpdesk_home, capsys):
    for extra, message in ((["--discover-route", "one-pass", "--discover-share", "0.3"], "Give one of them"),
                           (["--discover-route", "one-pass", "--discover-bound", "3"], "Give one of them"),
                           (["--skew", "9"], "--skew must be"), (["--people", "0"], "--people must be")):
        assert cli.main(["release", str(tmp_path / "nothing.dat"), "--epsilon", "1", *RETAIL, *extra,
                         "--out", str(tmp_path / "o")]) == 2
        assert message in capsys.readouterr().err
    assert cli.main(["release", str(tmp_path / "nothing.dat"), "--epsilon", "1", "--mechanism", "lpa", "--bound", "2",
                     "--items", "range:5", "--people", "10", "--out", str(tmp_path / "o")]) == 2
    assert "--people is only used with --items discover" in capsys.readouterr().err
    assert not (tmp_path / "o").exists() and Ledger.open().totals() == {}


def test_the_neighbour_test_for_a_one_pass_release(tmp_path, dpdesk_home):
    """D and D′ = D plus one person holding an item nobody else has: with the same secure byte stream
    the public files differ only in noisy values, the listed items (noisy), hashes and dates — the
    threshold, route, ε, δ and every statement are the same, and the secret item is not listed."""
    from tests.test_neighbours import SECRET, neighbours, published
    import os
    from tests.privacy.test_secure_source import ByteStream
    from dpdesk.workflow import release_to_files

    d, d_plus = neighbours()
    results = []
    for name, data in (("d", d), ("d_plus", d_plus)):
        os_urandom = os.urandom
        os.urandom = ByteStream(b"same")
        try:
            release_to_files(data, "lpa", 1.0, {"bound": 2}, tmp_path / name, dataset="clinic", reports=("html",),
                             items=DomainDeclaration("discovered", delta=0.2, route="one-pass"))
        finally:
            os.urandom = os_urandom
        out = published(tmp_path / name)
        # which items passed, and so how many, is the noise's: their number is written as N
        out["domain"] = {k: v for k, v in out["domain"].items() if k != "items"}
        out.pop("items", None)
        for key in ("domain", "public_facts"):
            out[key] = re.sub(r"\b\d[\d,]*\b(?= items?\b)|(?<=\(d\)\": )\d+", "N", json.dumps(out[key]))
        results.append(out)
    first, second = results
    for key in first:
        assert first[key] == second[key], key
    assert SECRET not in (tmp_path / "d_plus" / "release.csv").read_text()
