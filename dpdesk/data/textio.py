"""Reading a file's bytes safely and in bounded memory: regular files only, gzip streamed,
a memory budget, encodings checked piece by piece, binary garbage refused.

Each failure becomes a :class:`~dpdesk.errors.DataError` that names the file and, where
it can, the line and column.

Files are never read whole: importers take the (decompressed) content in pieces of a few
megabytes from :meth:`Source.chunks`, and check what they have built so far against a
:class:`MemoryBudget` (half of the available memory unless the steward says otherwise).
"""

from __future__ import annotations

import codecs
import gzip
import io
import os
import re
import stat
import sys
import zlib
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from ..errors import DataError, EmptyData, ParameterError, TooLargeError

try:  # POSIX: a process's address-space limit (ulimit -v); Windows has none
    import resource
except ImportError:
    resource = None

GZIP_MAGIC = b"\x1f\x8b"
PARQUET_MAGIC = b"PAR1"
ENCODINGS = ("auto", "utf-8", "utf-8-sig", "latin-1", "cp1252")
CHUNK_BYTES = 4 << 20
#: the longest item label, person identifier or field dpdesk accepts (a longer "token" is
#: not a name but a sign of the wrong file or format; refusing it keeps tokenizing linear)
MAX_FIELD_BYTES = 1 << 16
#: deflate cannot compress better than about 1032:1, so a .gz file of n bytes holds at most this × n
DEFLATE_MAX_RATIO = 1032
MEMORY_ENV = "DPDESK_MEMORY_LIMIT"
HEAD_BYTES = 1 << 20

_KINDS = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a disk device"),
          (stat.S_ISSOCK, "a socket"))


# --- the memory budget -----------------------------------------------------------------------

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?i?b?)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_memory_size(text, what: str = "memory limit") -> int:
    """Bytes of a size such as ``2G``, ``500MB``, ``1.5GiB`` or ``800000000`` (units are powers of 1024)."""
    if isinstance(text, bool):
        raise ParameterError(f"The {what} must be a size such as 2G or 500M, not {text!r}.")
    if isinstance(text, (int, float)):
        value = float(text)
    else:
        match = _SIZE.match(str(text))
        if not match:
            raise ParameterError(f"The {what} '{text}' is not a size; write it like 2G, 500M or 1.5GB.")
        value = float(match.group(1)) * _UNITS[(match.group(2) or "").lower()[:1]]
    if not value >= 1 << 20:
        raise ParameterError(f"The {what} must be at least 1M (1 MiB), not '{text}'.")
    return int(value)


def format_size(n: float) -> str:
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} bytes"


