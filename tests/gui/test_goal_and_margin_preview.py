"""What matters most, asked in words on the Configure page, and the margins a release would publish, previewed
on a stand-in on the Configure and Release pages before anything is spent (issue 28)."""

import pytest
from PySide6.QtCore import Qt

import dpdesk
from dpdesk.data.domain import DomainDeclaration
from dpdesk.evaluation.recommend import recommend
from dpdesk.gui.main_window import MainWindow
from dpdesk.paths import sample_path
from dpdesk.privacy.ledger import Ledger

from .conftest import WORK

SAMPLE_ITEMS = 169  # the Groceries sample's product list, stated public below


@pytest.fixture
def window(qtbot, dpdesk_home):
    from dpdesk.gui.app import make_app

    make_app()
    w = MainWindow()
    qtbot.addWidget(w)
    w.show()
    w.state.set_dataset(dpdesk.load(sample_path()), {"path": str(sample_path())}, "groceries",
                        DomainDeclaration("public-data"))
    w.steps.setCurrentRow(1)
    yield w
    w.state.dirty = False


def answer(page, kind: str) -> None:
    page.goal_box.choice.setCurrentIndex(page.goal_box.choice.findData(kind))


def test_the_goal_is_asked_in_words_and_decides_the_recommendation(window):
    page, state = window.configure_page, window.state
    box = page.goal_box
    assert box.title() == "What matters most in this release?"
    assert [box.choice.itemText(i) for i in range(box.choice.count())] == [
        "Every count equally", "The largest counts", "Counts above a number, within a percentage"]
    assert not box.k.isVisibleTo(box) and not box.count.isVisibleTo(box)  # only the answer's own numbers
    page.bound.setValue(20)
    assert state.goal == "all" and page.advice.goal.kind == "all"
    answer(page, "largest")
    assert box.k.isVisibleTo(box) and not box.count.isVisibleTo(box)
    assert state.goal == "largest:100"
    for goal in ("largest:100", "target:1000,10"):
        if goal.startswith("target"):
            answer(page, "target")
            box.count.setValue(1000)
            box.percent.setValue(10)
        assert state.goal == goal
        expected = recommend("incidence", SAMPLE_ITEMS, state.epsilon, 20, goal=goal)
        assert (page.advice.mechanism, page.advice.goal) == (expected.mechanism, expected.goal)
        assert expected.goal.text in page.recommendation.reasons.text()
    box.k.setValue(10)  # not shown for a target: the goal stays the target
    assert state.goal == "target:1000,10"


def test_the_comparison_measures_the_goal_first(window):
    page, compare = window.configure_page, window.compare_page
    assert compare.metric.currentData() == "mae"
    answer(page, "largest")
    page.goal_box.k.setValue(50)
    assert compare.metric.currentData() == "topk_mre" and compare.k.value() == 50
    answer(page, "target")
    assert compare.metric.currentData() == "mre"


def test_the_goal_is_one_of_the_datasets_declarations_and_in_the_project(window, tmp_path):
    page, state = window.configure_page, window.state
    answer(page, "largest")
    project = state.to_project()
    assert project.compare["goal"] == "largest:100"
    state.set_dataset(dpdesk.load(sample_path()), {"path": str(sample_path())}, "other people",
                      DomainDeclaration("public-data"))
    assert state.goal == "all" and page.goal_box.choice.currentData() == "all"  # a new dataset starts afresh
    state.apply_project(project)
    state.set_dataset(dpdesk.load(sample_path()), {"path": str(sample_path())}, None,
                      DomainDeclaration("public-data"))
    assert state.goal == "largest:100" and page.goal_box.choice.currentData() == "largest"


def test_the_margins_are_previewed_on_a_stand_in_before_anything_is_spent(window, qtbot):
    page, state = window.configure_page, window.state
    page.bound.setValue(20)
    page.select("gs")
    preview = page.margin_preview
    assert not preview.text.isVisibleTo(page)
    qtbot.mouseClick(preview.button, Qt.LeftButton)
    qtbot.waitUntil(lambda: "Preview on a stand-in" in preview.text.text(), timeout=WORK)
    text = preview.text.text()
    assert f"about 10 of {SAMPLE_ITEMS:,} items each" in text  # Δ/2 without a declared typical row
    assert "margin of error (95%) would run from" in text and "nothing was spent" in text
    page.typical.setValue(4)  # the settings changed: the preview was for the ones before
    assert not preview.text.isVisibleTo(page)
    assert Ledger.open().totals() == {}  # nothing spent
    # the Release page previews the mechanism about to run, at its ε
    window.steps.setCurrentRow(4)
    release = window.release_page
    release.mechanism.setCurrentIndex(release.mechanism.findData("lpa"))
    qtbot.mouseClick(release.margin_preview.button, Qt.LeftButton)
    qtbot.waitUntil(lambda: "Preview on a stand-in" in release.margin_preview.text.text(), timeout=WORK)
    assert "about 4 of 169 items each" in release.margin_preview.text.text()
    assert Ledger.open().totals() == {}


def test_a_mechanism_that_withholds_margins_says_so_in_the_preview(window, qtbot):
    page = window.configure_page
    page.select("alpa")
    page.typical.setValue(4)
    qtbot.mouseClick(page.margin_preview.button, Qt.LeftButton)
    qtbot.waitUntil(lambda: "would publish no margin of error" in page.margin_preview.text.text(), timeout=WORK)


def test_no_preview_without_a_declared_number_of_items(window, qtbot):
    page, state = window.configure_page, window.state
    state.set_publication("groceries", DomainDeclaration("discovered", delta=1e-6, share=0.1))
    page.select("lpa")
    qtbot.mouseClick(page.margin_preview.button, Qt.LeftButton)
    assert "not known beforehand when the list is found privately" in page.margin_preview.text.text()
