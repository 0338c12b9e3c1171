"""Configure: choose mechanisms (grouped by paper), set their parameters from the registry's
schemas, the declared bound Δ, and ε — with the guarantee and the expected error in words."""

from __future__ import annotations

import math

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QCheckBox, QComboBox, QDoubleSpinBox, QFileDialog, QFormLayout, QGroupBox,
                               QHBoxLayout, QLabel, QLineEdit, QPushButton, QScrollArea, QSlider, QSpinBox,
                               QSplitter, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget)

from .. import mechanisms as registry
from ..errors import DpdeskError
from ..evaluation.planner import odds_after
from .state import AppState
from .widgets import Banner, explanation, heading

EPS_MIN, EPS_MAX, SLIDER_STEPS = 0.01, 10.0, 1000
PRESETS = [("ln 1.5", math.log(1.5)), ("ln 2", math.log(2)), ("ln 3", math.log(3)), ("0.1", 0.1)]


def odds_sentence(epsilon: float) -> str:
    probability, odds = odds_after(epsilon)
    before = round(probability * 100)
    return (f"Someone who thought it 50/50 that a given person is in the data could, after seeing the release, "
            f"believe it at most <b>{before}/{100 - before}</b> (odds of {odds:.2f} to 1).")


class EpsilonControl(QGroupBox):
    """ε as a number, a logarithmic slider and presets, kept in step."""

    changed = Signal(float)

    def __init__(self, parent=None):
        super().__init__("Privacy level ε (smaller = more private, more noise)", parent)
        layout = QVBoxLayout(self)
        row = QHBoxLayout()
        self.spin = QDoubleSpinBox()
        self.spin.setDecimals(4)
        self.spin.setRange(EPS_MIN, EPS_MAX)
        self.spin.setSingleStep(0.05)
        self.spin.setAccessibleName("Privacy level epsilon")
        self.slider = QSlider(Qt.Horizontal)
        self.slider.setRange(0, SLIDER_STEPS)
        self.slider.setAccessibleName("Privacy level epsilon, logarithmic slider")
        row.addWidget(QLabel("ε ="))
        row.addWidget(self.spin)
        row.addWidget(self.slider, 1)
        layout.addLayout(row)
        presets = QHBoxLayout()
        presets.addWidget(QLabel("Common choices:"))
        for label, value in PRESETS:
            button = QPushButton(label)
            button.setToolTip(f"ε = {value:.4f}")
            button.setAccessibleName(f"Set epsilon to {label}")
            button.clicked.connect(lambda _=False, v=value: self.set_value(v))
            presets.addWidget(button)
        presets.addStretch(1)
        layout.addLayout(presets)
        self.odds = explanation("")
        self.odds.setAccessibleName("What this epsilon means")
        layout.addWidget(self.odds)
        self.spin.valueChanged.connect(self._from_spin)
        self.slider.valueChanged.connect(self._from_slider)
        self._updating = False

    def value(self) -> float:
        return float(self.spin.value())

    def set_value(self, value: float) -> None:
        self.spin.setValue(min(max(value, EPS_MIN), EPS_MAX))

    def _from_spin(self, value: float) -> None:
        if not self._updating:
            self._updating = True
            position = (math.log(value) - math.log(EPS_MIN)) / (math.log(EPS_MAX) - math.log(EPS_MIN))
            self.slider.setValue(round(position * SLIDER_STEPS))
            self._updating = False
        self.odds.setText(odds_sentence(value))
        self.changed.emit(float(value))

    def _from_slider(self, position: int) -> None:
        if not self._updating:
            self._updating = True
            value = math.exp(math.log(EPS_MIN) + position / SLIDER_STEPS * (math.log(EPS_MAX) - math.log(EPS_MIN)))
            self.spin.setValue(round(value, 4))
            self._updating = False


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
        widget = QDoubleSpinBox()
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


