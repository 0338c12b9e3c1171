"""The mechanism registry (docs/ARCHITECTURE.md §4).

``dpdesk.mechanisms()`` lists the registered mechanisms (this module is callable so that
the documented API name and the package name coincide); ``get(id)`` returns one.
Each family lives in its own module, listed in ``_MODULES``; a module registers its
classes with :func:`register`.
"""

from __future__ import annotations

import importlib
import sys
import types

from ..errors import ParameterError
from .base import BOUND, CellSummary, Diagnostic, Mechanism, Param, Release

_MODULES = ("counts", "diff", "gs", "ahp", "fpa", "dpsense", "sparse")
_REGISTRY: dict[str, Mechanism] = {}
_loaded = False


def register(cls):
    """Class decorator: instantiate the mechanism and add it to the registry."""
    instance = cls()
    if not instance.id or instance.id in _REGISTRY:
        raise ValueError(f"mechanism id {instance.id!r} is empty or already registered")
    _REGISTRY[instance.id] = instance
    return cls


def _load() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for name in _MODULES:
        try:
            importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as error:  # a family not written yet
            if error.name != f"{__name__}.{name}":
                raise


def all_mechanisms(kind: str | None = None) -> list[Mechanism]:
    """Registered mechanisms in display order (optionally only those for ``kind`` data)."""
    _load()
    found = sorted(_REGISTRY.values(), key=lambda m: (m.order, m.id))
    return [m for m in found if kind is None or m.data_kind == kind]


def get(mechanism_id: str) -> Mechanism:
    _load()
    try:
        return _REGISTRY[mechanism_id]
    except KeyError:
        raise ParameterError(f"Unknown mechanism '{mechanism_id}'. Known mechanisms: "
                             + ", ".join(m.id for m in all_mechanisms()) + ".") from None


class _CallableModule(types.ModuleType):
    def __call__(self, kind: str | None = None) -> list[Mechanism]:
        return all_mechanisms(kind)


sys.modules[__name__].__class__ = _CallableModule

__all__ = ["BOUND", "CellSummary", "Diagnostic", "Mechanism", "Param", "Release", "all_mechanisms", "get", "register"]