def available_memory() -> int | None:
    """Memory the system can still give, capped by this process's limits: on Windows the physical
    memory available (GlobalMemoryStatusEx); elsewhere MemAvailable from /proc/meminfo (or the
    free pages from sysconf), a container's memory limit (cgroup v2) and ``ulimit -v``."""
    if sys.platform == "win32":
        return _windows_available_memory()
    found = []
    try:
        with open("/proc/meminfo", "rb") as handle:
            for line in handle:
                if line.startswith(b"MemAvailable:"):
                    found.append(int(line.split()[1]) * 1024)
                    break
    except (OSError, ValueError, IndexError):
        pass
    if not found:
        try:
            found.append(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
        except (ValueError, OSError, AttributeError):
            pass
    # a container's memory limit (cgroup v2), and an address-space limit set on this process
    try:
        text = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        used = int(Path("/sys/fs/cgroup/memory.current").read_text().strip())
        if text != "max":
            found.append(max(int(text) - used, 0))
    except (OSError, ValueError):
        pass
    if resource is not None:
        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft != resource.RLIM_INFINITY:
            found.append(max(soft - _address_space_in_use(), 0))
    return min(found) if found else None


def _windows_available_memory() -> int | None:
    """The physical memory Windows can still give (MEMORYSTATUSEX.ullAvailPhys, what Task
    Manager shows as Available), capped by the address space this process has left."""
    import ctypes

    class MemoryStatus(ctypes.Structure):
        _fields_ = [("length", ctypes.c_uint32), ("memory_load", ctypes.c_uint32),
                    ("total_physical", ctypes.c_uint64), ("available_physical", ctypes.c_uint64),
                    ("total_page_file", ctypes.c_uint64), ("available_page_file", ctypes.c_uint64),
                    ("total_virtual", ctypes.c_uint64), ("available_virtual", ctypes.c_uint64),
                    ("available_extended_virtual", ctypes.c_uint64)]

    status = MemoryStatus()
    status.length = ctypes.sizeof(MemoryStatus)
    try:
        if not ctypes.windll.kernel32.GlobalMemoryStatusEx(ctypes.byref(status)):
            return None
    except (OSError, AttributeError):
        return None
    return min(status.available_physical, status.available_virtual) or None


def _address_space_in_use() -> int:
    try:
        with open("/proc/self/statm", "rb") as handle:
            return int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


@dataclass(frozen=True)
class MemoryBudget:
    """How much memory an import may use, and where that figure came from (for the message)."""

    limit: int
    origin: str

    def check(self, needed: float, path=None, *, line: int | None = None, projected: bool = False) -> None:
        """Refuse (:class:`TooLargeError`) when ``needed`` bytes exceed the budget."""
        if needed <= self.limit:
            return
        how = "would need about" if projected else "needs more than"
        raise TooLargeError(
            f"the data is too large for memory: reading it {how} {format_size(needed)}, more than the limit of "
            f"{format_size(self.limit)} ({self.origin}); stopped before the computer runs out of memory",
            path=path, line=line,
            expected=f"a smaller file, or a higher limit with --memory-limit or {MEMORY_ENV} if this computer has "
                     "the memory")


def memory_budget(option=None) -> MemoryBudget:
    """The budget: ``option`` (e.g. ``--memory-limit``), else ``DPDESK_MEMORY_LIMIT``, else half the available memory."""
    if option not in (None, "", "auto"):
        return MemoryBudget(parse_memory_size(option), f"the memory limit {option}")
    env = os.environ.get(MEMORY_ENV, "").strip()
    if env and env != "auto":
        return MemoryBudget(parse_memory_size(env, f"{MEMORY_ENV} setting"), f"{MEMORY_ENV}={env}")
    available = available_memory()
    if available is None:  # pragma: no cover - the system gave no figure
        return MemoryBudget(4 << 30, "a default of 4 GB; the available memory is unknown")
    return MemoryBudget(max(available // 2, 64 << 20),
                        f"half of the {format_size(available)} of memory available now")


def give_back_free_memory() -> None:
    """Return freed heap memory to the system (glibc keeps it otherwise), so the next step starts lower."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: nothing to do
        pass


# --- opening a file ------------------------------------------------------------------------

def check_regular(path: Path) -> os.stat_result:
    """``os.stat`` of ``path``, refusing anything that is not a regular file (FIFOs block, devices never end)."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise DataError("the file does not exist", path=path) from None
    except PermissionError:
        raise DataError("you do not have permission to read this file", path=path) from None
    except (OSError, ValueError) as error:
        raise DataError(f"the file cannot be read ({getattr(error, 'strerror', None) or error})", path=path) from None
    return _require_regular(info, path)


def _require_regular(info: os.stat_result, path) -> os.stat_result:
    if stat.S_ISDIR(info.st_mode):
        raise DataError("this is a folder, not a file", path=path, expected="a data file")
    if not stat.S_ISREG(info.st_mode):
        kind = next((name for test, name in _KINDS if test(info.st_mode)), "not a regular file")
        raise DataError(f"this is {kind}, not a regular file; dpdesk reads only regular files", path=path,
                        expected="a data file saved on disk")
    return info


@dataclass
class Source:
    """A data file on disk: its size, whether it is gzip, and its (decompressed) content in pieces."""

    path: Path
    size: int
    compressed: bool
    isize: int | None = None  # gzip's stored length of the last member, modulo 2^32

    @property
    def estimated_size(self) -> int:
        """The decompressed size as far as it is known before reading (a lower bound for gzip)."""
        if not self.compressed:
            return self.size
        return self.isize if self.isize is not None else self.size

    @property
    def max_size(self) -> int:
        return self.size * DEFLATE_MAX_RATIO if self.compressed else self.size

    def open(self) -> "_Reader":
        return _Reader(self)

    def chunks(self, size: int = CHUNK_BYTES) -> Iterator[bytes]:
        """The content in pieces of about ``size`` bytes (gzip decompressed on the fly)."""
        with self.open() as reader:
            while True:
                piece = reader.read(size)
                if not piece:
                    return
                yield piece

    def head(self, size: int = HEAD_BYTES) -> bytes:
        with self.open() as reader:
            return reader.read(size)


def open_source(path) -> Source:
    """A :class:`Source` for ``path`` after checking it is a readable regular file."""
    path = Path(path)
    check_regular(path)
    with _open_fd(path) as handle:
        info = os.fstat(handle.fileno())
        magic = handle.read(2)
        isize = None
        if magic == GZIP_MAGIC and info.st_size >= 20:
            handle.seek(-4, os.SEEK_END)
            isize = int.from_bytes(handle.read(4), "little")
    return Source(path, int(info.st_size), magic == GZIP_MAGIC, isize)


def _open_fd(path: Path):
    """Open for reading without ever blocking: a FIFO swapped in after the check opens and is refused."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise DataError("the file does not exist", path=path) from None
    except PermissionError:
        raise DataError("you do not have permission to read this file", path=path) from None
    except OSError as error:
        raise DataError(f"the file cannot be read ({error.strerror or error})", path=path) from None
    try:
        _require_regular(os.fstat(fd), path)
    except DataError:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


class _Reader:
    """The decompressed content, read in pieces; damage and I/O errors become :class:`DataError`."""

    def __init__(self, source: Source):
        self.source = source
        self._file = _open_fd(source.path)
        self._stream = gzip.GzipFile(fileobj=self._file, mode="rb") if source.compressed else self._file
        self.position = 0  # decompressed bytes handed out so far: the running count

    def read(self, size: int) -> bytes:
        path = self.source.path
        try:
            piece = self._stream.read(size)
        except EOFError:
            raise DataError("the compressed (.gz) file is truncated: it ends before the data does",
                            path=path, expected="a complete gzip file") from None
        except (OSError, zlib.error) as error:
            if isinstance(error, OSError) and not isinstance(error, gzip.BadGzipFile) and error.errno is not None:
                raise DataError(f"the file cannot be read ({error.strerror or error})", path=path) from None
            what = "compressed (.gz) file" if self.source.compressed else "file"
            raise DataError(f"the {what} is damaged ({error})", path=path) from None
        self.position += len(piece)
        return piece

    def close(self) -> None:
        if self._stream is not self._file:
            self._stream.close()
        self._file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def read_head(path, size: int = HEAD_BYTES) -> bytes:
    """The first ``size`` bytes of the (decompressed) content, for detection and previews."""
    return open_source(path).head(size)


def read_raw(path: str | os.PathLike, budget: MemoryBudget | None = None) -> bytes:
    """The whole (decompressed) content, for small files such as label lists.

    Refused with a clear message when it would not fit in ``budget`` (default: the usual
    budget); data files are streamed by the importers instead.
    """
    source = open_source(path)
    budget = budget or memory_budget()
    budget.check(source.estimated_size, source.path, projected=True)
    pieces, total = [], 0
    for piece in source.chunks():
        total += len(piece)
        budget.check(2 * total, source.path)  # the pieces and their join
        pieces.append(piece)
    raw = b"".join(pieces)
    del pieces
    if not raw.strip():
        raise EmptyData("the file is empty", path=source.path, expected="at least one line of data")
    return raw


def is_parquet(raw: bytes) -> bool:
    return raw[:4] == PARQUET_MAGIC


# --- text: encodings and binary content --------------------------------------------------------

# a complete, valid UTF-8 sequence of two to four bytes (what Latin-1 text essentially never holds)
_UTF8_MULTIBYTE = re.compile(rb"[\xc2-\xdf][\x80-\xbf]|\xe0[\xa0-\xbf][\x80-\xbf]|[\xe1-\xec\xee\xef][\x80-\xbf]{2}"
                             rb"|\xed[\x80-\x9f][\x80-\xbf]|\xf0[\x90-\xbf][\x80-\xbf]{2}|[\xf1-\xf3][\x80-\xbf]{3}"
                             rb"|\xf4[\x80-\x8f][\x80-\xbf]{2}")
_C1 = re.compile(rb"[\x80-\x9f]")
_CONTROL = re.compile(rb"[\x01-\x08\x0b\x0c\x0e-\x1f\x7f]")


NOT_TEXT_EXPECTED = ("a data table: text such as CSV, TSV or a transaction list, or an Excel, SPSS, Stata, SAS or "
                     "Parquet file")


def check_not_binary(raw: bytes, path, line_offset: int = 0) -> None:
    """Refuse content that is not text: NUL bytes or many control characters."""
    nul = raw.find(b"\x00")
    if nul >= 0:
        line = line_offset + raw.count(b"\n", 0, nul) + 1
        # the line number in the words, not as a place to look: a document or an image has no lines to fix
        raise DataError(f"this is not a text table: it holds binary data (a zero byte, on what would be line "
                        f"{line:,}), as a document, an image or a program does", path=path, expected=NOT_TEXT_EXPECTED)
    sample = raw[:65536]
    if len(_CONTROL.findall(sample)) > max(8, len(sample) // 100):
        raise DataError("this is not a text table: it holds binary data (many control characters), as a document, "
                        "an image or a program does", path=path, expected=NOT_TEXT_EXPECTED)


def check_encoding_name(encoding: str, path=None) -> str:
    """The codec name, refusing unknown ones and those that do not keep ASCII bytes (UTF-16…)."""
    if encoding in ENCODINGS:
        return encoding
    try:
        info = codecs.lookup(encoding)
    except (LookupError, TypeError):
        raise DataError(f"unknown text encoding '{encoding}'", path=path,
                        expected="one of " + ", ".join(ENCODINGS)) from None
    try:
        ascii_safe = "a,1\n".encode(info.name) == b"a,1\n"
    except (UnicodeError, LookupError, TypeError, ValueError):
        ascii_safe = False
    if not ascii_safe:
        raise DataError(f"the text encoding '{encoding}' is not supported (it does not write plain letters and "
                        "digits as single bytes)", path=path, expected="one of " + ", ".join(ENCODINGS))
    return encoding


def detect_encoding(raw: bytes, encoding: str = "auto", path=None) -> str:
    """The encoding of text that starts with ``raw`` (the head of a file), checked on ``raw``.

    ``auto`` takes UTF-8 (with or without BOM) when the bytes are UTF-8, refuses a mix of
    UTF-8 and other bytes (that would turn into garbled letters), and otherwise takes
    Latin-1 when no byte is a C1 control character (0x80–0x9F), which real Latin-1 text
    does not contain. The rest of the file is checked while it is read (:class:`TextCheck`).
    """
    if encoding != "auto":
        encoding = check_encoding_name(encoding, path)
    check_not_binary(raw, path)
    if encoding != "auto":
        name = "utf-8-sig" if encoding in ("utf-8", "utf-8-sig") and raw.startswith(codecs.BOM_UTF8) else encoding
        TextCheck(name, path, automatic=False).check(raw, final=False)
        return name
    name = "utf-8-sig" if raw.startswith(codecs.BOM_UTF8) else "utf-8"
    body = raw[3:] if name == "utf-8-sig" else raw
    if _utf8_prefix_ok(body):
        return name
    if name == "utf-8-sig" or _UTF8_MULTIBYTE.search(body):
        TextCheck(name, path, automatic=True).check(raw, final=False)  # raises: UTF-8 with bad bytes
    TextCheck("latin-1", path, automatic=True).check(raw, final=False)  # raises on C1 bytes
    return "latin-1"


def _utf8_prefix_ok(raw: bytes) -> bool:
    """Valid UTF-8, allowing a character cut at the end (``raw`` may be the head of a file)."""
    try:
        codecs.getincrementaldecoder("utf-8")().decode(raw, final=False)
        return True
    except UnicodeDecodeError:
        return False


class TextCheck:
    """Checks a file's text piece by piece against one encoding, naming the line of a failure.

    Pieces must be given in order; ``line_offset`` (lines before the piece) is tracked here.
    In automatic mode (the encoding was detected from the file's start) a later mix of
    encodings is refused too, so that nothing is silently garbled.
    """

    def __init__(self, encoding: str, path=None, *, automatic: bool = False):
        self.encoding = encoding
        self.path = path
        self.automatic = automatic
        self.codec = "utf-8" if encoding == "utf-8-sig" else encoding
        self._decoder = codecs.getincrementaldecoder(self.codec)("strict")
        self._lines = 0
        self._start = True

    def check(self, piece: bytes, final: bool = False) -> None:
        body = piece
        if self._start:
            self._start = False
            if self.encoding == "utf-8-sig" and body.startswith(codecs.BOM_UTF8):
                body = body[3:]
        if not body.isascii() or final:
            self._check_bytes(piece, body, final)
        if b"\x00" in piece:
            check_not_binary(piece, self.path, self._lines)
        self._lines += piece.count(b"\n")

    def _check_bytes(self, piece: bytes, body: bytes, final: bool) -> None:
        shift = len(piece) - len(body)
        if self.automatic and self.codec == "latin-1":
            bad = _C1.search(body)
            if bad is not None:
                self._fail(piece, bad.start() + shift, "is a control character in Latin-1",
                           "Latin-1 text; choose another encoding (e.g. cp1252) if you know it")
            mixed = _UTF8_MULTIBYTE.search(body)
            if mixed is not None:
                self._fail(piece, mixed.start() + shift, "starts a UTF-8 character, but earlier lines are not UTF-8: "
                           "the file mixes encodings", "one encoding throughout; choose it with --encoding")
            return
        pending = len(self._decoder.getstate()[0])  # bytes of a character cut at the previous piece's end
        try:
            self._decoder.decode(body, final=final)
        except UnicodeDecodeError as error:
            position = min(max(error.start - pending, 0) + shift, max(len(piece) - 1, 0))
            if not piece:  # the file ends inside a character
                raise DataError(f"the text cannot be decoded as {self.encoding}: the file ends inside a character",
                                path=self.path, line=self._lines + 1, expected=f"{self.encoding} text") from None
            if self.automatic:
                self._fail(piece, position, f"is not {self.encoding} (detected from the file's start)",
                           f"{self.encoding} text throughout; if the file is Latin-1 or cp1252, choose that encoding")
            self._fail(piece, position, f"cannot be decoded as {self.encoding}", f"{self.encoding} text")

    def _fail(self, piece: bytes, offset: int, problem: str, expected: str):
        line, column = _position(piece, offset)
        raise DataError(f"the text cannot be decoded: byte 0x{piece[offset]:02x} {problem}", path=self.path,
                        line=self._lines + line, column=column, expected=expected)


class _CheckedRaw(io.RawIOBase):
    """A file's bytes passed through :class:`TextCheck` on their way to a text reader."""

    def __init__(self, reader: "_Reader", check: TextCheck):
        self._reader, self._check = reader, check

    @property
    def position(self) -> int:
        """Bytes read from the file so far (decompressed)."""
        return self._reader.position

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        piece = self._reader.read(len(buffer))
        self._check.check(piece, final=not piece)
        buffer[:len(piece)] = piece
        return len(piece)


@contextmanager
def checked_text(source: Source, encoding: str, *, automatic: bool = False) -> Iterator[io.TextIOBase]:
    """The file as text (newlines kept as they are, for the csv module), checked while it is read."""
    reader = source.open()
    try:
        raw = _CheckedRaw(reader, TextCheck(encoding, source.path, automatic=automatic))
        codec = "utf-8-sig" if encoding == "utf-8-sig" else encoding
        yield io.TextIOWrapper(io.BufferedReader(raw, 1 << 20), encoding=codec, errors="strict", newline="")
    finally:
        reader.close()


def decode(raw: bytes, encoding: str = "auto", path=None) -> "Decoded":
    """Decode a small text (a label list) whole, with the checks of :func:`detect_encoding`."""
    name = detect_encoding(raw, encoding, path)
    TextCheck(name, path, automatic=encoding == "auto").check(raw, final=True)
    body = raw[3:] if name == "utf-8-sig" and raw.startswith(codecs.BOM_UTF8) else raw
    text = body.decode("utf-8" if name == "utf-8-sig" else name)
    if text.startswith("\ufeff"):
        text = text[1:]
    return Decoded(text, name)


@dataclass
class Decoded:
    text: str
    encoding: str


def _position(raw: bytes, offset: int) -> tuple[int, int]:
    line = raw.count(b"\n", 0, offset) + 1
    start = raw.rfind(b"\n", 0, offset) + 1
    return line, offset - start + 1


def head_lines(text: str, count: int = 50) -> list[str]:
    """The first ``count`` lines, without line endings (CRLF or LF)."""
    lines = text.split("\n", count)[:count]
    return [line.rstrip("\r") for line in lines]
