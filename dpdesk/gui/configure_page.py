"""Configure: the recommended mechanism and why, the mechanisms grouped by what they do for the
steward (full names, the paper one click away), the declared facts (Δ, a typical row length),
and ε in words — named levels with their odds, a slider whose ends say what they mean, and an
accuracy-first entry that asks Shoaran et al.'s planner for ε.

The recommendation itself (:mod:`dpdesk.evaluation.recommend`) and the accuracy arithmetic
(:mod:`dpdesk.privacy.planner`) live outside the GUI; this page only gathers the declared
inputs for them — never a statistic of the data."""

from __future__ import annotations

import math

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtWidgets import (QCheckBox, QComboBox, QFileDialog, QFormLayout, QFrame, QGridLayout,
                               QGroupBox, QHBoxLayout, QLabel, QLineEdit, QPushButton, QScrollArea, QSizePolicy,
                               QSlider, QSpinBox, QToolButton, QVBoxLayout, QWidget)

from .. import mechanisms as registry
from ..data.domain import HOW_DISCOVERED
from ..errors import DpdeskError
from ..privacy import planner
from ..privacy.planner import odds_after
from ..evaluation.goals import DEFAULT_K, GOAL_CHOICES, GOAL_QUESTION, goal_from_answers, parse_goal
from ..evaluation.recommend import declared_size, recommend
from ..mechanisms.base import PURPOSES, purpose_of
from .state import AppState
from .widgets import Badge, Banner, DecimalSpinBox, ResponsiveRow, bold, buddy_label, explanation, heading
from .margin_preview import MarginPreviewRow, declared_size_or_why

EPS_MIN, EPS_MAX, SLIDER_STEPS = 0.01, 10.0, 1000
# ε named by what it means for the steward; ln 1.5 and ln 3 are DPSense's worked examples, ln 2
# dpdesk's default. Each preset's odds sentence comes from odds_after.
PRESETS = [("Strong protection", math.log(1.5)), ("Balanced", math.log(2)), ("Accuracy first", math.log(3))]
PRESET_TOLERANCE = 5e-5  # the spin box keeps 4 decimals


def odds_pair(epsilon: float) -> str:
    """'67/33': the most a 50/50 guess about one person can become after the release."""
    probability, _ = odds_after(epsilon)
    before = round(probability * 100)
    return f"{before}/{100 - before}"


def odds_sentence(epsilon: float) -> str:
    _, odds = odds_after(epsilon)
    return (f"Someone who thought it 50/50 that a given person is in the data could, after seeing the release, "
            f"believe it at most <b>{odds_pair(epsilon)}</b> (odds of {odds:.2f} to 1).")


def spent_in_words(epsilon: float) -> str:
    """The budget a dataset has spent, said as odds (the sidebar's ledger summary)."""
    if epsilon <= 0:
        return "Nothing released yet: a 50/50 guess about a person stays 50/50."
    return (f"All its releases together: a 50/50 guess about a person could have become at most "
            f"{odds_pair(epsilon)}.")


class AccuracyTarget(QWidget):
    """"I need counts above N to be within ±r% with probability 1 − p": the ε that target needs,
    from the minimum-true-answer planner (the same one as the Plan page), for the declared Δ."""

    chosen = Signal(float)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.sensitivity, self.declared = 1.0, False
        self.needed: float | None = None
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(bold(QLabel("Or start from the accuracy you need:")))
        sentence = QGridLayout()  # one field a line, so that it fits a narrow column
        self.answer = QSpinBox()
        self.answer.setRange(1, 10**9)
        self.answer.setValue(1000)
        self.answer.setGroupSeparatorShown(True)
        self.answer.setAccessibleName("Counts above this number must be accurate")
        self.within = DecimalSpinBox()
        self.within.setRange(0.1, 1000)
        self.within.setDecimals(1)
        self.within.setValue(10)
        self.within.setSuffix(" %")
        self.within.setAccessibleName("Largest relative error, in percent")
        self.confidence = DecimalSpinBox()
        self.confidence.setRange(50, 99.9)
        self.confidence.setDecimals(1)
        self.confidence.setValue(95)
        self.confidence.setSuffix(" %")
        self.confidence.setAccessibleName("Probability that the target is met, in percent")
        self.use = QPushButton("Set ε for this target")
        self.use.setAccessibleName("Set epsilon from the accuracy target")
        sentence.addWidget(buddy_label("I need counts above", self.answer), 0, 0)
        sentence.addWidget(self.answer, 0, 1)
        sentence.addWidget(buddy_label("to be within ±", self.within), 1, 0)
        sentence.addWidget(self.within, 1, 1)
        sentence.addWidget(buddy_label("with probability", self.confidence), 2, 0)
        sentence.addWidget(self.confidence, 2, 1)
        sentence.addWidget(self.use, 3, 1)
        sentence.setColumnStretch(2, 1)
        layout.addLayout(sentence)
        self.result = explanation("")
        self.result.setAccessibleDescription("Epsilon the accuracy target needs")
        layout.addWidget(self.result)
        for spin in (self.answer, self.within, self.confidence):
            spin.valueChanged.connect(self.update)
        self.use.clicked.connect(self._use)
        self.update()

    def set_sensitivity(self, bound: int | None) -> None:
        """Δ as set on the page (1 without one: then each person changes each count by at most 1)."""
        self.sensitivity = float(bound or 1)
        self.declared = bound is not None
        self.update()

    def update(self) -> None:  # noqa: D401 - Qt-style slot name
        try:
            self.needed = planner.epsilon_needed(self.answer.value(), 1 - self.confidence.value() / 100,
                                                 self.within.value() / 100, self.sensitivity)
        except DpdeskError as error:
            self.needed = None
            self.result.setText(str(error))
            self.use.setEnabled(False)
            return
        scale = (f"with Δ = {self.sensitivity:g} as set below" if self.declared else
                 "for Δ = 1, as no bound is set yet")
        if self.needed > EPS_MAX:
            self.result.setText(f"This needs ε ≈ {self.needed:.3g}, more than dpdesk allows ({EPS_MAX:g}): ask for "
                                "larger counts, a wider margin or a lower probability.")
            self.use.setEnabled(False)
            return
        low = (f" — less than dpdesk's smallest ε, {EPS_MIN:g}, which the button sets" if self.needed < EPS_MIN
               else "")
        self.result.setText(f"needs <b>ε ≈ {self.needed:.4g}</b>{low}, {scale}: noise of scale Δ/ε on each count, "
                            "as LPA adds (Shoaran et al.'s minimum true answer; more on the Plan page).")
        self.use.setEnabled(True)

    def _use(self) -> None:
        if self.needed is not None:
            self.chosen.emit(max(self.needed, EPS_MIN))


