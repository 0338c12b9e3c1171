"""Preferences: how much memory dpdesk may use for data — the budget ``--memory-limit`` sets on the command line.

The choice is kept in the app's settings and applied as ``DPDESK_MEMORY_LIMIT`` for this
process, so the loader, the automatic choice between memory and DuckDB, and DuckDB's own
memory limit all follow it (:func:`dpdesk.data.textio.memory_budget`).
"""

from __future__ import annotations

import os

from PySide6.QtWidgets import (QButtonGroup, QDialog, QDialogButtonBox, QHBoxLayout, QLabel,
                               QRadioButton, QVBoxLayout)

from ..data.textio import MEMORY_ENV, available_memory, format_size
from .widgets import DecimalSpinBox, explanation

MEMORY_KEY = "data/memory_limit"  # QSettings key: "" (automatic) or a size such as "4G"
_LAUNCHED_WITH = os.environ.get(MEMORY_ENV)  # a limit set before the app started stays the automatic choice


def apply_memory_preference(settings) -> None:
    """Make the saved memory limit this process's budget (or leave the automatic one)."""
    value = str(settings.value(MEMORY_KEY, "") or "")
    if value:
        os.environ[MEMORY_ENV] = value
    elif _LAUNCHED_WITH is not None:
        os.environ[MEMORY_ENV] = _LAUNCHED_WITH
    else:
        os.environ.pop(MEMORY_ENV, None)


class PreferencesDialog(QDialog):
    def __init__(self, settings, parent=None):
        super().__init__(parent)
        self.settings = settings
        self.setWindowTitle("Preferences")
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel("<b>Memory dpdesk may use for data</b>"))
        available = available_memory()
        half = f" (about {format_size(available // 2)} now)" if available else ""
        self.automatic = QRadioButton(f"Automatic: half of the memory available{half}")
        self.fixed = QRadioButton("At most")
        self.size = DecimalSpinBox()
        self.size.setRange(0.25, max(1.0, (available or 8 << 30) / (1 << 30)))
        self.size.setDecimals(2)
        self.size.setSingleStep(0.5)
        self.size.setSuffix(" GB")
        self.size.setAccessibleName("Memory limit in gigabytes")
        group = QButtonGroup(self)
        group.addButton(self.automatic)
        group.addButton(self.fixed)
        layout.addWidget(self.automatic)
        row = QHBoxLayout()
        row.addWidget(self.fixed)
        row.addWidget(self.size)
        row.addStretch(1)
        layout.addLayout(row)
        layout.addWidget(explanation(
            "A file that fits in this much memory, with room for a release, is read into memory (fastest). A larger "
            "one is read by dpdesk's embedded data engine (DuckDB), which keeps within the limit and writes what "
            "does not fit to a temporary folder in dpdesk's own folder. The command line's --memory-limit does the "
            "same."))
        buttons = QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        value = str(settings.value(MEMORY_KEY, "") or "")
        if value:
            from ..data.textio import parse_memory_size

            self.fixed.setChecked(True)
            self.size.setValue(parse_memory_size(value) / (1 << 30))
        else:
            self.automatic.setChecked(True)
            self.size.setValue(max(0.25, round((available or 8 << 30) / 2 / (1 << 30), 1)))
        self.automatic.toggled.connect(lambda on: self.size.setEnabled(not on))
        self.size.setEnabled(self.fixed.isChecked())

    def accept(self) -> None:
        value = "" if self.automatic.isChecked() else f"{int(round(self.size.value() * 1024))}M"
        self.settings.setValue(MEMORY_KEY, value)
        apply_memory_preference(self.settings)
        super().accept()
