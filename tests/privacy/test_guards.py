"""Privacy rules that no noise scale shows: the groups and group size GS publishes depend on private
values only, bounding keeps at most Δ items per person, and private discovery lists at most k
labels of any one person. Each test plants nothing itself; tests/mutants plants the bugs."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import dpdesk
from dpdesk.mechanisms.discovery import discover_items
from dpdesk.mechanisms import gs
from dpdesk.privacy.bounding import bounded_counts, prepare_bound, truncate
from dpdesk.privacy.randomness import SeededRandom


def seeded(seed: int) -> SeededRandom:
    return SeededRandom(np.random.default_rng(seed), seed=seed)


def single_items(counts) -> dpdesk.Dataset:
    """People with one item each, giving these counts."""
    items = np.repeat(np.arange(len(counts)), counts)
    matrix = sp.csr_matrix((np.ones(items.size, np.uint8), items, np.arange(items.size + 1)),
                           shape=(items.size, len(counts)))
    return dpdesk.from_matrix(matrix)


def fixed_sample(monkeypatch, noisy: np.ndarray) -> None:
    """Every GS mechanism's noisy sample t_s becomes ``noisy``, whatever the data (the counts stay true)."""
    def noisy_sample(self, data, prepared, epsilon, params, source):
        return data.column_counts.astype(np.int64), noisy.copy(), noisy.copy(), {}

    monkeypatch.setattr(gs._SampledGrouping, "noisy_sample", noisy_sample)


def recorded_orders(monkeypatch) -> list:
    orders = []
    original = gs.release_grouped

    def recording(counts, order, w, average_scale, source):
        orders.append((np.array(order), int(w)))
        return original(counts, order, w, average_scale, source)

    monkeypatch.setattr(gs, "release_grouped", recording)
    return orders


@pytest.mark.parametrize("mechanism_id", ["gs-s-row", "gs-s-col", "gs"])
def test_gs_groups_follow_the_noisy_sample_never_the_counts(mechanism_id, monkeypatch):
    """GS Fig. 4/6: items are grouped in the order of t_s (ties at random). Here t_s ranks the items
    the opposite way to their true counts: a grouping that read the counts would put them the other
    way round."""
    counts = [90, 70, 50, 30, 20, 10]
    noisy = np.array([1, 2, 3, 4, 5, 6], dtype=np.int64)
    fixed_sample(monkeypatch, noisy)
    orders = recorded_orders(monkeypatch)
    data = single_items(counts)
    for seed in range(5):
        dpdesk.release(data, mechanism_id, epsilon=1.0, bound=2, rng=seed, diagnostics=False)
    assert len(orders) == 5
    for order, _ in orders:
        assert order.tolist() == [5, 4, 3, 2, 1, 0]  # t_s descending


def test_gs_group_size_is_chosen_from_private_values_only(monkeypatch):
    """w* is a function of t_s, the noisy total Ñ and fresh randomness (GS Theorem 6): two datasets
    with the same t_s and the same total but different counts give the same w*, draw for draw."""
    noisy = np.array([40, 38, 12, 11, 10, 3, 2, 1], dtype=np.int64)
    fixed_sample(monkeypatch, noisy)
    first = single_items([60, 10, 10, 10, 10, 10, 10, 10])  # both hold 130 items, spread differently
    second = single_items([10, 25, 10, 20, 25, 10, 20, 10])
    for estimator in ("calibrated", "paper"):
        for seed in range(4):
            a, b = (dpdesk.release(data, "gs", epsilon=1.0, bound=2, rng=seed, estimator=estimator)
                    for data in (first, second))
            assert a.report["chosen_group_size"] == b.report["chosen_group_size"]
            assert np.array_equal(a.diagnostics["estimated_l1"].data["estimated_l1"],
                                  b.diagnostics["estimated_l1"].data["estimated_l1"])


def test_bounding_keeps_at_most_delta_items_of_anyone():
    """After bounding, every person contributes min(their items, Δ): the sensitivity is Δ."""
    rng = np.random.default_rng(1)
    lengths = rng.integers(0, 12, size=300)
    rows = [rng.choice(20, size=int(k), replace=False) for k in lengths]
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    matrix = sp.csr_matrix((np.ones(int(lengths.sum()), np.uint8), np.concatenate(rows), indptr), shape=(300, 20))
    for bound in (1, 4, 11):
        prepared = prepare_bound(matrix, bound)
        for seed in range(3):
            assert bounded_counts(matrix, prepared, seeded(seed)).sum() == np.minimum(lengths, bound).sum()
            truncated, cut = truncate(matrix, bound, seeded(seed))
            assert np.array_equal(np.diff(truncated.indptr), np.minimum(lengths, bound))
            assert truncated.nnz == np.minimum(lengths, bound).sum()
            assert cut == int(np.sum(lengths > bound))


def test_discovery_lists_at_most_k_labels_of_one_person():
    """A person holding 50 labels nobody else has gets at most k = ``bound`` of them counted (the
    rest are cut before counting), so at most k can ever be listed — here with δ large enough that
    each counted one is listed one time in ten."""
    others = [[j % 30, (j + 1) % 30] for j in range(600)]  # 30 common labels, 40 people each
    loner = list(range(30, 80))
    rows = others + [loner]
    indptr = np.concatenate([[0], np.cumsum([len(r) for r in rows])])
    matrix = sp.csr_matrix((np.ones(int(indptr[-1]), np.uint8), np.concatenate(rows), indptr), shape=(len(rows), 80))
    data = dpdesk.from_matrix(matrix, [f"label{j}" for j in range(80)])
    private = {f"label{j}" for j in loner}
    source = seeded(3)
    listed_private = []
    for _ in range(300):
        domain = discover_items(data, 1.0, 0.2, 2, source)
        listed_private.append(len(private & set(domain.labels)))
    assert max(listed_private) <= 2
    assert sum(listed_private) > 0  # δ is large enough that the loner's counted labels do show