class EpsilonControl(QGroupBox):
    """ε as named levels with their odds, a number, a logarithmic slider with labelled ends, and an
    accuracy target — kept in step."""

    changed = Signal(float)

    def __init__(self, parent=None):
        super().__init__("How private? The privacy level ε", parent)
        layout = QVBoxLayout(self)
        layout.addWidget(explanation("A smaller ε protects people more and adds more noise. Choose a level, move "
                                     "the slider, or start from the accuracy you need."))
        presets = QHBoxLayout()
        self.preset_buttons: dict[str, QPushButton] = {}
        self.preset_odds: dict[str, QLabel] = {}
        for name, value in PRESETS:
            column = QVBoxLayout()
            button = QPushButton(f"{name}\nε = {value:.2f}")
            button.setCheckable(True)
            button.setAccessibleName(f"{name}: epsilon {value:.2f}")
            button.setToolTip(f"ε = ln {math.exp(value):g} = {value:.4f}")
            button.clicked.connect(lambda _=False, v=value: self.set_value(v))
            odds = QLabel(f"A 50/50 guess about a person can become at most {odds_pair(value)}.")
            odds.setWordWrap(True)
            odds.setAlignment(Qt.AlignHCenter | Qt.AlignTop)
            column.addWidget(button)
            column.addWidget(odds)
            presets.addLayout(column, 1)
            self.preset_buttons[name] = button
            self.preset_odds[name] = odds
        layout.addLayout(presets)
        slider_row = QGridLayout()
        self.spin = DecimalSpinBox()
        self.spin.setDecimals(4)
        self.spin.setRange(EPS_MIN, EPS_MAX)
        self.spin.setSingleStep(0.05)
        self.spin.setAccessibleName("Privacy level epsilon")
        self.slider = QSlider(Qt.Horizontal)
        self.slider.setRange(0, SLIDER_STEPS)
        self.slider.setAccessibleName("Privacy level epsilon, logarithmic slider: left more private, right more "
                                      "accurate")
        self.more_private = QLabel(f"◀ more private\nε = {EPS_MIN:g}")
        self.more_accurate = QLabel(f"more accurate ▶\nε = {EPS_MAX:g}")
        self.more_accurate.setAlignment(Qt.AlignRight)
        slider_row.addWidget(buddy_label("ε =", self.spin), 0, 0)
        slider_row.addWidget(self.spin, 0, 1)
        slider_row.addWidget(self.slider, 0, 2, 1, 2)
        slider_row.addWidget(self.more_private, 1, 2, Qt.AlignLeft)
        slider_row.addWidget(self.more_accurate, 1, 3, Qt.AlignRight)
        slider_row.setColumnStretch(2, 1)
        slider_row.setColumnStretch(3, 1)
        layout.addLayout(slider_row)
        self.odds = explanation("")
        self.odds.setAccessibleDescription("What this epsilon means")
        layout.addWidget(self.odds)
        self.accuracy = AccuracyTarget()
        layout.addWidget(self.accuracy)
        self.spin.valueChanged.connect(self._from_spin)
        self.slider.valueChanged.connect(self._from_slider)
        self.accuracy.chosen.connect(self.set_value)
        self._updating = False

    def value(self) -> float:
        return float(self.spin.value())

    def set_value(self, value: float) -> None:
        self.spin.setValue(min(max(value, EPS_MIN), EPS_MAX))

    def preset(self) -> str | None:
        """The named level the current ε is, if any."""
        for name, value in PRESETS:
            if abs(self.value() - value) < PRESET_TOLERANCE:
                return name
        return None

    def _from_spin(self, value: float) -> None:
        if not self._updating:
            self._updating = True
            position = (math.log(value) - math.log(EPS_MIN)) / (math.log(EPS_MAX) - math.log(EPS_MIN))
            self.slider.setValue(round(position * SLIDER_STEPS))
            self._updating = False
        current = self.preset()
        for name, button in self.preset_buttons.items():
            button.setChecked(name == current)
        self.odds.setText((f"<b>{current}.</b> " if current else "") + odds_sentence(value))
        self.changed.emit(float(value))

    def _from_slider(self, position: int) -> None:
        if not self._updating:
            self._updating = True
            value = math.exp(math.log(EPS_MIN) + position / SLIDER_STEPS * (math.log(EPS_MAX) - math.log(EPS_MIN)))
            self.spin.setValue(round(value, 4))
            self._updating = False