class ConfigurePage(QWidget):
    def __init__(self, state: AppState, parent=None):
        super().__init__(parent)
        self.state = state
        outer = QVBoxLayout(self)
        outer.addWidget(heading("② Configure: mechanisms, the declared bound and ε"))
        outer.addWidget(explanation(
            "Tick the mechanisms you want to compare. Each one turns the true counts into noisy counts that are "
            "ε-differentially private; they differ in how much noise they add and where. Hover over a setting "
            "to see what it does and which paper it comes from."))
        splitter = QSplitter(Qt.Horizontal)
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(["Mechanisms (grouped by paper)"])
        self.tree.setAccessibleName("Mechanisms grouped by paper; tick to compare")
        self.tree.setMinimumWidth(380)
        splitter.addWidget(self.tree)
        right = QWidget()
        right_layout = QVBoxLayout(right)
        self.epsilon = EpsilonControl()
        right_layout.addWidget(self.epsilon)
        self.bound_box = QGroupBox("Declared bound Δ: the most items one person may contribute")
        bound_layout = QFormLayout(self.bound_box)
        self.bound = QSpinBox()
        self.bound.setRange(0, 10**9)
        self.bound.setSpecialValueText("not set")
        self.bound.setAccessibleName("Declared bound delta, items per person")
        bound_layout.addRow("Δ =", self.bound)
        bound_layout.addRow(explanation(
            "Declare Δ from what you know about how the data was collected (e.g. “a basket holds at most 30 "
            "products”), not from the data itself. Anyone with more than Δ items keeps a random Δ of them "
            "before any noise is added (<i>truncation</i>): that caps how much one person can change the counts, "
            "which is what lets the noise stay small. A Δ too small loses information; too large adds noise. "
            "DPSense mechanisms need no Δ."))
        right_layout.addWidget(self.bound_box)
        self.details = QGroupBox("Selected mechanism")
        self.details_layout = QVBoxLayout(self.details)
        self.description = explanation("Select a mechanism on the left.")
        self.details_layout.addWidget(self.description)
        self.form_host = QWidget()
        self.form = QFormLayout(self.form_host)
        self.details_layout.addWidget(self.form_host)
        self.expected = Banner("", "info")
        self.expected.setAccessibleName("Expected error")
        self.details_layout.addWidget(self.expected)
        right_layout.addWidget(self.details)
        right_layout.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(right)
        splitter.addWidget(scroll)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([420, 820])
        outer.addWidget(splitter, 1)
        self.current: str | None = None
        self._filling = False
        self.tree.itemChanged.connect(self._ticked)
        self.tree.currentItemChanged.connect(lambda item, _old: self._select(item))
        self.epsilon.changed.connect(self._epsilon_changed)
        self.bound.valueChanged.connect(self._bound_changed)
        state.dataset_changed.connect(self.rebuild)
        state.config_changed.connect(self._update_expected)
        state.config_changed.connect(self._sync_bound)
        state.epsilon_changed.connect(lambda e: self.epsilon.set_value(e))
        self.epsilon.set_value(state.epsilon)
        self.rebuild()

    # -- mechanism list ------------------------------------------------------------------
    def rebuild(self) -> None:
        self._filling = True
        self.tree.clear()
        kind = self.state.dataset.kind if self.state.dataset is not None else "incidence"
        families: dict[str, QTreeWidgetItem] = {}
        first = None
        for mechanism in registry.all_mechanisms(kind):
            if not mechanism.releasable:
                continue  # non-private comparison aids are not offered here
            family = families.get(mechanism.family)
            if family is None:
                family = QTreeWidgetItem([mechanism.family])
                family.setFlags(family.flags() & ~Qt.ItemIsUserCheckable)
                font = family.font(0)
                font.setBold(True)
                family.setFont(0, font)
                self.tree.addTopLevelItem(family)
                families[mechanism.family] = family
            item = QTreeWidgetItem([f"{mechanism.name}  [{mechanism.id}]"])
            item.setData(0, Qt.UserRole, mechanism.id)
            item.setToolTip(0, f"{mechanism.summary}\n{mechanism.paper}, {mechanism.reference}")
            item.setFlags(item.flags() | Qt.ItemIsUserCheckable)
            configuration = self.state.configurations.get(mechanism.id)
            item.setCheckState(0, Qt.Checked if configuration and configuration.enabled else Qt.Unchecked)
            family.addChild(item)
            first = first or item
        self.tree.expandAll()
        self.bound_box.setVisible(kind == "incidence")
        self.bound.setValue(self.state.bound or 0)
        self._filling = False
        if first is not None:
            self.tree.setCurrentItem(first)

    def _sync_bound(self) -> None:
        if self.bound.value() != (self.state.bound or 0):
            self._filling = True
            self.bound.setValue(self.state.bound or 0)
            self._filling = False

    def _ticked(self, item: QTreeWidgetItem, _column: int) -> None:
        mechanism_id = item.data(0, Qt.UserRole)
        if self._filling or not mechanism_id:
            return
        self.state.set_configuration(mechanism_id, enabled=item.checkState(0) == Qt.Checked)

    # -- parameter form ------------------------------------------------------------------
    def _select(self, item) -> None:
        mechanism_id = item.data(0, Qt.UserRole) if item is not None else None
        if not mechanism_id:
            return
        self.current = mechanism_id
        mechanism = registry.get(mechanism_id)
        self.details.setTitle(mechanism.name)
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

    def _param_changed(self, name: str, value) -> None:
        if self.current:
            self.state.set_configuration(self.current, **{name: value})

    def _epsilon_changed(self, value: float) -> None:
        self.state.set_epsilon(value)
        self._update_expected()

    def _bound_changed(self, value: int) -> None:
        if not self._filling:
            self.state.set_bound(value if value > 0 else None)

    def _update_expected(self) -> None:
        if not self.current:
            return
        mechanism = registry.get(self.current)
        params = self.state.params_for(self.current)
        data = self.state.dataset
        try:
            values = mechanism.validate(data, self.state.epsilon, params)
            facts = mechanism.public_facts(data, values) if data is not None else {}
            expected = mechanism.expected_error(self.state.epsilon, values, facts)
        except DpdeskError as error:
            self.expected.set_kind("warning")
            self.expected.setText(f"Not ready: {error}")
            return
        self.expected.set_kind("info")
        if expected and expected.get("text"):
            self.expected.setText(f"<b>Expected error at ε = {self.state.epsilon:.4g}</b> (from public settings "
                                  f"only): {expected['text']}")
        else:
            self.expected.setText("The error of this mechanism depends on the data itself; compare it on the "
                                  "Compare page (on stand-in data if you want to avoid using the true data).")
