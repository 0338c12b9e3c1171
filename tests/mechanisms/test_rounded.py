"""lpa-rounded: schema, rounding, a secure release to files, and a privacy audit."""

import numpy as np
import scipy.sparse as sp

import dpdesk
from dpdesk.workflow import release_to_files
from tests.audit import audit, release_sampler
from tests.mechanisms.test_counts import neighbours, person_features


def data(rows=60, items=5, extra=False):
    dense = np.zeros((rows + extra, items), dtype=np.int64)
    dense[np.arange(rows), np.arange(rows) % items] = 1
    if extra:
        dense[-1, 0] = 1
    return dpdesk.from_matrix(sp.csr_matrix(dense), [f"x{j}" for j in range(items)], name="toy")


def test_schema_and_rounding():
    described = dpdesk.mechanisms.get("lpa-rounded").describe()
    assert [p["name"] for p in described["parameters"]] == ["bound", "step"]
    release = dpdesk.release(data(), "lpa-rounded", epsilon=1.0, bound=1, step=5, rng=3)
    assert np.all(release.values % 5 == 0) and release.values.shape == (5,)
    assert "rounded to multiples of 5" in release.report["notes"][0]


def test_secure_release_to_files(tmp_path, dpdesk_home):
    written = release_to_files(data(), "lpa-rounded", 1.0, {"bound": 1, "step": 10}, tmp_path / "out",
                               reports=("html",))
    assert {p.name for p in written} == {"release.csv", "release.json", "privacy-report.html"}


def test_audit_stays_within_epsilon():
    first, second = neighbours()
    result = audit(release_sampler("lpa-rounded", epsilon=1.0, bound=3, step=1), first, second, runs=6000,
                   features=person_features, seed=7)
    assert result.epsilon_lower <= 1.0, str(result)