def expected_error(state: AppState, mechanism_id: str, epsilon: float) -> str | None:
    """The error a mechanism's noise makes at ``epsilon`` with the state's settings, in words, from its
    public settings (the mechanism's ``expected_error``), or None when it depends on the data itself;
    ``ParameterError`` when its settings are not complete."""
    mechanism = registry.get(mechanism_id)
    data = state.dataset
    values = mechanism.validate(data, epsilon, state.params_for(mechanism_id))
    facts = mechanism.public_facts(data, values) if data is not None else {}
    expected = mechanism.expected_error(epsilon, values, facts)
    return expected.get("text") if expected else None


def param_widget(param, value, on_change):
    """A widget for one schema parameter, wired to ``on_change(value)``."""
    tip = f"{param.help}" + (f"\nUnit: {param.unit}" if param.unit else "") + \
          (f"\nSource: {param.reference}" if param.reference else "")
    if param.kind == "int":
        widget = QSpinBox()
        low = int(param.minimum) if param.minimum is not None else -10**9
        high = int(min(param.maximum, 2**31 - 1)) if param.maximum is not None else 2**31 - 1
        optional = param.default is None  # "not set" until the steward gives a value (required ones say so)
        widget.setRange(low - 1 if optional else low, high)
        if optional:
            widget.setSpecialValueText("not set")
        widget.setValue(int(value) if value is not None else (low - 1 if optional else low))
        widget.valueChanged.connect(lambda v: on_change(None if optional and v == low - 1 else int(v)))
    elif param.kind == "float":
        widget = DecimalSpinBox()
        widget.setDecimals(4)
        widget.setRange(param.minimum if param.minimum is not None else -1e12,
                        param.maximum if param.maximum is not None else 1e12)
        widget.setValue(float(value) if value is not None else float(param.minimum or 0))
        widget.valueChanged.connect(lambda v: on_change(float(v)))
    elif param.kind == "choice":
        widget = QComboBox()
        for choice in param.choices:
            widget.addItem(choice, choice)
        index = widget.findData(value)
        widget.setCurrentIndex(max(index, 0))
        widget.currentIndexChanged.connect(lambda _i: on_change(widget.currentData()))
    elif param.kind == "bool":
        widget = QCheckBox()
        widget.setChecked(bool(value))
        widget.toggled.connect(lambda v: on_change(bool(v)))
    else:  # text or file
        widget = QWidget()
        row = QHBoxLayout(widget)
        row.setContentsMargins(0, 0, 0, 0)
        edit = QLineEdit(str(value) if value is not None else "")
        edit.setAccessibleName(param.title)
        row.addWidget(edit, 1)
        edit.textChanged.connect(lambda text: on_change(text.strip() or None))
        if param.kind == "file":
            if param.name == "index":
                uniform = QPushButton("Uniform")
                uniform.setToolTip("The same noise scale for every item")
                uniform.clicked.connect(lambda: edit.setText("uniform"))
                row.addWidget(uniform)
            browse = QPushButton("Browse…")
            browse.clicked.connect(lambda: _browse(edit))
            row.addWidget(browse)
        widget.setToolTip(tip)
        return widget
    widget.setToolTip(tip)
    widget.setAccessibleName(param.title)
    return widget


def _browse(edit: QLineEdit) -> None:
    path, _ = QFileDialog.getOpenFileName(edit, "Choose a file", "", "CSV files (*.csv *.tsv *.txt);;All files (*)")
    if path:
        edit.setText(path)


def settings_in_words(mechanism_id: str, params: dict) -> str:
    """'Δ = 20, Rounding step = 5': a mechanism's settings with the schema's labels ("" for none)."""
    mechanism = registry.get(mechanism_id)
    parts = []
    for name, value in params.items():
        try:
            title = "Δ" if name == "bound" else mechanism.param(name).title
        except KeyError:
            title = name
        parts.append(f"{title} = {value:,}" if isinstance(value, int) and not isinstance(value, bool) else
                     f"{title} = {'yes' if value is True else 'no' if value is False else value}")
    return ", ".join(parts)


def params_in_words(mechanism_id: str, params: dict) -> str:
    """'with Δ = 20' for a recommendation's parameters, using the schema's labels."""
    return "with " + settings_in_words(mechanism_id, params) if params else ""


