"""Metrics and the comparison runner."""

import threading
import time

import numpy as np
import pytest

import dpdesk
from dpdesk.evaluation import metrics
from dpdesk.evaluation.compare import Entry, run_comparison
from dpdesk.tasks import CancelToken


def test_metrics_by_hand():
    true = np.array([100, 50, 10, 0, 0])
    noisy = np.array([110, 40, 10, 3, -2])
    assert metrics.mae(noisy, true) == pytest.approx((10 + 10 + 0 + 3 + 2) / 5)
    # sanity bound s = 5: relative errors 10/100, 10/50, 0/10, 3/5, 2/5
    assert metrics.mre(noisy, true, 5) == pytest.approx((0.1 + 0.2 + 0 + 0.6 + 0.4) / 5)
    result = metrics.count_metrics(noisy, true, n_rows=5000, k=2)
    assert result["topk_mae"] == pytest.approx(10.0)
    assert result["topk_accuracy"] == 1.0
    assert metrics.topk_accuracy(np.array([0, 50, 100, 1, 2]), true, 2) == 0.5
    assert metrics.sanity_bound(88162) == pytest.approx(88.162)
    assert metrics.sanity_bound(100) == 1.0


@pytest.fixture(scope="module")
def chess():
    from tests.conftest import DATA

    return dpdesk.load(DATA / "chess.dat.gz")


def test_runner_table_and_intervals(chess, monkeypatch):
    from dpdesk.mechanisms.counts import LPA

    calls = []
    original = LPA.prepare

    def counting_prepare(self, *args, **kwargs):
        calls.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(LPA, "prepare", counting_prepare)
    seen = []
    comparison = run_comparison(chess, [Entry("lpa", {"bound": 37}), Entry("alpa")], [0.1, 1.0], 5, seed=3,
                                on_result=seen.append)
    assert len(comparison.results) == 2 * 2 * 5 == len(seen)
    assert len(calls) == 1  # LPA prepared once for both ε and all repeats (the bound is its only input)
    summary = comparison.summary.set_index(["label", "epsilon", "metric"])
    row = summary.loc[("lpa", 1.0, "mae")]
    assert row["ci_low"] < row["mean"] < row["ci_high"]
    # LPA's error shrinks ten-fold from ε = 0.1 to 1
    ratio = summary.loc[("lpa", 0.1, "mae")]["mean"] / row["mean"]
    assert 7 < ratio < 13
    again = run_comparison(chess, [Entry("lpa", {"bound": 37}), Entry("alpa")], [0.1, 1.0], 5, seed=3)
    assert again.results["mae"].tolist() == comparison.results["mae"].tolist()  # seeded: reproducible


def test_cancel_stops_within_a_second(chess):
    cancel = CancelToken()
    done = []
    result = {}

    def work():
        result["comparison"] = run_comparison(chess, [Entry("lpa", {"bound": 37})], [0.5], 100_000, seed=1,
                                              cancel=cancel, on_result=done.append)

    thread = threading.Thread(target=work)
    thread.start()
    time.sleep(0.5)
    stopped_at = time.perf_counter()
    cancel.cancel()
    thread.join(timeout=5)
    assert not thread.is_alive()
    assert time.perf_counter() - stopped_at < 1.0
    assert result["comparison"].cancelled and 0 < len(done) < 100_000


def test_topk_accuracies_equal_topk_accuracy_for_every_k():
    """The Compare page's one-ranking form gives exactly the per-k answers, ties included."""
    import numpy as np

    from dpdesk.evaluation.metrics import topk_accuracies, topk_accuracy

    rng = np.random.default_rng(1)
    for _ in range(300):
        n = int(rng.integers(1, 80))
        true = rng.integers(0, 6, n).astype(float)  # many ties
        noisy = true + rng.integers(-3, 4, n)
        ks = [1, 2, 3, 5, 10, 20, 50, 100]
        assert topk_accuracies(noisy, true, ks) == [topk_accuracy(noisy, true, k) for k in ks]
