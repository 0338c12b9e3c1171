"""Running one mechanism once: its preparation (cached per dataset) and its randomized run.

Below every front end: the scripting API (:func:`dpdesk.release`), the workflow that records
secure releases in the ledger, and the comparison runner all run mechanisms through
:func:`run`. A secure run here is *not* yet a release — :func:`dpdesk.workflow.secure_release`
records it in the ledger and publishes it, and nothing else may hand it to an export.
"""

from __future__ import annotations

import threading
import weakref

from . import get
from .base import Mechanism, Release
from ..data.domain import require_domain
from ..errors import ParameterError
from ..privacy.budget import check_epsilon
from ..privacy.randomness import resolve
from ..tasks import CancelToken, ProgressFn, no_progress

# prepared state per dataset object (weakly held) and per (mechanism, public inputs)
_PREPARED: "weakref.WeakKeyDictionary[object, dict]" = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()
_MAX_PER_DATASET = 24


def prepare(data, mechanism: Mechanism, epsilon: float, params: dict, *,
            progress: ProgressFn | None = None, cancel: CancelToken | None = None):
    """The mechanism's deterministic preparation, computed once and cached per dataset."""
    key = (mechanism.id, mechanism.prepare_key(epsilon, params))
    with _LOCK:
        cache = _PREPARED.setdefault(data, {})
        if key in cache:
            return cache[key]
    prepared = mechanism.prepare(data, epsilon, params, progress or no_progress, cancel)
    with _LOCK:
        cache = _PREPARED.setdefault(data, {})
        if len(cache) >= _MAX_PER_DATASET:
            cache.pop(next(iter(cache)))
        cache[key] = prepared
    return prepared


def validate(data, mechanism_id: str, epsilon, params: dict) -> tuple[Mechanism, float, dict]:
    mechanism = get(mechanism_id)
    eps = check_epsilon(epsilon)
    values = mechanism.validate(data, eps, params)
    return mechanism, eps, values


def run(data, mechanism_id: str, epsilon, params: dict, *, rng=None, progress: ProgressFn | None = None,
        cancel: CancelToken | None = None) -> Release:
    """One run of a mechanism: ``rng=None`` draws from the operating system's CSPRNG (and needs
    the data's domain declared: a release publishes it); a seed or a Generator is exploration."""
    mechanism, eps, values = validate(data, mechanism_id, epsilon, params)
    if not mechanism.releasable and rng is None:
        raise ParameterError(f"'{mechanism_id}' is a non-private comparison aid; it can only run in "
                             "exploration mode (with a seed), never as a release.")
    source = resolve(rng)
    if source.secure:
        require_domain(data)  # a release publishes its domain: it must have been declared
    prepared = prepare(data, mechanism, eps, values, progress=progress, cancel=cancel)
    if cancel is not None:
        cancel.check()
    result = mechanism.run(data, prepared, eps, values, source)
    if source.secure:
        result.dataset_fingerprint = content_fingerprint(data)
    return result


def origin_of(data):
    """The data as read, before projection onto a declared domain."""
    while getattr(data, "origin", None) is not None:
        data = data.origin
    return data


def content_fingerprint(data) -> str:
    """The fingerprint of the data as read (before projection onto a declared domain)."""
    return origin_of(data).fingerprint
