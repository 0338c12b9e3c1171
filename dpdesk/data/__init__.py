"""Datasets and importers (no Qt here)."""

from .dataset import CellCounts, Dataset, from_cells, from_matrix
from .detect import sniff
from .layout import FORMATS, Sniffed
from .loader import read

__all__ = ["CellCounts", "Dataset", "FORMATS", "Sniffed", "from_cells", "from_matrix", "read", "sniff"]