class RecommendationPanel(QFrame):
    """The recommended mechanism, its reasons and the button that uses it."""

    use_requested = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("recommendation")
        # colours from the palette, so that dark and high-contrast themes keep it readable
        self.setStyleSheet("QFrame#recommendation {border: 2px solid palette(highlight); border-radius: 6px;"
                           " background: palette(alternate-base);}")
        self.setAccessibleName("Recommended mechanism")
        layout = QVBoxLayout(self)
        top = QHBoxLayout()
        self.title = QLabel("")
        self.title.setWordWrap(True)
        self.title.setTextFormat(Qt.RichText)
        font = self.title.font()
        font.setPointSizeF(font.pointSizeF() * 1.15)
        self.title.setFont(font)
        self.title.setAccessibleDescription("Recommended mechanism")
        self.use_button = QPushButton("Use the recommendation")
        self.use_button.setAccessibleName("Use the recommended mechanism and its settings")
        self.use_button.setToolTip("Ticks the recommended mechanism and the ones worth comparing with it, each "
                                   "with its settings, and unticks the others. It costs no privacy budget: the "
                                   "advice used declared facts only.")
        self.use_button.setSizePolicy(QSizePolicy.Fixed, QSizePolicy.Fixed)
        top.addWidget(self.title, 1)
        top.addWidget(self.use_button, 0, Qt.AlignTop)
        layout.addLayout(top)
        self.reasons = QLabel("")
        self.reasons.setWordWrap(True)
        self.reasons.setTextFormat(Qt.RichText)
        self.reasons.setAccessibleDescription("Why this mechanism is recommended")
        layout.addWidget(self.reasons)
        self.use_button.clicked.connect(self.use_requested.emit)

    def show_advice(self, advice, in_use: bool) -> None:
        mechanism = registry.get(advice.mechanism)
        settings = params_in_words(advice.mechanism, advice.params)
        self.title.setText(f"★ <b>Recommended: {mechanism.name}</b> ({mechanism.id})" + (f", {settings}" if
                                                                                          settings else "")
                           + (" — <i>in use</i>" if in_use else ""))
        others = []
        for alternative in advice.alternatives:
            name = registry.get(alternative.mechanism).name
            other_settings = params_in_words(alternative.mechanism, alternative.params)
            others.append(name + (f" ({other_settings})" if other_settings else ""))
        items = "".join(f"<li>{reason}</li>" for reason in advice.reasons)
        also = f"<p>Also worth comparing: {'; '.join(dict.fromkeys(others))}.</p>" if others else ""
        self.reasons.setText(f"<ul style='margin-left:-20px'>{items}</ul>{also}")
        self.use_button.setEnabled(not in_use)
        self.use_button.setText("In use ✓" if in_use else "Use the recommendation")

    def show_missing(self, why: str) -> None:
        self.title.setText("<b>Recommendation</b>")
        self.reasons.setText(why)
        self.use_button.setEnabled(False)
        self.use_button.setText("Use the recommendation")


class GoalBox(QGroupBox):
    """The question the recommendation is learnt for: what matters most in this release (issue 28).

    Its answer is a goal in ``dpdesk recommend --goal``'s words (``all``, ``largest:K``, ``target:N,R``);
    the extra numbers show only for the answer that needs them."""

    changed = Signal(str)

    def __init__(self, parent=None):
        super().__init__(GOAL_QUESTION, parent)
        layout = QFormLayout(self)
        layout.setRowWrapPolicy(QFormLayout.WrapLongRows)
        self.choice = QComboBox()
        for kind, answer, _needs in GOAL_CHOICES:
            self.choice.addItem(answer, kind)
        self.choice.setAccessibleName(GOAL_QUESTION)
        layout.addRow(buddy_label("What matters most:", self.choice), self.choice)
        self.k = QSpinBox()
        self.k.setRange(1, 10**6)
        self.k.setValue(DEFAULT_K)
        self.k.setAccessibleName("How many of the largest counts matter")
        self.k_label = buddy_label("How many of the largest counts:", self.k)
        layout.addRow(self.k_label, self.k)
        self.count = QSpinBox()
        self.count.setRange(1, 10**9)
        self.count.setValue(1000)
        self.count.setGroupSeparatorShown(True)
        self.count.setAccessibleName("Counts of at least this number")
        self.count_label = buddy_label("Counts of at least N =", self.count)
        layout.addRow(self.count_label, self.count)
        self.percent = DecimalSpinBox()
        self.percent.setRange(0.1, 100)
        self.percent.setDecimals(1)
        self.percent.setValue(10)
        self.percent.setSuffix(" %")
        self.percent.setAccessibleName("Within this percentage of their true value")
        self.percent_label = buddy_label("within ± R =", self.percent)
        layout.addRow(self.percent_label, self.percent)
        layout.addRow(explanation(
            "The recommendation is chosen for this: the mean error over every count, the relative error of the "
            "largest counts (what a reader looks at first), or how many counts above a number land within a "
            "percentage of the truth. The Compare page measures the same first."))
        self._filling = False
        self.choice.currentIndexChanged.connect(self._changed)
        for box in (self.k, self.count):
            box.valueChanged.connect(self._changed)
        self.percent.valueChanged.connect(self._changed)
        self._show_numbers()

    def goal(self) -> str:
        """The answer in ``--goal``'s words, checked as ``--goal`` is."""
        kind = self.choice.currentData()
        goal_from_answers(kind, k=self.k.value(), count=self.count.value(), percent=self.percent.value())
        return _goal_text(kind, self.k.value(), self.count.value(), self.percent.value())

    def set_goal(self, text: str) -> None:
        goal = parse_goal(text)
        self._filling = True
        self.choice.setCurrentIndex(max(self.choice.findData(goal.kind), 0))
        if goal.kind == "largest":
            self.k.setValue(goal.k)
        if goal.kind == "target":
            self.count.setValue(int(goal.count))
            self.percent.setValue(goal.percent)
        self._filling = False
        self._show_numbers()

    def _show_numbers(self) -> None:
        kind = self.choice.currentData()
        for widget in (self.k, self.k_label):
            widget.setVisible(kind == "largest")
        for widget in (self.count, self.count_label, self.percent, self.percent_label):
            widget.setVisible(kind == "target")

    def _changed(self, *_args) -> None:
        self._show_numbers()
        if not self._filling:
            self.changed.emit(self.goal())


