"""The one interface mechanisms ask of incidence data (issue #32): the in-memory matrix and the engine's
dataset both implement every member of ``dpdesk.data.dataset.IncidenceData``, and answer it alike."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import dpdesk
from dpdesk.data.dataset import Dataset, IncidenceData
from dpdesk.engine.dataset import EngineDataset

from ..conftest import DATA


def members() -> list[str]:
    names = set(getattr(IncidenceData, "__annotations__", {}))
    names |= {name for name, value in vars(IncidenceData).items()
              if not name.startswith("_") and (callable(value) or isinstance(value, property))}
    return sorted(names)


def test_the_interface_names_the_statistics():
    assert {"n_rows", "column_counts", "row_counts", "prepare_bounding", "fingerprint", "summary"} <= set(members())


@pytest.mark.parametrize("kind", [Dataset, EngineDataset])
def test_both_datasets_implement_every_member(kind):
    missing = [name for name in members() if not hasattr(kind, name) and name not in _instance_fields(kind)]
    assert not missing, f"{kind.__name__} lacks {missing}"
    for name, value in vars(IncidenceData).items():
        if callable(value) and not name.startswith("_"):
            expected = list(inspect.signature(value).parameters)
            assert list(inspect.signature(getattr(kind, name)).parameters)[:len(expected)] == expected, name


def _instance_fields(kind) -> set[str]:
    """Attributes set in __init__ (a dataclass's fields, or EngineDataset's assignments)."""
    if hasattr(kind, "__dataclass_fields__"):
        return set(kind.__dataclass_fields__)
    return {line.split("self.", 1)[1].split(" ")[0].split(":")[0]
            for line in inspect.getsource(kind.__init__).splitlines() if line.strip().startswith("self.")}


def test_memory_and_engine_answer_alike():
    path = DATA / "chess.dat.gz"
    memory, engine = dpdesk.load(path, engine="memory"), dpdesk.load(path, engine="duckdb")
    assert isinstance(memory, IncidenceData) and isinstance(engine, IncidenceData)
    for name in ("n_rows", "n_items", "nnz", "binary", "fingerprint"):
        assert getattr(memory, name) == getattr(engine, name), name
    order = np.argsort(memory.item_labels.astype(str))
    other = np.argsort(engine.item_labels.astype(str))
    assert memory.column_counts[order].tolist() == engine.column_counts[other].tolist()
    assert sorted(memory.row_counts.tolist()) == sorted(engine.row_counts.tolist())
    assert memory.summary() == engine.summary()
