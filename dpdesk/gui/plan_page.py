"""Plan: Shoaran, Thomo & Weber's calculator — how big the noise is, how big a count must be to
stay accurate, and the ε an accuracy target needs. Uses public numbers only, no data."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (QDoubleSpinBox, QFormLayout, QGroupBox, QHBoxLayout, QLineEdit, QPushButton,
                               QScrollArea, QVBoxLayout, QWidget)

from ..errors import DpdeskError, ParameterError
from ..privacy import planner
from .state import AppState
from .widgets import Banner, PlotPanel, explanation, heading


def _spin(low, high, value, step, decimals, name):
    spin = QDoubleSpinBox()
    spin.setRange(low, high)
    spin.setDecimals(decimals)
    spin.setSingleStep(step)
    spin.setValue(value)
    spin.setAccessibleName(name)
    return spin


class PlanPage(QWidget):
    def __init__(self, state: AppState, parent=None):
        super().__init__(parent)
        self.state = state
        outer = QVBoxLayout(self)
        outer.addWidget(heading("④ Plan: how accurate can the counts be?"))
        outer.addWidget(explanation(
            "Noise of scale λ = Δ/ε exceeds ±z with probability pr, where z = −λ·ln(pr). A count of at least "
            "z / r then has relative error at most r with probability 1 − pr: its <i>minimum true answer</i> "
            "(Shoaran, Thomo &amp; Weber, Eq. 4 and 6). Nothing here uses the data."))
        inner = QWidget()
        layout = QVBoxLayout(inner)
        top = QHBoxLayout()
        calc = QGroupBox("Noise and minimum true answer")
        form = QFormLayout(calc)
        self.epsilon = _spin(0.001, 10, state.epsilon, 0.05, 4, "Epsilon")
        self.probability = _spin(0.001, 0.999, 0.05, 0.01, 3, "Probability that the noise is larger")
        self.relative = _spin(0.001, 10, 0.10, 0.01, 3, "Relative error target")
        self.sensitivity = _spin(0.001, 1e9, float(state.bound or 1), 1, 3, "Sensitivity (Delta)")
        self.index = QLineEdit()
        self.index.setPlaceholderText("optional, e.g. 1, 10 (DIFF query index)")
        self.index.setAccessibleName("Query index")
        form.addRow("ε:", self.epsilon)
        form.addRow("probability pr:", self.probability)
        form.addRow("relative error r:", self.relative)
        form.addRow("sensitivity Δ:", self.sensitivity)
        form.addRow("query index γ:", self.index)
        self.result = Banner("", "info")
        form.addRow(self.result)
        top.addWidget(calc, 1)
        inverse = QGroupBox("What ε do I need?")
        inverse_form = QFormLayout(inverse)
        self.answer = _spin(1, 1e12, 1000, 100, 0, "Smallest count that must be accurate")
        self.target_relative = _spin(0.001, 10, 0.10, 0.01, 3, "Required relative error")
        self.target_probability = _spin(0.001, 0.999, 0.05, 0.01, 3, "Allowed failure probability")
        inverse_form.addRow(explanation("“I need counts of at least N to be within r% of the truth with "
                                        "probability 1 − p.”"))
        inverse_form.addRow("N (counts of at least):", self.answer)
        inverse_form.addRow("r (within, relative):", self.target_relative)
        inverse_form.addRow("p (may fail with probability):", self.target_probability)
        self.needed = Banner("", "ok")
        inverse_form.addRow(self.needed)
        self.use = QPushButton("Use this ε in Configure")
        self.use.setAccessibleName("Use the computed epsilon")
        inverse_form.addRow(self.use)
        top.addWidget(inverse, 1)
        layout.addLayout(top)
        plots = QVBoxLayout()
        self.noise_panel = PlotPanel("Noise vs probability", x_label="probability pr",
                                     y_label="noise magnitude z exceeded with probability pr")
        self.mta_panel = PlotPanel("Minimum true answer vs ε", x_label="ε (log scale)",
                                   y_label="minimum true answer (log scale)")
        for panel in (self.noise_panel, self.mta_panel):
            panel.setMinimumHeight(340)
            plots.addWidget(panel)
        layout.addLayout(plots, 1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        scroll.setWidget(inner)
        outer.addWidget(scroll, 1)
        for spin in (self.epsilon, self.probability, self.relative, self.sensitivity, self.answer,
                     self.target_relative, self.target_probability):
            spin.valueChanged.connect(self.update)
        self.index.textChanged.connect(self.update)
        self.use.clicked.connect(self._use)
        state.epsilon_changed.connect(lambda e: self.epsilon.setValue(e))
        state.config_changed.connect(lambda: self.sensitivity.setValue(float(state.bound or self.sensitivity.value())))
        self._needed = None
        self.update()

    def _index(self):
        text = self.index.text().strip()
        if not text:
            return None
        try:
            return [float(x) for x in text.replace(";", ",").split(",") if x.strip()]
        except ValueError:
            raise ParameterError("The query index must be numbers separated by commas.") from None

    def update(self) -> None:  # noqa: D401 - Qt-style slot name
        eps, pr, re_ = self.epsilon.value(), self.probability.value(), self.relative.value()
        delta = self.sensitivity.value()
        try:
            index = self._index()
            z = planner.noise_magnitude(eps, pr, delta, index)
            mta = planner.minimum_true_answer(eps, pr, re_, delta, index)
        except DpdeskError as error:
            self.result.set_kind("warning")
            self.result.setText(str(error))
            return
        self.result.set_kind("info")
        lines = []
        for k, (zi, mi) in enumerate(zip(z, mta)):
            name = f"Query {k + 1}: " if len(z) > 1 else ""
            lines.append(f"{name}the noise exceeds ±<b>{zi:,.1f}</b> with probability {pr:g}; counts of at least "
                         f"<b>{mi:,.0f}</b> stay within {re_:.0%} of the truth with probability {1 - pr:g}.")
        self.result.setText("<br>".join(lines))
        try:
            self._needed = planner.epsilon_needed(self.answer.value(), self.target_probability.value(),
                                                  self.target_relative.value(), delta, index)
            probability, _ = planner.odds_after(self._needed)
            self.needed.set_kind("ok")
            self.needed.setText(f"You need <b>ε ≈ {self._needed:.4g}</b> (with Δ = {delta:g}). At that ε, a 50/50 "
                                f"guess about a person could rise to at most {probability:.0%}.")
            self.use.setEnabled(self._needed <= 10)
        except DpdeskError as error:
            self.needed.set_kind("warning")
            self.needed.setText(str(error))
            self.use.setEnabled(False)
        self._draw(eps, re_, delta, index)

    def _draw(self, eps, re_, delta, index) -> None:
        probabilities = np.linspace(0.01, 0.99, 99)
        panel = self.noise_panel
        panel.clear()
        rows = []
        for i, e in enumerate((eps / 3, eps, eps * 3)):
            z = [-delta / e * np.log(p) for p in probabilities]
            label = f"ε = {e:.3g}" + (" (yours)" if i == 1 else "")
            panel.add_series(label, probabilities, z, i, symbol=None)
            rows += [[label, p, v] for p, v in zip(probabilities[::7], z[::7])]
        panel.set_table(["curve", "pr", "z"], rows)
        panel.set_caption("Shoaran Fig. 1: each curve shows the noise magnitude that is exceeded with the given "
                          f"probability, for sensitivity Δ = {delta:g}. Read it as: “pr of the time, the noise is "
                          "at least z”.")
        panel = self.mta_panel
        panel.clear()
        panel.plot.setLogMode(x=True, y=True)
        epsilons = np.logspace(-3, 1, 60)
        rows = []
        for i, pr in enumerate((0.01, 0.05, 0.1)):
            mta = [planner.minimum_true_answer(e, pr, re_, delta)[0] for e in epsilons]
            panel.add_series(f"pr = {pr:g}", epsilons, mta, i, symbol=None)
            rows += [[f"pr = {pr:g}", e, m] for e, m in zip(epsilons[::6], mta[::6])]
        panel.set_table(["curve", "ε", "minimum true answer"], rows)
        panel.set_caption(f"Shoaran Fig. 2: the smallest count that stays within {re_:.0%} of the truth with "
                          "probability 1 − pr, as ε grows. Counts below the curve are likely to be too noisy to use.")

    def _use(self) -> None:
        if self._needed is not None:
            self.state.set_epsilon(self._needed)