def _goal_text(kind: str, k: int, count: int, percent: float) -> str:
    """``--goal``'s words for an answer."""
    if kind == "largest":
        return f"largest:{k}"
    if kind == "target":
        return f"target:{count},{percent:g}"
    return "all"


class MechanismRow(QFrame):
    """One mechanism in the list: tick to compare, its full name (wrapped, never cut), what it does,
    and its paper behind one click."""

    selected = Signal(str)

    def __init__(self, mechanism, parent=None):
        super().__init__(parent)
        self.mechanism_id = mechanism.id
        self.setObjectName("mechanismRow")
        grid = QGridLayout(self)
        grid.setContentsMargins(6, 4, 6, 4)
        grid.setVerticalSpacing(2)
        self.check = QCheckBox()
        self.check.setAccessibleName(f"Compare {mechanism.name}")
        self.check.setToolTip("Tick to compare this mechanism (and to offer it on the Release page)")
        self.check.installEventFilter(self)
        self.name = QLabel(f"<b>{mechanism.name}</b> ({mechanism.id})")
        self.name.setWordWrap(True)
        self.name.setTextFormat(Qt.RichText)
        self.name.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)  # wraps instead of widening
        self.badge = Badge("★ Recommended", "info")
        self.badge.setVisible(False)
        self.unready = Badge("Needs settings", "warning")  # ticked, but its settings are not complete
        self.unready.setVisible(False)
        self.paper_button = QToolButton()
        self.paper_button.setText("Paper")
        self.paper_button.setCheckable(True)
        self.paper_button.setAccessibleName(f"Show the paper {mechanism.name} comes from")
        self.paper_button.setToolTip(f"{mechanism.paper}, {mechanism.reference}")
        self.summary = QLabel(mechanism.summary)
        self.summary.setWordWrap(True)
        self.summary.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)
        self.reference = QLabel(f"Source: {mechanism.paper}; {mechanism.reference}.")
        self.reference.setWordWrap(True)
        self.reference.setTextInteractionFlags(Qt.TextSelectableByMouse)  # to copy the citation
        self.reference.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)
        self.reference.setVisible(False)
        grid.addWidget(self.check, 0, 0, Qt.AlignTop)
        grid.addWidget(self.name, 0, 1)
        badges = QVBoxLayout()
        badges.setSpacing(2)
        badges.addWidget(self.badge)
        badges.addWidget(self.unready)
        grid.addLayout(badges, 0, 2, Qt.AlignTop)
        grid.addWidget(self.paper_button, 0, 3, Qt.AlignTop)
        grid.addWidget(self.summary, 1, 1, 1, 3)
        grid.addWidget(self.reference, 2, 1, 1, 3)
        grid.setColumnStretch(1, 1)
        self.paper_button.toggled.connect(self.reference.setVisible)
        self.set_current(False)

    def set_current(self, current: bool) -> None:
        width = 2 if current else 1
        role = "highlight" if current else "mid"
        self.setStyleSheet(f"QFrame#mechanismRow {{border: {width}px solid palette({role}); border-radius: 4px;}}")

    def mousePressEvent(self, event) -> None:  # noqa: N802 - Qt API
        self.selected.emit(self.mechanism_id)
        super().mousePressEvent(event)

    def eventFilter(self, watched, event) -> bool:  # noqa: N802
        if watched is self.check and event.type() == QEvent.FocusIn:  # keyboard users select by tabbing
            self.selected.emit(self.mechanism_id)
        return False


