"""The dataset fingerprint (v2): the same content gives the same value whatever the row order,
the item order on a line, the file format or the block size; any change of content changes it."""

import numpy as np
import pytest

import dpdesk
import dpdesk.data.fingerprint as fingerprint_module


def fingerprint_of(rows, labels=None, values=None):
    d = max((max(r) for r in rows if r), default=-1) + 1
    matrix = np.zeros((len(rows), d))
    for i, row in enumerate(rows):
        for k, j in enumerate(row):
            matrix[i, j] = 1 if values is None else values[i][k]
    return dpdesk.from_matrix(matrix, item_labels=labels).fingerprint


ROWS = [[0, 1], [1, 2], [2], [], [0, 1]]


def test_row_order_and_label_order_do_not_matter():
    base = fingerprint_of(ROWS, labels=["a", "b", "c"])
    assert fingerprint_of(ROWS[::-1], labels=["a", "b", "c"]) == base
    # the same data with its columns stored in another order (labels move with them)
    swapped = [[{0: 2, 1: 1, 2: 0}[j] for j in row] for row in ROWS]
    assert fingerprint_of(swapped, labels=["c", "b", "a"]) == base


@pytest.mark.parametrize("changed", [
    [[0, 2], [1, 1 + 0], [2], [], [0, 1]],  # an item moves to another person: column counts stay the same
    [[0, 1], [1, 2], [2], [0, 1]],  # one person with no items fewer
    [[0, 1], [1, 2], [2], [], [0, 1], [0, 1]],  # one more copy of a person
    [[0, 1], [1, 2], [2, 0], [], [0, 1]],  # one more item
])
def test_any_change_of_content_changes_it(changed):
    assert fingerprint_of(changed, labels=["a", "b", "c"]) != fingerprint_of(ROWS, labels=["a", "b", "c"])


def test_swapping_items_between_people_keeps_counts_but_changes_it():
    one = fingerprint_of([[0, 1], [2, 3]], labels=list("abcd"))
    other = fingerprint_of([[0, 2], [1, 3]], labels=list("abcd"))
    assert one != other


def test_labels_and_values_count():
    assert fingerprint_of(ROWS, labels=["a", "b", "c"]) != fingerprint_of(ROWS, labels=["a", "b", "x"])
    values = [[2, 3], [1, 1], [4], [], [2, 3]]
    assert fingerprint_of(ROWS, ["a", "b", "c"], values) != fingerprint_of(ROWS, ["a", "b", "c"])
    assert fingerprint_of(ROWS, ["a", "b", "c"], values) == fingerprint_of(ROWS[::-1], ["a", "b", "c"], values[::-1])


def test_block_size_does_not_matter(monkeypatch, data_dir):
    data = dpdesk.load(data_dir / "chess.dat.gz")
    whole = data.fingerprint
    monkeypatch.setattr(fingerprint_module, "FINGERPRINT_BLOCK", 7)
    again = dpdesk.load(data_dir / "chess.dat.gz")
    assert again.fingerprint == whole
    shuffled = dpdesk.from_matrix(data.matrix[np.random.default_rng(1).permutation(data.n_rows)],
                                  item_labels=list(data.item_labels))
    assert shuffled.fingerprint == whole
