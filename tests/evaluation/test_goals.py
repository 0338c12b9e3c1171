"""The steward's goals for the recommendation (issue 28): parsed from the CLI and the GUI's answers alike, and
measured on a release against the truth for the rule's learning."""

import math

import numpy as np
import pytest

from dpdesk.errors import ParameterError
from dpdesk.evaluation.goals import (Goal, comparison_metric, goal_from_answers, goal_losses, learnt_k, parse_goal,
                                     rule_goals)


def test_goals_parse_and_say_what_they_are():
    assert parse_goal("all") == Goal() and parse_goal(None) == Goal()
    assert parse_goal("largest") == Goal("largest", k=100) and parse_goal("LARGEST:20").k == 20
    target = parse_goal("target:1000,10%")
    assert (target.kind, target.count, target.percent) == ("target", 1000.0, 10.0)
    assert target.text == "counts of at least 1,000 within ±10%" and target.rule_key == "target"
    assert parse_goal("largest:20").rule_key == "largest:10" and parse_goal("largest:60").rule_key == "largest:100"
    assert learnt_k(1) == 10 and learnt_k(10_000) == 100
    assert goal_from_answers("target", count=50, percent=5) == parse_goal("target:50,5")
    assert goal_from_answers("largest", k=7) == parse_goal("largest:7") and goal_from_answers("all") == Goal()
    assert set(rule_goals()) == {"all", "largest:10", "largest:100", "target"}


@pytest.mark.parametrize("text,words", [("best", "Unknown goal 'best'"), ("largest:0", "at least 1"),
                                        ("largest:x", "at least 1"), ("target:10", "target:N,R"),
                                        ("target:10,0", "above 0"), ("target:0,5", "at least 1"),
                                        ("target:10,200", "at most 100"), ("all:3", "Unknown goal")])
def test_a_mistyped_goal_is_refused_in_words(text, words):
    with pytest.raises(ParameterError, match=words):
        parse_goal(text)


def test_every_goal_is_measured_against_the_truth():
    true = np.array([1000.0, 500, 100, 100, 100, 10, 0] + [1] * 200)
    noisy = true.copy()
    noisy[0], noisy[1] = 900, 550  # 10% off each
    losses = goal_losses(noisy, true)
    assert losses["all"] == pytest.approx(150 / true.size)
    assert losses["largest:10"] == pytest.approx(0.2 / 10)  # the 10 largest: two 10% errors, the rest exact
    assert losses["target:100,10"] == 0.0  # within 10% (inclusive): every count of at least 100
    assert losses["target:100,5"] == pytest.approx(2 / 5)
    assert math.isnan(losses["target:1000,10"])  # one count of at least 1,000: no case


def test_the_comparison_measure_follows_the_goal():
    assert comparison_metric("all") == ("mae", {})
    assert comparison_metric("largest:50") == ("topk_mre", {"k": 50})
    assert comparison_metric("target:100,10") == ("mre", {})
