"""What the sparse summaries' reports say matches the form that was published (review of the public
reports, §§2, 3, 5, 7, 12): what a cell that is not listed means, the mechanism's summary sentence,
"cells listed", the sketch's signed form, the margin's meaning for selected cells, and error
texts that mention only what the method has (no weights, no thresholds, no selection)."""

from __future__ import annotations

import numpy as np
import pytest

import dpdesk
from dpdesk.mechanisms.publish import publish, unrounded_release

SETTINGS = {"geometric": {}, "filter": {"threshold": 3}, "filter2": {"threshold": 3}, "threshold": {"tau": 8.0},
            "priority": {"size": 40}, "filter-threshold": {"threshold": 2, "tau": 6.5},
            "filter-priority": {"threshold": 2, "size": 40}, "dyadic": {"method": "filter2", "threshold": 30},
            "sketch": {"width": 64, "depth": 2}}
WEIGHTED = ("threshold", "priority", "filter-threshold", "filter-priority")


def data():
    rng = np.random.default_rng(5)
    cells = np.sort(rng.choice(4000, size=60, replace=False))
    return dpdesk.from_cells(cells, rng.integers(1, 30, size=60), 4000)


def both_forms(mechanism_id: str, seed: int = 3, **extra):
    release = publish(dpdesk.release(data(), mechanism_id, epsilon=0.5, rng=seed, **{**SETTINGS[mechanism_id],
                                                                                        **extra}))
    return release, unrounded_release(release)


def text(release) -> str:
    report = release.report
    return " ".join([report["mechanism"]["summary"], *report["publication"]["notes"], *report["notes"],
                     report["publication"]["statement"], report["publication"]["margin95"],
                     (report.get("expected_error") or {}).get("text", "")])


@pytest.mark.parametrize("mechanism_id", list(SETTINGS))
def test_cells_listed_is_what_each_form_publishes(mechanism_id):
    whole, raw = both_forms(mechanism_id)
    if mechanism_id == "sketch":
        assert whole.report["publication"]["form"] == "whole numbers that may be below 0"
        assert raw.report["publication"]["form"] == "raw values"
        return
    assert whole.report["summary"]["cells listed"] == len(whole.cells)
    assert raw.report["summary"]["cells listed"] == len(raw.cells)
    before = "cells in the summary before publication (raw form)"
    assert raw.report["summary"].get(before) is None
    if len(whole.cells) != len(raw.cells):
        assert whole.report["summary"][before] == len(raw.cells)
    if mechanism_id in WEIGHTED:  # every sampled cell stays
        assert len(whole.cells) == len(raw.cells)
    assert whole.report["publication"]["form"] == "whole numbers ≥ 0"
    # (checked after the raw copy was made: rewriting its report left the whole form's alone)


def test_filter2_whole_form_does_not_promise_negative_cells():
    whole, raw = both_forms("filter2")
    assert np.any(raw.cells.values < 0) and np.all(whole.cells.values >= 3)
    assert "negative ones too" not in text(whole) and "negative ones too" in raw.report["mechanism"]["summary"]
    absent = whole.report["publication"]["notes"][0]
    assert "not listed" in absent and "−θ or below" in absent
    assert "−θ" not in raw.report["publication"]["notes"][0]


def test_geometric_says_one_thing_about_its_listing():
    whole, raw = both_forms("geometric")
    for release, rule in ((whole, "0 or below"), (raw, "exactly 0")):
        assert "lists them all" not in text(release)
        assert rule in release.report["publication"]["notes"][0]
    assert "above 0" in whole.report["mechanism"]["summary"] and "not 0" in raw.report["mechanism"]["summary"]
    assert "is 0 are not listed" not in " ".join(whole.report["notes"])


def test_priority_lists_exactly_s_cells_in_both_forms():
    whole, raw = both_forms("priority")
    assert len(whole.cells) == len(raw.cells) == 40 == whole.report["summary"]["cells listed"]
    assert "exactly s" in whole.report["mechanism"]["summary"]


@pytest.mark.parametrize("mechanism_id", ["geometric", "filter", "filter2"])
def test_methods_without_weights_or_thresholds_do_not_mention_them(mechanism_id):
    whole, _ = both_forms(mechanism_id)
    assert "weight" not in text(whole).lower()
    if mechanism_id == "geometric":
        assert "threshold" not in whole.report["public_facts"]["non-empty cells n and people ‖M‖₁"]
        assert "select" not in whole.report["expected_error"]["text"]


@pytest.mark.parametrize("mechanism_id", list(SETTINGS))
def test_no_pure_epsilon_claim_for_the_whole_release(mechanism_id):
    whole, _ = both_forms(mechanism_id)
    notes = " ".join(whole.report["notes"])
    assert "δ = 0" not in notes and "pure ε" in notes and "step is pure ε-differentially private" in notes


@pytest.mark.parametrize("mechanism_id", list(SETTINGS))
def test_the_margin_meaning_says_when_cells_were_selected(mechanism_id):
    """Cells listed because their noisy counts were large get no margin (none would hold: issue 28), and the
    publication says why; with noise on every cell and none selected the margin covers the whole error."""
    whole, raw = both_forms(mechanism_id)
    for release in (whole, raw):
        publication = release.report["publication"]
        selected = mechanism_id not in ("geometric", "sketch")
        assert (release.margin95 is None) == selected
        if selected:
            assert publication["margin95"].startswith("Empty") and "chosen because their noisy counts were large" \
                in publication["margin_withheld"]
        else:
            assert "lies within ±margin95 of the published value at least 95% of the time" in publication["margin95"]
            assert "whole error" in publication["margin_covers"]


def test_dyadic_sampling_keeps_signed_weights():
    whole, raw = both_forms("dyadic", method="threshold", tau=40.0, threshold=None)
    assert len(whole.cells) == len(raw.cells) and np.any(whole.cells.weights < 0)
    assert np.all(whole.cells.values >= 0)
    assert "range" in whole.report["publication"]["notes"][0]
