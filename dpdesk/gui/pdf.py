"""HTML to PDF with Qt's own PDF writer (no browser, no network, fonts embedded).

:func:`html_to_pdf` lays the HTML out with ``QTextDocument`` and prints it to a
``QPdfWriter`` writing into memory (A4, page numbers at the foot of each page). Qt embeds
the subsets of the (system) fonts it used, so the PDF looks the same everywhere. It needs
a ``QGuiApplication``; when none exists (the command line) one is created on the
``offscreen`` platform, which needs no display. The report HTML keeps to the subset of
HTML and CSS that Qt's rich-text engine supports (see dpdesk.report.public).

The QTextDocument, painter and writer are all local to the call, so it may run in a worker
thread once the application exists.
"""

from __future__ import annotations

from PySide6.QtCore import QBuffer, QByteArray, QCoreApplication, QIODevice, QMarginsF
from PySide6.QtGui import QFont, QGuiApplication, QPageLayout, QPageSize, QPdfWriter, QTextDocument

# kept alive for the life of the process once created here
_APPLICATION: QGuiApplication | None = None
RESOLUTION_DPI = 300
MARGINS_MM = QMarginsF(8, 8, 8, 8)  # QTextDocument.print_ adds its own 2 cm margin inside these
BASE_FONT = ("DejaVu Sans", 10)


def _ensure_application() -> None:
    global _APPLICATION
    existing = QCoreApplication.instance()
    if existing is None:
        _APPLICATION = QGuiApplication(["dpdesk", "-platform", "offscreen"])
    elif not isinstance(existing, QGuiApplication):
        raise RuntimeError("html_to_pdf needs a QGuiApplication (fonts), but a plain QCoreApplication exists.")


def html_to_pdf(html: str, *, title: str = "") -> bytes:
    """The PDF (bytes) of an HTML page, laid out by Qt on A4 pages."""
    _ensure_application()
    content = QByteArray()
    buffer = QBuffer(content)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    writer = QPdfWriter(buffer)
    writer.setResolution(RESOLUTION_DPI)
    writer.setPageSize(QPageSize(QPageSize.PageSizeId.A4))
    writer.setPageMargins(MARGINS_MM, QPageLayout.Unit.Millimeter)
    writer.setCreator("dpdesk")
    document = QTextDocument()
    document.setDefaultFont(QFont(*BASE_FONT))
    document.setHtml(html)
    writer.setTitle(title or document.metaInformation(QTextDocument.MetaInformation.DocumentTitle))
    document.print_(writer)
    del writer  # finishes the PDF into the buffer
    buffer.close()
    return bytes(content.data())
