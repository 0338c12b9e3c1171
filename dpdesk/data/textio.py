"""Reading a file's bytes safely: gzip, encodings, binary garbage, unreadable paths.

Each failure becomes a :class:`~dpdesk.errors.DataError` that names the file and, where
it can, the line and column.
"""

from __future__ import annotations

import codecs
import gzip
import os
import zlib
from dataclasses import dataclass
from pathlib import Path

from ..errors import DataError

GZIP_MAGIC = b"\x1f\x8b"
PARQUET_MAGIC = b"PAR1"
ENCODINGS = ("auto", "utf-8", "utf-8-sig", "latin-1", "cp1252")


def read_raw(path: str | os.PathLike) -> bytes:
    """The file's content, gunzipped when it is gzip, with clear errors for bad paths."""
    path = Path(path)
    if not path.exists():
        raise DataError("the file does not exist", path=path)
    if path.is_dir():
        raise DataError("this is a folder, not a file", path=path, expected="a data file")
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except PermissionError:
        raise DataError("you do not have permission to read this file", path=path) from None
    except OSError as error:
        raise DataError(f"the file cannot be read ({error.strerror or error})", path=path) from None
    if raw[:2] == GZIP_MAGIC:
        try:
            raw = gzip.decompress(raw)
        except EOFError:
            raise DataError("the compressed (.gz) file is truncated: it ends before the data does",
                            path=path, expected="a complete gzip file") from None
        except (OSError, zlib.error) as error:
            raise DataError(f"the compressed (.gz) file is damaged ({error})", path=path) from None
    if not raw.strip():
        raise DataError("the file is empty", path=path, expected="at least one line of data")
    return raw


def is_parquet(raw: bytes) -> bool:
    return raw[:4] == PARQUET_MAGIC and raw[-4:] == PARQUET_MAGIC


def check_not_binary(raw: bytes, path) -> None:
    """Refuse content that is not text: NUL bytes or many control characters."""
    sample = raw[:65536]
    nul = sample.find(b"\x00")
    if nul >= 0:
        line = sample.count(b"\n", 0, nul) + 1
        raise DataError("the file contains binary data (a NUL byte), not text", path=path, line=line,
                        expected="a text file such as CSV or a transaction list")
    controls = sum(1 for b in sample if b < 32 and b not in (9, 10, 13))
    if controls > max(8, len(sample) // 100):
        raise DataError("the file looks like binary data, not text", path=path,
                        expected="a text file such as CSV or a transaction list")


@dataclass
class Decoded:
    text: str
    encoding: str


def decode(raw: bytes, encoding: str = "auto", path=None) -> Decoded:
    """Decode text; ``auto`` tries UTF-8 (with or without BOM), then Latin-1.

    Latin-1 accepts any byte, so in ``auto`` mode it is only chosen when the text has no
    C1 control characters (bytes 0x80–0x9F), which real Latin-1 text does not contain.
    """
    check_not_binary(raw, path)
    if encoding not in ENCODINGS:
        try:
            codecs.lookup(encoding)
        except LookupError:
            raise DataError(f"unknown text encoding '{encoding}'", path=path,
                            expected="one of " + ", ".join(ENCODINGS)) from None
    if encoding == "auto":
        if raw.startswith(codecs.BOM_UTF8):
            if not _utf8_ok(raw[3:]):
                _fail(raw, "utf-8-sig", path, 0)
            return Decoded(raw[3:].decode("utf-8"), "utf-8-sig")
        if _utf8_ok(raw):
            return Decoded(raw.decode("utf-8"), "utf-8")
        bad = next((i for i, b in enumerate(raw) if 0x80 <= b <= 0x9F), None)
        if bad is None:
            return Decoded(raw.decode("latin-1"), "latin-1")
        line, column = _position(raw, bad)
        raise DataError(f"the text cannot be decoded: byte 0x{raw[bad]:02x} is neither UTF-8 nor Latin-1",
                        path=path, line=line, column=column,
                        expected="UTF-8 or Latin-1 text; choose another encoding (e.g. cp1252) if you know it")
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError as error:
        _fail(raw, encoding, path, 0, error)
    if encoding in ("utf-8",) and text.startswith("\ufeff"):
        text = text[1:]
    return Decoded(text, encoding)


def _utf8_ok(raw: bytes) -> bool:
    """Valid UTF-8? Checked in pieces so a large file is never held twice in memory."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    step = 1 << 22
    try:
        for start in range(0, len(raw), step):
            decoder.decode(raw[start:start + step], final=start + step >= len(raw))
        return True
    except UnicodeDecodeError:
        return False


def detect_encoding(raw: bytes, encoding: str = "auto", path=None) -> str:
    """The encoding :func:`decode` would use, without keeping the decoded text."""
    if encoding != "auto":
        if encoding in ("utf-8", "utf-8-sig") and _utf8_ok(raw[3:] if raw.startswith(codecs.BOM_UTF8) else raw):
            check_not_binary(raw, path)
            return "utf-8-sig" if raw.startswith(codecs.BOM_UTF8) else encoding
        return decode(raw, encoding, path).encoding
    check_not_binary(raw, path)
    if raw.startswith(codecs.BOM_UTF8):
        if _utf8_ok(raw[3:]):
            return "utf-8-sig"
    elif _utf8_ok(raw):
        return "utf-8"
    return decode(raw, encoding, path).encoding  # the slow path raises or picks Latin-1


def _fail(raw: bytes, encoding: str, path, offset: int, error: UnicodeDecodeError | None = None):
    if error is None:
        try:
            raw.decode(encoding)
        except UnicodeDecodeError as caught:
            error = caught
    position = error.start if error is not None else 0
    line, column = _position(raw, position)
    raise DataError(f"the text cannot be decoded as {encoding} (byte 0x{raw[position]:02x})",
                    path=path, line=line, column=column, expected=f"{encoding} text")


def _position(raw: bytes, offset: int) -> tuple[int, int]:
    line = raw.count(b"\n", 0, offset) + 1
    start = raw.rfind(b"\n", 0, offset) + 1
    return line, offset - start + 1


def head_lines(text: str, count: int = 50) -> list[str]:
    """The first ``count`` lines, without line endings (CRLF or LF)."""
    lines = text.split("\n", count)[:count]
    return [line.rstrip("\r") for line in lines]
