"""Datasets and importers (no Qt here)."""

from .dataset import CellCounts, Dataset, from_cells, from_matrix
from .detect import FORMATS, Sniffed, sniff
from .loader import load, reload

__all__ = ["CellCounts", "Dataset", "FORMATS", "Sniffed", "from_cells", "from_matrix", "load", "reload", "sniff"]
