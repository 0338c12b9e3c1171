"""The scripting API behind ``dpdesk.release`` (the CLI and the GUI call the same workflow).

A secure release from a script is a release like any other: it is checked against the
dataset's budget cap before any noise is drawn, recorded in the budget ledger, and returned
as published (whole numbers ≥ 0 unless ``raw=True``) — there is no route to a secure result
that the ledger does not see.
"""

from __future__ import annotations

from .data.domain import require_domain
from .errors import ParameterError
from .mechanisms.base import Release
from .mechanisms.running import content_fingerprint, prepare, run, validate
from .tasks import CancelToken, ProgressFn

__all__ = ["content_fingerprint", "prepare", "release", "validate"]


def release(data, mechanism_id: str, *, epsilon, rng=None, progress: ProgressFn | None = None,
            cancel: CancelToken | None = None, dataset: str | None = None, raw: bool = False,
            override_cap: bool = False, ledger=None, **params) -> Release:
    """Run one mechanism on ``data`` at privacy level ``epsilon``.

    ``rng=None`` is release mode: the operating system's CSPRNG, the dataset's budget cap
    checked before any noise is drawn, the release recorded in the budget ledger (under
    ``dataset``, the name of the population the data is about; default ``data.name``) and
    returned as published — whole numbers ≥ 0, or the raw values with ``raw=True`` — ready
    for :func:`dpdesk.workflow.export_release`. It needs the data's item (or cell) domain
    declared (``dpdesk.declare(data, items=…)``), because it publishes it. An int seed or a
    ``numpy.random.Generator`` is exploration mode: reproducible, marked, never recorded
    and never exportable, and it may use the data's own labels. Mechanism parameters are
    keyword arguments, e.g. ``bound=20`` for the declared Δ.
    """
    if rng is not None:
        return run(data, mechanism_id, epsilon, params, rng=rng, progress=progress, cancel=cancel)
    mechanism, _, _ = validate(data, mechanism_id, epsilon, params)  # the same refusals as a seeded run, first
    if not mechanism.releasable:
        raise ParameterError(f"'{mechanism_id}' is a non-private comparison aid; it can only run in "
                             "exploration mode (with a seed), never as a release.")
    require_domain(data)
    from .workflow import default_dataset_name, secure_release

    if dataset is None:  # the name the command line gives the same file, so both add up to one budget
        path = (getattr(data, "source", None) or {}).get("path")
        dataset = default_dataset_name(path) if path else data.name
    published, _ = secure_release(data, mechanism_id, epsilon, params, dataset=dataset, raw=raw,
                                  override_cap=override_cap, ledger=ledger, progress=progress, cancel=cancel)
    return published
