"""Writing release files safely.

* Atomic: each file is written to a temporary name in the same folder, flushed and
  fsynced, then renamed over the final name, so a crash never leaves a partial file
  under the final name. A batch writes every temporary file first and renames last.
* No silent overwrite: an existing file is refused unless ``force`` is given.
* No exploration results: a release made with a seeded generator is refused.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import ExportError

RELEASE_FORMATS = ("csv", "json", "parquet")
# the ledger entry's hashes of the raw form's files (a release published as whole numbers keeps both)
RAW_PREFIX = "raw/"
COLUMNS = {
    "margin95": "",  # its meaning is in the release's publication notes (dpdesk.mechanisms.publish)
    "item": "the item's label, from the declared item list",
    "noisy_count": "the published count of people who have the item (differentially private)",
    "cell": "the cell's number in the declared table (attributes in the order listed, the last varying fastest)",
    "label": "the cell's attribute values",
    "value": "the published noisy count of the cell (or range, or sketch bucket)",
    "weight": ("an estimate of the cell's count including what the sampling left out; a weight may be below 0, "
               "and sums of weights over many cells are unbiased (sampling summaries)"),
}


def sha256_bytes(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


def check_targets(paths, force: bool) -> None:
    """Refuse before any work when a target exists (and ``force`` is not given) or is unwritable."""
    for path in paths:
        path = Path(path)
        if path.exists() and not force:
            raise ExportError(f"{path} already exists. Choose another folder, or allow overwriting "
                              "(--force on the command line).")
        if path.exists() and path.is_dir():
            raise ExportError(f"{path} is a folder; cannot write a file there.")


def write_files(files: dict, *, force: bool = False) -> list[Path]:
    """Write ``{path: bytes}`` atomically (all temporary files first, then the renames)."""
    paths = [Path(p) for p in files]
    check_targets(paths, force)
    temporaries = []
    try:
        for path, content in zip(paths, files.values()):
            path.parent.mkdir(parents=True, exist_ok=True)
            handle = tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}.", suffix=".part",
                                                 delete=False)
            with handle:
                handle.write(content)
                handle.flush()
                os.fsync(handle.fileno())
            temporaries.append((handle.name, path))
        for temporary, path in temporaries:
            if path.exists() and not force:  # appeared meanwhile
                raise ExportError(f"{path} appeared while writing; nothing was overwritten.")
            os.replace(temporary, path)
    except PermissionError as error:
        raise ExportError(f"Cannot write to {error.filename or paths[0].parent}: permission denied.") from None
    except OSError as error:
        if isinstance(error, ExportError):
            raise
        raise ExportError(f"Cannot write the release files: {error.strerror or error}.") from None
    finally:
        for temporary, _ in temporaries:
            if os.path.exists(temporary):
                os.unlink(temporary)
    _fsync_dir(paths[0].parent if paths else None)
    return paths


def _fsync_dir(folder) -> None:
    if folder is None:
        return
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_text(path, text: str, *, force: bool = False) -> Path:
    return write_files({Path(path): text.encode("utf-8")}, force=force)[0]


def require_release(release) -> None:
    if release.exploration:
        raise ExportError("This result was made in exploration mode (with a seed), which is predictable "
                          "and not private. Run the release again with secure randomness to export it.")


def require_recorded(release) -> None:
    """Refuse to export a release the budget ledger has not recorded (its ε would be spent unseen)."""
    require_release(release)
    if not (release.report.get("ledger") or {}).get("entry"):
        raise ExportError("This release is not recorded in the budget ledger, so it cannot be exported: make "
                          "releases with dpdesk.release, dpdesk release or the app, which record them.")


def _whole_if_integral(values) -> np.ndarray:
    """Numbers as int64 when all are whole (so files show 12, not 12.0), else as they are."""
    values = np.asarray(values)
    if values.dtype.kind in "iu" or values.size == 0:
        return values.astype(np.int64)
    return values.astype(np.int64) if np.all(values == np.round(values)) else values.astype(np.float64)


def release_table(release) -> pd.DataFrame:
    """The released numbers as a table (item,noisy_count, or the cells of a summary), with their margins.

    ``margin95`` is left out only for releases recorded before margins were published, so
    that they are written again byte for byte.
    """
    if release.values is not None:
        table = {"item": [str(x) for x in release.labels], "noisy_count": _whole_if_integral(release.values)}
    else:
        cells = release.cells
        table = {"cell": cells.indices.astype(np.int64)}
        if cells.info.get("labels") is not None:
            table["label"] = cells.info["labels"]
        table["value"] = _whole_if_integral(cells.values)
        if cells.weights is not None:
            table["weight"] = (_whole_if_integral(cells.weights) if release.margin95 is not None
                               or margins_withheld(release) else cells.weights)
    if release.margin95 is not None:
        table["margin95"] = _whole_if_integral(release.margin95)
    elif margins_withheld(release):  # the column stays (scripts read it), empty: no margin was published
        table["margin95"] = np.full(len(table["item" if "item" in table else "cell"]), np.nan)
    return pd.DataFrame(table)


def margins_withheld(release) -> bool:
    """Whether the mechanism published no margins of error (and said why): the margin95 column is empty."""
    return bool((release.report.get("publication") or {}).get("margin_withheld"))


# a dyadic summary lists ranges of cells (nodes of the dyadic transform), not cells
DYADIC_COLUMNS = {
    "cell": "the range's number (its node in the dyadic transform: the ranges of 1 cell first, then those of 2, 4, "
            "… cells, each level in the cells' order), not a cell's number",
    "label": "the cells the range covers (cell numbers: the attributes in the order listed, the last varying "
             "fastest)",
    "value": "the published noisy count of the range: the sum of the counts of the cells it covers, plus noise",
}


def _mechanism_of(release):
    """The mechanism that made ``release`` (None for an id this dpdesk does not know)."""
    from ..errors import ParameterError
    from ..mechanisms import get

    mechanism_id = (release.report.get("mechanism") or {}).get("id") or release.mechanism
    try:
        return get(mechanism_id)
    except ParameterError:
        return None


def column_meanings(release) -> dict:
    """What each column of the release files holds (in release.json and the report).

    The names are fixed (readers' scripts use them); the meanings depend on the mechanism: a
    mechanism may word its columns with a ``column_meanings`` attribute (ALPA's one average, the
    GS family's group averages), and a dyadic or sketch summary lists ranges or buckets, not cells.
    """
    meanings = {name: COLUMNS[name] for name in release_table_columns(release)}
    kind = (release.cells.info or {}).get("kind") if release.cells is not None else None
    if kind == "sketch":
        meanings["cell"] = "the bucket: j·w + b for bucket b of row j (the hash functions are in the metadata)"
        meanings["value"] = "the bucket's noisy sum (cells are added with a random sign, so it can be below 0)"
    elif kind == "dyadic":
        meanings.update({name: text for name, text in DYADIC_COLUMNS.items() if name in meanings})
    own = getattr(_mechanism_of(release), "column_meanings", None) or {}
    meanings.update({name: text for name, text in own.items() if name in meanings})
    if "margin95" in meanings:
        publication = release.report.get("publication") or {}
        meanings["margin95"] = publication.get("margin95", "")
    return meanings


def release_table_columns(release) -> list[str]:
    if release.values is not None:
        names = ["item", "noisy_count"]
    else:
        names = ["cell"] + (["label"] if release.cells.info.get("labels") is not None else []) + ["value"] \
            + (["weight"] if release.cells.weights is not None else [])
    return names + (["margin95"] if release.margin95 is not None or margins_withheld(release) else [])


def render_release(release, formats=("csv", "json"), *, data_hashes: dict | None = None) -> dict[str, bytes]:
    """The release files' content by file name, in memory (so they can be hashed first).

    ``release.json`` lists the sha256 of the data files rendered in the same call, plus
    ``data_hashes`` (those rendered earlier). Refuses an exploration (seeded) result, so no
    code path can turn one into release files.
    """
    require_release(release)
    unknown = [f for f in formats if f not in RELEASE_FORMATS]
    if unknown:
        raise ExportError(f"Unknown release format(s): {', '.join(unknown)}; choose from "
                          + ", ".join(RELEASE_FORMATS) + ".")
    table = release_table(release)
    files: dict[str, bytes] = {}
    if "csv" in formats:
        files["release.csv"] = table.to_csv(index=False, lineterminator="\n").encode("utf-8")
    if "parquet" in formats:
        files["release.parquet"] = _parquet_with_metadata(table, release)
    if "json" in formats:
        hashes = dict(data_hashes or {})
        hashes.update({name: sha256_bytes(c) for name, c in files.items()})
        metadata = release_metadata(release, hashes)
        metadata["values"] = json.loads(table.to_json(orient="records"))
        files["release.json"] = _json_with_one_value_a_line(metadata).encode("utf-8")
    return files


def _json_with_one_value_a_line(metadata: dict) -> str:
    """``metadata`` as indented JSON, its ``values`` one published row a line.

    Python's indenting encoder is pure Python; the rows (tens of thousands) go through the C
    encoder one by one instead, which makes a large release.json several times faster to write
    and still readable line by line. The same JSON value as ``json.dumps(metadata, indent=2)``.
    """
    values = metadata["values"]
    head = json.dumps({**metadata, "values": []}, indent=2, ensure_ascii=False, default=_json_default)
    if not values:
        return head
    rows = ",\n    ".join(json.dumps(row, ensure_ascii=False, default=_json_default) for row in values)
    before, after = head.rsplit('"values": []', 1)
    return f'{before}"values": [\n    {rows}\n  ]{after}'


PARQUET_METADATA_KEY = b"dpdesk.release"


def _parquet_with_metadata(table: pd.DataFrame, release) -> bytes:
    """The table as Parquet, with the public metadata (without file hashes) in the schema under
    ``dpdesk.release``, so the file describes itself like release.json does."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    arrow = pa.Table.from_pandas(table, preserve_index=False)
    metadata = release_metadata(release, {})
    del metadata["files_sha256"]
    # the ledger reference is added after the entry is recorded, and the entry records this
    # file's hash: keep it out, so the file (and its hash) is the same when exported again
    metadata.pop("ledger", None)
    metadata.pop("dataset_budget", None)
    text = json.dumps(metadata, ensure_ascii=False, default=_json_default).encode("utf-8")
    arrow = arrow.replace_schema_metadata({**(arrow.schema.metadata or {}), PARQUET_METADATA_KEY: text})
    buffer = io.BytesIO()
    pq.write_table(arrow, buffer)
    return buffer.getvalue()


def release_metadata(release, hashes: dict[str, str]) -> dict:
    """Public metadata of a release: the public report plus file hashes (no true-data values)."""
    report = dict(release.report)
    if release.margin95 is not None or margins_withheld(release):
        report["columns"] = column_meanings(release)
    report["files_sha256"] = hashes
    # the dataset's fingerprint is a function of the true data (a membership test for
    # someone who knows everyone else): it stays in the local ledger, never in public files
    report["dataset"] = {"name": release.dataset_name}
    return report


def _json_default(value):
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return float(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)


def verify_export(ledger, folder) -> str | None:
    """Check an exported release folder against ``ledger``: ``None`` if it matches, else why not."""
    reference = read_export_reference(folder)
    return reference if isinstance(reference, str) else ledger.verify_reference(reference)


def read_export_reference(folder) -> dict | str:
    """The ledger reference an exported release carries (from its release.json), or why there is none.

    Returns ``{"ledger", "entry", "entry_hash", "files"}`` where ``files`` maps each data
    file present in the folder to its sha256.
    """
    folder = Path(folder)
    path = folder / "release.json"
    if not path.is_file():
        return f"{folder} has no release.json, which carries the release's ledger entry"
    try:
        metadata = json.loads(path.read_text(encoding="utf-8"))
        reference = metadata["ledger"]
        out = {"ledger": str(reference["ledger"]), "entry": int(reference["entry"]),
               "entry_hash": str(reference["entry_hash"])}
    except (OSError, ValueError, KeyError, TypeError):
        return f"{path} does not name a ledger entry (damaged, or written by an earlier dpdesk)"
    files = {}
    for name in ("release.csv", "release.parquet"):
        if (folder / name).is_file():
            files[name] = sha256_bytes((folder / name).read_bytes())
    listed = metadata.get("files_sha256") or {}
    for name, digest in files.items():
        if name in listed and listed[name] != digest:
            return f"{folder / name} was changed after it was exported (its hash differs from release.json's)"
    # the raw values of a release published as whole numbers: the entry recorded their hashes apart
    raw = bool((metadata.get("publication") or {}).get("first_published_as"))
    out["files"] = {(RAW_PREFIX + name if raw else name): digest for name, digest in files.items()}
    return out
