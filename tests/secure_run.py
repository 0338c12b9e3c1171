"""A secure run of a mechanism that is not a release: for tests of what a report or a ledger does
with a mechanism's output. (``dpdesk.release`` records every secure release in the ledger and
publishes it; these tests publish and record by hand, as the workflow does.)"""

from dpdesk.mechanisms.running import run


def secure_run(data, mechanism_id: str, *, epsilon, **params):
    return run(data, mechanism_id, epsilon, params)
