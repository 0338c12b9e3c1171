"""dpdesk: publish differentially private counts of a sensitive dataset.

The stable Python API (scripts rely on these names):

* :func:`load` — read a data file (transactions, pairs, matrix, records, cells);
* :func:`from_matrix`, :func:`from_cells` — wrap in-memory data;
* :func:`mechanisms` — the registered mechanisms with their parameter schemas
  (``dpdesk.mechanisms()``; ``dpdesk.mechanisms.get(id)`` for one);
* :func:`declare` — attach the public item (or cell) domain a release may publish;
* :func:`release` — run one mechanism at a given ε (``rng=None``: secure release, which
  needs a declared domain).
"""

__version__ = "0.1.0"

from .data import CellCounts, Dataset, from_cells, from_matrix  # noqa: E402
from .loading import load  # noqa: E402
from .data.domain import declare  # noqa: E402
from . import mechanisms  # noqa: E402  (a callable module: dpdesk.mechanisms())
from .api import release  # noqa: E402

__all__ = ["CellCounts", "Dataset", "__version__", "declare", "from_cells", "from_matrix", "load", "mechanisms",
           "release"]
