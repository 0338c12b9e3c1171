"""Shoaran, Thomo & Weber's examples 1–3, reproduced exactly."""

import json
import math
import subprocess
import sys

import pytest

from dpdesk.errors import ParameterError
from dpdesk.privacy import planner


def test_example_1_single_count_query():
    z = planner.noise_magnitude(0.01, 0.10)
    assert z[0] == pytest.approx(230.2585, abs=1e-3)  # "≈ 230"
    mta = planner.minimum_true_answer(0.01, 0.10, 0.10)
    assert mta[0] == pytest.approx(2302.585, abs=1e-2)  # "MTA = 230 / 10% = 2300"


def test_example_2_two_queries_identical_scale():
    z = planner.noise_magnitude(0.01, 0.10, sensitivity=2)
    assert z[0] == pytest.approx(460.517, abs=1e-2)  # "≈ 460"
    same = planner.noise_magnitude(0.01, 0.10, index=[1, 1])  # uniform index: λ = 200 for both
    assert same == pytest.approx([460.517, 460.517], abs=1e-2)
    assert planner.minimum_true_answer(0.01, 0.10, 0.10, sensitivity=2)[0] == pytest.approx(4605.17, abs=0.1)


def test_example_3_query_index():
    assert planner.index_constant(0.01, 1.0, [1, 10]) == pytest.approx(110.0)  # α = 110
    assert planner.noise_scales(0.01, 1.0, [1, 10]) == pytest.approx([110.0, 1100.0])
    assert planner.noise_magnitude(0.01, 0.10, index=[1, 10]) == pytest.approx([253.28, 2532.84], abs=0.01)
    mta = planner.minimum_true_answer(0.01, 0.10, 0.10, index=[1, 10])
    assert mta == pytest.approx([2532.84, 25328.44], abs=0.01)
    assert round(mta[0]) == 2533 and round(mta[1]) == 25328


def test_epsilon_needed_is_the_inverse():
    eps = planner.epsilon_needed(2302.585, 0.10, 0.10)
    assert eps == pytest.approx(0.01, rel=1e-6)
    eps_index = planner.epsilon_needed(3000, 0.10, 0.10, index=[1, 10])
    assert max(planner.minimum_true_answer(eps_index, 0.10, 0.10, index=[1, 10])) == pytest.approx(3000)


def test_odds_in_plain_words():
    probability, odds = planner.odds_after(math.log(3))
    assert odds == pytest.approx(3.0) and probability == pytest.approx(0.75)  # DPSense §5.1: 1:1 → 3:1
    assert planner.odds_after(math.log(1.5))[1] == pytest.approx(1.5)


@pytest.mark.parametrize("kwargs", [dict(probability=0), dict(probability=1.5), dict(relative_error=0)])
def test_bad_values(kwargs):
    args = dict(epsilon=0.1, probability=0.1, relative_error=0.1)
    args.update(kwargs)
    with pytest.raises(ParameterError):
        planner.minimum_true_answer(**args)
    with pytest.raises(ParameterError):
        planner.noise_magnitude(0.1, 0.1, index=[1, -2])


def test_cli_plan_json():
    out = subprocess.run([sys.executable, "-m", "dpdesk.cli", "plan", "--epsilon", "0.01", "--probability", "0.1",
                          "--relative-error", "0.1", "--index", "1,10", "--answer", "30000", "--json"],
                         capture_output=True, text=True, check=True)
    result = json.loads(out.stdout)
    assert result["noise_magnitude"] == pytest.approx([253.28, 2532.84], abs=0.01)
    assert result["minimum_true_answer"] == pytest.approx([2532.84, 25328.44], abs=0.01)
    assert result["epsilon_needed"] == pytest.approx(0.01 * 25328.436 / 30000, rel=1e-6)
    bad = subprocess.run([sys.executable, "-m", "dpdesk.cli", "plan", "--epsilon", "0", "--probability", "0.1",
                          "--relative-error", "0.1"], capture_output=True, text=True)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
