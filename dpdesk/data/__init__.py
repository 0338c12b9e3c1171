"""Datasets and importers (no Qt here)."""

import importlib

from .dataset import CellCounts, Dataset, from_cells, from_matrix
from .detect import sniff
from .layout import FORMATS, Sniffed
from .loader import read

__all__ = ["CellCounts", "Dataset", "FORMATS", "Sniffed", "from_cells", "from_matrix", "load", "read", "reload",
           "sniff"]

#: names kept for the scripts written against them: the front door that picks memory or an engine lives a floor
#: above the data (dpdesk.loading, docs/ARCHITECTURE.md §1), so they are looked up there when asked for, and no
#: module of dpdesk uses them (tests/test_layering.py)
FRONT_DOOR = ("load", "reload")


def __getattr__(name: str):
    if name in FRONT_DOOR:
        return getattr(importlib.import_module("dpdesk.loading"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