class ConfigurePage(QWidget):
    def __init__(self, state: AppState, parent=None):
        super().__init__(parent)
        self.state = state
        self.advice = None  # the current Recommendation, or None when it cannot be given
        self._size_cache: tuple | None = None  # (key, declared domain size)
        outer = QVBoxLayout(self)
        outer.addWidget(heading("② Configure: how to publish, and how private"))
        outer.addWidget(explanation(
            "Choose how private the release is and declare what you know about the data; dpdesk then recommends a "
            "mechanism — the method that turns the true counts into noisy, ε-differentially private ones. Tick the "
            "mechanisms you want to compare on the next page."))
        self.recommendation = RecommendationPanel()
        outer.addWidget(self.recommendation)
        # the mechanisms, grouped by what they do for the steward
        self.list_host = QWidget()
        self.list_layout = QVBoxLayout(self.list_host)
        self.list_layout.setContentsMargins(4, 4, 4, 4)
        list_scroll = QScrollArea()
        list_scroll.setWidgetResizable(True)
        list_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        list_scroll.setWidget(self.list_host)
        list_scroll.setMinimumWidth(300)
        list_scroll.setMinimumHeight(360)
        list_scroll.setAccessibleName("Mechanisms grouped by what they do; tick to compare")
        self.list_scroll = list_scroll
        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(0, 0, 0, 0)
        left_layout.addWidget(bold(QLabel("Mechanisms — tick the ones to compare")))
        left_layout.addWidget(list_scroll, 1)
        self.rows: dict[str, MechanismRow] = {}
        self.group_titles: dict[str, str] = {}  # mechanism id → the title of the group it is listed under
        right = QWidget()
        right_layout = QVBoxLayout(right)
        right_layout.setContentsMargins(0, 0, 0, 0)
        self.right_layout = right_layout
        self.epsilon = EpsilonControl()
        right_layout.addWidget(self.epsilon)
        self.bound_box = QGroupBox("What you declare: facts you know without looking at the data")
        bound_layout = QFormLayout(self.bound_box)
        bound_layout.setRowWrapPolicy(QFormLayout.WrapLongRows)
        self.bound = QSpinBox()
        self.bound.setRange(0, 10**9)
        self.bound.setSpecialValueText("not set")
        self.bound.setAccessibleName("Declared bound delta, items per person")
        bound_layout.addRow("The most items one person may contribute, Δ =", self.bound)
        self.bound_note = Banner("", "info")
        self.bound_note.setVisible(False)
        bound_layout.addRow(self.bound_note)
        bound_layout.addRow(explanation(
            "Declare Δ from what you know about how the data was collected (e.g. “a basket holds at most 30 "
            "products”), not from the data itself. Anyone with more than Δ items keeps a random Δ of them "
            "before any noise is added (<i>truncation</i>): that caps how much one person can change the counts, "
            "which is what lets the noise stay small. A Δ too small loses information; too large adds noise. "
            "Mechanisms under “No bound needed” need no Δ."))
        self.typical = DecimalSpinBox()
        self.typical.setRange(0, 10**6)
        self.typical.setDecimals(1)
        self.typical.setSpecialValueText("not declared")
        self.typical.setAccessibleName("Declared typical number of items per person")
        bound_layout.addRow("About how many items does a typical person hold?", self.typical)
        bound_layout.addRow(explanation(
            "Also a <b>declaration</b>: your own estimate from how the data was collected (e.g. “a typical basket "
            "holds about 4 products”), never read from the data. dpdesk uses it to recommend a mechanism (and to "
            "propose Δ when you declare none), and the synthetic stand-in on the Compare page is shaped by it."))
        right_layout.addWidget(self.bound_box)
        self.goal_box = GoalBox()
        right_layout.addWidget(self.goal_box)
        self.details = QGroupBox("Selected mechanism")
        self.details_layout = QVBoxLayout(self.details)
        self.description = explanation("Select a mechanism on the left.")
        self.details_layout.addWidget(self.description)
        self.form_host = QWidget()
        self.form = QFormLayout(self.form_host)
        self.details_layout.addWidget(self.form_host)
        self.expected = Banner("", "info")
        self.expected.setAccessibleDescription("Expected error")
        self.details_layout.addWidget(self.expected)
        # the margins each value would get, on a stand-in shaped by the declared facts (issue 28)
        self.margin_preview = MarginPreviewRow(self._preview_inputs)
        self.details_layout.addWidget(self.margin_preview)
        right_layout.addWidget(self.details)
        right_layout.addStretch(1)
        # ε and the declarations beside the list when the page is wide enough; above it when it is not
        # (the guide open, a small screen), the selected mechanism's settings then below the list. The
        # whole page scrolls (the main window's scroll area); nothing is cut or hidden sideways.
        self.columns = ResponsiveRow([right, left], first_right=True, spacing=10)
        self.columns.arranged.connect(self._arranged)
        outer.addWidget(self.columns, 1)
        self.outer = outer
        self._arranged(self.columns.side_by_side)  # one below the other until the page is wide enough
        self.current: str | None = None
        self._filling = False
        self.recommendation.use_requested.connect(self.use_recommendation)
        self.epsilon.changed.connect(self._epsilon_changed)
        self.bound.valueChanged.connect(self._bound_changed)
        self.typical.valueChanged.connect(self._typical_changed)
        self.goal_box.changed.connect(self.state.set_goal)
        state.dataset_changed.connect(self.rebuild)
        state.config_changed.connect(self._forget_preview)
        state.epsilon_changed.connect(lambda _e: self._forget_preview())
        state.publication_changed.connect(self._forget_preview)
        state.config_changed.connect(self._update_expected)
        state.config_changed.connect(self._sync_declared)
        state.config_changed.connect(self._sync_ticks)
        state.config_changed.connect(self.refresh_recommendation)
        state.epsilon_changed.connect(lambda e: self.epsilon.set_value(e))
        state.epsilon_changed.connect(lambda _e: self.refresh_recommendation())
        state.publication_changed.connect(self.refresh_recommendation)
        state.config_changed.connect(lambda: self.epsilon.accuracy.set_sensitivity(self.state.bound))
        self.epsilon.accuracy.set_sensitivity(state.bound)
        self.epsilon.set_value(state.epsilon)
        self.rebuild()

    def _arranged(self, side_by_side: bool) -> None:
        """The selected mechanism's settings: under ε and Δ beside the list, or under the list below it."""
        if side_by_side:
            self.right_layout.insertWidget(self.right_layout.indexOf(self.bound_box) + 1, self.details)
        else:
            self.outer.insertWidget(self.outer.indexOf(self.columns) + 1, self.details)

    # -- mechanism list ------------------------------------------------------------------
    def rebuild(self) -> None:
        self._filling = True
        while self.list_layout.count():
            widget = self.list_layout.takeAt(0).widget()
            if widget is not None:
                widget.hide()  # gone at once, not only when the event loop deletes it
                widget.deleteLater()
        self.rows, self.group_titles = {}, {}
        kind = self.state.dataset.kind if self.state.dataset is not None else "incidence"
        groups: dict[str, list] = {}
        for mechanism in registry.all_mechanisms(kind):
            if mechanism.releasable:  # non-private comparison aids are not offered here
                groups.setdefault(purpose_of(mechanism)[0], []).append(mechanism)
        order = [title for title, _ in PURPOSES.values()]
        first = None
        for title in sorted(groups, key=lambda t: order.index(t) if t in order else len(order)):
            mechanisms = groups[title]
            header = heading(title, 2)
            header.setWordWrap(True)
            self.list_layout.addWidget(header)
            about = explanation(purpose_of(mechanisms[0])[1])
            self.list_layout.addWidget(about)
            for mechanism in mechanisms:
                row = MechanismRow(mechanism)
                configuration = self.state.configurations.get(mechanism.id)
                row.check.setChecked(bool(configuration and configuration.enabled))
                row.check.toggled.connect(lambda on, mid=mechanism.id: self._ticked(mid, on))
                row.selected.connect(self.select)
                self.list_layout.addWidget(row)
                self.rows[mechanism.id] = row
                self.group_titles[mechanism.id] = title
                first = first or mechanism.id
        self.list_layout.addStretch(1)
        self.bound_box.setVisible(kind == "incidence")
        self.bound.setValue(self.state.bound or 0)
        self.typical.setValue(self.state.typical_row_length or 0)
        self._filling = False
        self.current = None
        self.refresh_recommendation()
        self._mark_unready()
        if first is not None:
            self.select(first)

    def select(self, mechanism_id: str) -> None:
        """Show a mechanism's settings on the right and mark its row."""
        if mechanism_id not in self.rows or mechanism_id == self.current:
            return
        for key, row in self.rows.items():
            row.set_current(key == mechanism_id)
        self._show_settings(mechanism_id)

    def tick(self, mechanism_ids) -> None:
        """Tick exactly these mechanisms for comparing (and releasing)."""
        for mechanism_id, row in self.rows.items():
            row.check.setChecked(mechanism_id in mechanism_ids)

    def _sync_declared(self) -> None:
        self._filling = True
        if self.bound.value() != (self.state.bound or 0):
            self.bound.setValue(self.state.bound or 0)
        if abs(self.typical.value() - (self.state.typical_row_length or 0)) > 1e-9:
            self.typical.setValue(self.state.typical_row_length or 0)
        if self.goal_box.goal() != self.state.goal:
            try:
                self.goal_box.set_goal(self.state.goal)
            except DpdeskError:  # a project file's misspelt goal: the recommendation says why
                pass
        self._filling = False
        proposed = self.state.bound_proposed and self.state.bound is not None
        self.bound_note.setVisible(proposed)
        if proposed:
            self.bound_note.setText(f"Δ = {self.state.bound:,} was proposed by the recommendation from your typical "
                                    "row length. Change it if you know better; then it is your declaration.")

    def _sync_ticks(self) -> None:
        self._filling = True
        for mechanism_id, row in self.rows.items():
            configuration = self.state.configurations.get(mechanism_id)
            row.check.setChecked(bool(configuration and configuration.enabled))
        self._filling = False
        self._mark_unready()

    def not_ready(self, mechanism_id: str) -> str | None:
        """Why a mechanism cannot run with its settings as they are (its schema's check, on declared
        inputs only), or None."""
        try:
            registry.get(mechanism_id).validate(None, self.state.epsilon, self.state.params_for(mechanism_id))
        except DpdeskError as error:
            return str(error)
        return None

    def _mark_unready(self) -> None:
        """Ticked mechanisms whose settings are incomplete say so in the list, before Compare leaves them out."""
        for mechanism_id, row in self.rows.items():
            why = self.not_ready(mechanism_id) if row.check.isChecked() else None
            row.unready.setVisible(why is not None)
            row.unready.setToolTip(why or "")

    def _ticked(self, mechanism_id: str, on: bool) -> None:
        if not self._filling:
            self.state.set_configuration(mechanism_id, enabled=on)

    # -- the recommendation --------------------------------------------------------------
    def declared_domain_size(self) -> int:
        """The number of items (or cells) the steward declared: from the declaration, or the file's own
        labels when the steward stated they are public — never a statistic of the data."""
        data, declaration = self.state.dataset, self.state.domain_declaration
        key = (id(data), repr(declaration.to_json()), data.kind)
        if self._size_cache is None or self._size_cache[0] != key:
            size = declared_size(declaration, data.source.get("path"), data.kind, loaded=data)
            self._size_cache = (key, size)
        return self._size_cache[1]

    def refresh_recommendation(self) -> None:
        """Recompute the advice from the declared facts (ε, Δ, typical row length, declared domain)."""
        self.advice = None
        for row in self.rows.values():
            row.badge.setVisible(False)
        data, declaration = self.state.dataset, self.state.domain_declaration
        if data is None:
            self.recommendation.show_missing("Import data first: the recommendation needs the number of items, "
                                             "ε and what you declare about the data.")
            return
        what = "items" if data.kind == "incidence" else "cells"
        if declaration is None:
            self.recommendation.show_missing(f"dpdesk needs to know where the published list of {what} comes from "
                                             "to recommend a mechanism: declare it on the Release page (Change…).")
            return
        if declaration.kind == HOW_DISCOVERED:
            self.recommendation.show_missing(
                f"The {what} will be found privately during the release, so how many there are is not known "
                "beforehand and dpdesk cannot recommend a mechanism from it. Compare mechanisms on a stand-in "
                "instead, or declare the list another way (Release page, Change…).")
            return
        incidence = data.kind == "incidence"
        # a Δ the recommendation proposed is its output, not the steward's declaration: leaving it
        # out keeps the advice the same after "Use the recommendation"
        bound = self.state.bound if incidence and not self.state.bound_proposed else None
        length = self.state.typical_row_length if incidence else None
        if incidence and bound is None and length is None:
            # with nothing declared the only advice is one noisy average for every item: ask instead
            self.recommendation.show_missing(
                "Declare what you know about the data below — Δ, the most items one person may contribute, or "
                "about how many items a typical person holds — and dpdesk recommends a mechanism from it.")
            return
        try:
            advice = recommend(data.kind, self.declared_domain_size(), self.state.epsilon, bound, length,
                               goal=self.state.goal)
        except DpdeskError as error:
            self.recommendation.show_missing(f"No recommendation yet: {error}")
            return
        self.advice = advice
        used = self.state.recommendation_used
        in_use = bool(used and used["mechanism"] == advice.mechanism and used["chosen_how"] == advice.chosen_how)
        self.recommendation.show_advice(advice, in_use)
        if advice.mechanism in self.rows:
            self.rows[advice.mechanism].badge.setVisible(True)

    def use_recommendation(self) -> None:
        advice = self.advice
        if advice is None:
            return
        # the alternatives worth comparing, with their settings, where those settings are complete
        also = []
        for alternative in advice.alternatives:
            try:
                registry.get(alternative.mechanism).validate(None, self.state.epsilon, alternative.params)
            except DpdeskError:
                continue
            also.append((alternative.mechanism, alternative.params))
        self.state.use_recommendation(advice.mechanism, advice.params, advice.chosen_how, also)
        self.current = None  # show the settings just set
        self.select(advice.mechanism)
        row = self.rows.get(advice.mechanism)
        if row is not None:
            self.list_scroll.ensureWidgetVisible(row)

    # -- parameter form ------------------------------------------------------------------
    def _show_settings(self, mechanism_id: str) -> None:
        self.current = mechanism_id
        self._forget_preview()
        mechanism = registry.get(mechanism_id)
        self.details.setTitle("Selected: " + mechanism.name)
        self.description.setText(f"{mechanism.summary}<br><i>Source: {mechanism.paper}, {mechanism.reference}.</i>")
        while self.form.rowCount():
            self.form.removeRow(0)
        configuration = self.state.configurations.get(mechanism_id)
        values = configuration.params if configuration else {}
        for param in mechanism.params:
            if param.name == "bound":
                continue  # the shared declared bound above
            value = values.get(param.name, param.default)
            widget = param_widget(param, value, lambda v, name=param.name: self._param_changed(name, v))
            label = QLabel(param.title + (" *" if param.required else "") + ":")
            label.setToolTip(widget.toolTip())
            label.setBuddy(widget)
            self.form.addRow(label, widget)
        if not any(p.name != "bound" for p in mechanism.params):
            self.form.addRow(QLabel("No settings beyond ε" + (" and Δ." if any(p.name == "bound" for p in
                                                                              mechanism.params) else ".")))
        self._update_expected()

    def _preview_inputs(self) -> tuple:
        """What the margin preview runs: the selected mechanism with its settings, on the declared shape."""
        if not self.current:
            raise DpdeskError("select a mechanism first.")
        size = declared_size_or_why(self.state, self.declared_domain_size)
        data = self.state.dataset
        length = self.state.typical_row_length if data.kind == "incidence" else None
        return data.kind, self.current, self.state.epsilon, self.state.params_for(self.current), size, length

    def _forget_preview(self) -> None:
        self.margin_preview.forget()

    def _param_changed(self, name: str, value) -> None:
        if self.current:
            self.state.set_configuration(self.current, **{name: value})

    def _epsilon_changed(self, value: float) -> None:
        self.state.set_epsilon(value)
        self._update_expected()

    def _bound_changed(self, value: int) -> None:
        if not self._filling:
            self.state.set_bound(value if value > 0 else None)

    def _typical_changed(self, value: float) -> None:
        if not self._filling:
            self.state.set_typical_row_length(value if value > 0 else None)

    def _update_expected(self) -> None:
        if not self.current:
            return
        try:
            expected = expected_error(self.state, self.current, self.state.epsilon)
        except DpdeskError as error:
            self.expected.set_kind("warning")
            self.expected.setText(f"Not ready: {error}")
            return
        self.expected.set_kind("info")
        if expected:
            self.expected.setText(f"<b>Expected error at ε = {self.state.epsilon:.4g}</b> (from public settings "
                                  f"only): {expected}")
        else:
            self.expected.setText("The error of this mechanism depends on the data itself; compare it on the "
                                  "Compare page (on stand-in data if you want to avoid using the true data).")
