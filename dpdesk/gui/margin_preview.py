"""The margins of error a release would publish, previewed on a stand-in before anything is spent (issue 28).

One button and one paragraph, on the Configure page (the selected mechanism) and the Release page (the
mechanism about to run). The work is :func:`dpdesk.evaluation.preview.margin_preview`, on a worker: the
mechanism runs on synthetic data shaped by the declared facts only, never on the data.
"""

from __future__ import annotations

from typing import Callable

from PySide6.QtWidgets import QHBoxLayout, QPushButton, QSizePolicy, QVBoxLayout, QWidget

from ..data.domain import HOW_DISCOVERED
from ..errors import DpdeskError
from ..evaluation.preview import margin_preview
from .widgets import explanation
from .workers import Task


class MarginPreviewRow(QWidget):
    """``inputs()`` gives (kind, mechanism id, ε, params, domain size, typical row length or None), or raises a
    DpdeskError that says what is missing. Call :meth:`forget` whenever those inputs change."""

    def __init__(self, inputs: Callable[[], tuple], parent=None):
        super().__init__(parent)
        self.inputs = inputs
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        row = QHBoxLayout()
        self.button = QPushButton("Preview the margins of error")
        self.button.setAccessibleName("Preview the margins of error on a stand-in")
        self.button.setToolTip("Runs the mechanism, with these settings, on synthetic data shaped by what you "
                               "declared (never on your data) and shows the margins of error its values would "
                               "get. It costs no privacy budget.")
        self.button.setSizePolicy(QSizePolicy.Fixed, QSizePolicy.Fixed)
        row.addWidget(self.button)
        row.addStretch(1)
        layout.addLayout(row)
        self.text = explanation("")
        self.text.setAccessibleDescription("Margins of error previewed on a stand-in")
        self.text.setVisible(False)
        layout.addWidget(self.text)
        self.task: Task | None = None
        self.button.clicked.connect(self.run)

    def run(self) -> None:
        try:
            kind, mechanism_id, epsilon, params, size, length = self.inputs()
        except DpdeskError as error:
            self.say(f"No preview: {error}")
            return
        task = Task(margin_preview, kind, mechanism_id, epsilon, params, size, typical_row_length=length,
                    progress=False, parent=self)
        self.task = task
        # a preview that arrives after the settings changed is not shown (it was for the settings before)
        task.succeeded.connect(lambda preview: task is self.task and self.say(preview.text))
        task.failed.connect(lambda error, _details: task is self.task and self.say(f"No preview: {error}"))
        task.finished.connect(lambda: self.button.setEnabled(True))
        self.button.setEnabled(False)
        self.say("Running the mechanism on a stand-in…")
        task.start()

    def say(self, text: str) -> None:
        self.text.setText(text)
        self.text.setVisible(bool(text))

    def forget(self) -> None:
        """A preview holds for the settings it ran with only."""
        self.task = None
        self.say("")


def declared_size_or_why(state, size_of: Callable[[], int]) -> int:
    """The declared number of items (or cells) a stand-in needs, or a DpdeskError saying why there is none."""
    data, declaration = state.dataset, state.domain_declaration
    if data is None:
        raise DpdeskError("import data first.")
    what = "items" if data.kind == "incidence" else "cells"
    if declaration is None:
        raise DpdeskError(f"a stand-in needs the number of {what}: declare where the published list comes from "
                          "first (Release page, Change…).")
    if declaration.kind == HOW_DISCOVERED:
        raise DpdeskError(f"a stand-in needs the number of {what}, which is not known beforehand when the list is "
                          "found privately during the release.")
    return size_of()
