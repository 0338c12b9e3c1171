"""Who and what a release is about: the dataset's name (the budget ledger's key) and where the
published list of items (or attribute values) comes from — asked in plain words.

The choices map one to one onto :class:`dpdesk.data.domain.DomainDeclaration`; the rules
behind them live in :mod:`dpdesk.data.domain`, not here.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (QButtonGroup, QDialog, QDialogButtonBox, QDoubleSpinBox, QFileDialog, QFormLayout,
                               QHBoxLayout, QLabel, QLineEdit, QPushButton, QRadioButton, QSpinBox, QVBoxLayout,
                               QWidget, QWizardPage)

from ..data.domain import (HOW_DISCOVERED, HOW_LIST, HOW_PUBLIC_DATA, HOW_RANGE, DomainDeclaration,
                           check_declaration)
from ..errors import DpdeskError, ParameterError
from .widgets import explanation, show_error

CHOICE_TEXT = {
    "incidence": {
        HOW_LIST: "I have a list of every item that may appear (for example a code list or a product catalogue "
                  "file)",
        HOW_RANGE: "The items are numbered from 0 up to a number I know",
        HOW_PUBLIC_DATA: "The item names in this file are public anyway — no name could reveal a person",
        HOW_DISCOVERED: "Find the items privately from the data (spends part of ε; items few people have are "
                        "left out)",
    },
    "cells": {
        HOW_LIST: "I have a file listing the values each attribute can take (JSON)",
        HOW_PUBLIC_DATA: "The values in this file are public anyway — no value could reveal a person",
        HOW_DISCOVERED: "Find the values privately from the data (spends part of ε; values few people have are "
                        "left out)",
    },
}


class PublicationChoice(QWidget):
    """The dataset name and the domain declaration, with an explanation of each choice."""

    changed = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.kind = "incidence"
        layout = QVBoxLayout(self)
        name_form = QFormLayout()
        self.name = QLineEdit()
        self.name.setAccessibleName("Which people is this data about")
        self.name.setPlaceholderText("e.g. patients of clinic A, 2025")
        name_form.addRow("Which people is this data about?", self.name)
        layout.addLayout(name_form)
        layout.addWidget(explanation("dpdesk adds up the privacy budget (ε) of every release about the same people "
                                     "under this name, whichever file they come from."))
        self.question = QLabel("")
        self.question.setWordWrap(True)
        layout.addWidget(self.question)
        self.group = QButtonGroup(self)
        self.buttons: dict[str, QRadioButton] = {}
        self.extras: dict[str, QWidget] = {}
        for how in (HOW_LIST, HOW_RANGE, HOW_PUBLIC_DATA, HOW_DISCOVERED):
            button = QRadioButton("")
            button.setAccessibleName(how)
            self.group.addButton(button)
            self.buttons[how] = button
            layout.addWidget(button)
            extra = QWidget()
            row = QHBoxLayout(extra)
            row.setContentsMargins(24, 0, 0, 6)
            self.extras[how] = extra
            layout.addWidget(extra)
        # a list file
        self.list_path = QLineEdit()
        self.list_path.setAccessibleName("File with the list of items")
        browse = QPushButton("Choose…")
        browse.clicked.connect(self._browse)
        self.extras[HOW_LIST].layout().addWidget(self.list_path, 1)
        self.extras[HOW_LIST].layout().addWidget(browse)
        # a range
        self.range_size = QSpinBox()
        self.range_size.setRange(1, 10**9)
        self.range_size.setValue(1000)
        self.range_size.setAccessibleName("How many item numbers")
        self.extras[HOW_RANGE].layout().addWidget(QLabel("Items 0 to"))
        self.extras[HOW_RANGE].layout().addWidget(self.range_size)
        self.extras[HOW_RANGE].layout().addWidget(QLabel("− 1"))
        self.extras[HOW_RANGE].layout().addStretch(1)
        # public data: nothing to set, but say what it means
        self.extras[HOW_PUBLIC_DATA].layout().addWidget(explanation(
            "The names are published as they are and the report says that you stated they are public."))
        # discovery
        self.share = QDoubleSpinBox()
        self.share.setRange(0, 90)
        self.share.setSpecialValueText("chosen by dpdesk")  # 0: the plan chooses (evaluation.discovery)
        self.share.setValue(0)
        self.share.setSuffix(" % of ε")
        self.share.setAccessibleName("Share of epsilon spent finding the items")
        self.delta = QLineEdit("1e-6")
        self.delta.setAccessibleName("Chance that an item only one person has is listed (delta)")
        self.delta.setMaximumWidth(90)
        self.discover_bound = QSpinBox()
        self.discover_bound.setRange(0, 10**6)
        self.discover_bound.setSpecialValueText("chosen by dpdesk")
        self.discover_bound.setAccessibleName("Most items counted per person while finding them")
        discover = self.extras[HOW_DISCOVERED].layout()
        for label, widget in (("spend", self.share), ("chance a one-person item is listed", self.delta),
                              ("items per person", self.discover_bound)):
            discover.addWidget(QLabel(label))
            discover.addWidget(widget)
        discover.addStretch(1)
        self.group.buttonToggled.connect(lambda *_: self._update())
        for widget in (self.name, self.list_path, self.delta):
            widget.textChanged.connect(lambda *_: self.changed.emit())
        self.set_kind("incidence")

    def set_kind(self, kind: str) -> None:
        self.kind = kind
        if kind == "incidence":
            self.question.setText("<b>The release lists every item with its count, so the list of items is "
                                  "published too.</b> Where does that list come from?")
        else:
            self.question.setText("<b>The release lists cells made of attribute values, so those values are "
                                  "published too.</b> Where do they come from?")
        for how, button in self.buttons.items():
            text = CHOICE_TEXT[kind].get(how)
            button.setVisible(text is not None)
            button.setText(text or "")
            if text is None and button.isChecked():
                self.group.setExclusive(False)
                button.setChecked(False)
                self.group.setExclusive(True)
        self.list_path.setPlaceholderText("a text file, one label per line" if kind == "incidence"
                                          else 'a JSON file: {"attribute": ["value", …]}')
        self._update()

    def set_values(self, name: str, declaration: DomainDeclaration | None) -> None:
        self.name.setText(name)
        if declaration is None:
            return
        button = self.buttons.get(declaration.kind)
        if button is not None and button.isVisible():
            button.setChecked(True)
        if declaration.kind == HOW_LIST:
            self.list_path.setText(declaration.path or "")
        elif declaration.kind == HOW_RANGE and declaration.size:
            self.range_size.setValue(int(declaration.size))
        elif declaration.kind == HOW_DISCOVERED:
            self.share.setValue(100 * float(declaration.share) if declaration.share is not None else 0)
            self.delta.setText(f"{declaration.delta:g}")
            self.discover_bound.setValue(int(declaration.bound or 0))
        self._update()

    def chosen(self) -> str | None:
        for how, button in self.buttons.items():
            if button.isChecked():
                return how
        return None

    def dataset_name(self) -> str:
        return self.name.text().strip()

    def declaration(self) -> DomainDeclaration:
        """The declaration as chosen (``ParameterError`` with a plain message if incomplete)."""
        how = self.chosen()
        cells = self.kind == "cells"
        if how is None:
            raise ParameterError("Choose where the published list of items comes from.")
        if how == HOW_LIST:
            path = self.list_path.text().strip()
            if not path:
                raise ParameterError("Choose the file with the list.")
            if not Path(path).is_file():
                raise ParameterError(f"The list file {path} does not exist.")
            return check_declaration(DomainDeclaration(HOW_LIST, path=path, cells=cells))
        if how == HOW_RANGE:
            return check_declaration(DomainDeclaration(HOW_RANGE, size=int(self.range_size.value())))
        if how == HOW_PUBLIC_DATA:
            return DomainDeclaration(HOW_PUBLIC_DATA, cells=cells)
        try:
            delta = float(self.delta.text())
        except ValueError:
            raise ParameterError(f"The chance δ must be a number such as 1e-6, not '{self.delta.text()}'.") from None
        bound = int(self.discover_bound.value()) or None
        share = self.share.value() / 100 or None
        return check_declaration(DomainDeclaration(HOW_DISCOVERED, delta=delta, share=share,
                                                   bound=None if cells else bound, cells=cells))

    def is_complete(self) -> bool:
        try:
            self.declaration()
        except DpdeskError:
            return False
        return bool(self.dataset_name())

    def _update(self) -> None:
        how = self.chosen()
        for key, extra in self.extras.items():
            extra.setVisible(key == how and self.buttons[key].isVisible())
        self.discover_bound.setVisible(self.kind == "incidence")
        self.changed.emit()

    def _browse(self) -> None:
        pattern = "Label lists (*.txt *.csv *.tsv *.gz);;All files (*)" if self.kind == "incidence" else \
            "JSON files (*.json);;All files (*)"
        path, _ = QFileDialog.getOpenFileName(self, "Choose the list", self.list_path.text(), pattern)
        if path:
            self.list_path.setText(path)


class PublicationPage(QWizardPage):
    """The wizard's last question: who the data is about and where the published list comes from."""

    def __init__(self, wizard):
        super().__init__()
        self.owner = wizard
        self.setTitle("Who and what the release is about")
        self.setSubTitle("Two questions about what will be made public, answered before any release.")
        layout = QVBoxLayout(self)
        self.choice = PublicationChoice()
        layout.addWidget(self.choice)
        layout.addStretch(1)
        self.choice.changed.connect(self.completeChanged.emit)

    def initializePage(self) -> None:
        from ..workflow import default_dataset_name

        dataset = self.owner.dataset
        self.choice.set_kind(dataset.kind if dataset is not None else "incidence")
        if not self.choice.dataset_name():
            self.choice.set_values(default_dataset_name(self.owner.path or "data"), None)

    def isComplete(self) -> bool:  # noqa: N802 - Qt API
        return self.choice.is_complete()

    def validatePage(self) -> bool:  # noqa: N802
        try:
            self.choice.declaration()
        except DpdeskError as error:
            show_error(self, error)
            return False
        return True


class PublicationDialog(QDialog):
    """Change the dataset name or the declared list after import (Release page)."""

    def __init__(self, kind: str, name: str, declaration, parent=None):
        super().__init__(parent)
        self.setWindowTitle("Who and what the release is about")
        layout = QVBoxLayout(self)
        self.choice = PublicationChoice()
        self.choice.set_kind(kind)
        self.choice.set_values(name, declaration)
        layout.addWidget(self.choice)
        buttons = QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel)
        buttons.accepted.connect(self._accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)

    def _accept(self) -> None:
        try:
            self.choice.declaration()
            if not self.choice.dataset_name():
                raise ParameterError("Name the people this data is about.")
        except DpdeskError as error:
            show_error(self, error)
            return
        self.accept()
