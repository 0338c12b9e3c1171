"""Reports as PDF, in pure Python with fpdf2: no Qt, no display, no system fonts.

:func:`html_to_pdf` turns a report page made by :mod:`dpdesk.report.public` or
:mod:`dpdesk.report.internal` into an A4 PDF. It reads the small, known subset of HTML
those modules write — headings, paragraphs (with ``<b>``, ``<sup>`` and the ``hash`` and
``big`` spans), tables with header rows and right-aligned number columns, charts as
inline SVG, the internal report's ``print-label`` — and lays it out itself, so the HTML
stays the one source of a report's content. ``<details>`` blocks (a chart's numbers for
screen readers) are left out of the PDF, where every chart carries its title as
alternative text instead.

Why fpdf2 (2.8) and not reportlab:

* ``FPDF.image`` draws SVG as vector paths, so the matplotlib SVG of the HTML report goes
  into the PDF unchanged and stays sharp (reportlab needs svglib for that, or a PNG);
* it adds almost nothing to what dpdesk installs: its dependencies (Pillow, fontTools,
  defusedxml) are matplotlib's, bar defusedxml;
* what the report needs next is built in: ``FPDF.table`` with heading rows repeated on
  every page, ``will_page_break``/``unbreakable`` to keep a heading with what follows it,
  the document outline (bookmarks), the document language and title, and alternative text
  on images (tagged ``/Figure`` in the structure tree) for accessible output;
* it is pure Python, small, documented and actively maintained (py-pdf organisation,
  LGPL-3.0).

The fonts are DejaVu Sans (regular and bold) and DejaVu Sans Mono, shipped in
``resources/fonts/`` and embedded as subsets, so a PDF made on a machine without any
installed font still has its text (``pdftotext`` reads it back).

Layout rules: a heading is never the last thing on a page (it moves to the next page
together with the start of its content); a lead-in paragraph ending in ":" stays on the page
of the table or chart it introduces (with a heading above it, all three move together); a
table of at most ``SMALL_TABLE_ROWS`` rows is never split, a longer one's header row repeats
on every page it spans; a chart is never split; every page carries its page number, and every page of the
internal report carries the NOT FOR PUBLICATION label at its top and bottom.
"""

from __future__ import annotations

import html as html_module
import io
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

SANS, MONO = "DejaVuSans", "DejaVuSansMono"
FONT_FILES = {(SANS, ""): "DejaVuSans.ttf", (SANS, "B"): "DejaVuSans-Bold.ttf", (MONO, ""): "DejaVuSansMono.ttf"}
MARGIN_MM = 18.0
PT = 25.4 / 72  # millimetres per point
BASE_PT = 10.0
LINE_FACTOR = 1.35
TEXT = (29, 35, 41)
MUTED = (74, 88, 102)
HEADING = (18, 58, 90)
RULE = (185, 199, 211)
TABLE_BORDER = (199, 210, 220)
TABLE_HEADER_FILL = (232, 238, 243)
LABEL_RED = (179, 38, 30)
# paragraph classes of report.css: size (pt), colour, bold, fill, border colour, alignment
PARAGRAPH_STYLES = {
    "": (BASE_PT, TEXT, False, None, None, "L"),
    "subtitle": (BASE_PT, MUTED, False, None, None, "L"),
    "note": (9.0, MUTED, False, None, None, "L"),
    "caption": (9.0, MUTED, False, None, None, "L"),
    "footer": (8.5, MUTED, False, None, None, "L"),
    "box": (BASE_PT, TEXT, False, (241, 246, 249), TABLE_BORDER, "L"),
    "warning": (BASE_PT, TEXT, False, (255, 244, 224), (224, 176, 96), "L"),
    "internal-banner": (BASE_PT, (255, 255, 255), True, LABEL_RED, LABEL_RED, "C"),
    "internal-section-label": (8.0, LABEL_RED, True, None, None, "L"),
}
HEADING_STYLES = {1: (18.0, 0.0, 1.0), 2: (12.5, 5.0, 1.5), 3: (10.5, 3.0, 0.8)}  # size (pt), space above, below (mm)
SMALL_TABLE_ROWS = 6  # a table with at most this many rows (besides its header) is never split across pages
TABLE_START_ROWS = 2  # of a longer table, the rows (besides the header) that stay with what introduces it
SVG_NS = "http://www.w3.org/2000/svg"
_VOID = {"br", "meta", "img", "hr", "link", "input", "svgref"}


# -- the HTML subset, parsed into blocks -------------------------------------------------------------
@dataclass
class Node:
    tag: str
    attrs: dict
    children: list = field(default_factory=list)

    @property
    def classes(self) -> set[str]:
        return set((self.attrs.get("class") or "").split())


@dataclass(frozen=True)
class Run:
    text: str
    bold: bool = False
    mono: bool = False
    sup: bool = False
    big: bool = False


@dataclass
class Heading:
    level: int
    runs: list


@dataclass
class Paragraph:
    style: str
    runs: list


@dataclass
class Cell:
    runs: list
    header: bool
    numeric: bool


@dataclass
class Table:
    rows: list
    borderless: bool


@dataclass
class Chart:
    svg: str
    title: str


@dataclass
class Document:
    title: str = ""
    lang: str = "en"
    label: str = ""  # repeated at the top and bottom of every page (the internal report's)
    blocks: list = field(default_factory=list)


class _TreeBuilder(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {})
        self.stack = [self.root]

    def handle_starttag(self, tag, attrs):
        node = Node(tag, dict(attrs))
        self.stack[-1].children.append(node)
        if tag not in _VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag, attrs):
        self.stack[-1].children.append(Node(tag, dict(attrs)))

    def handle_endtag(self, tag):
        for depth in range(len(self.stack) - 1, 0, -1):
            if self.stack[depth].tag == tag:
                del self.stack[depth:]
                return

    def handle_data(self, data):
        self.stack[-1].children.append(data)


def parse_report(html: str) -> Document:
    """The blocks of a report page, in reading order."""
    svgs: list[str] = []

    def stash(match):
        svgs.append(match.group(0))
        return f'<svgref index="{len(svgs) - 1}">'

    builder = _TreeBuilder()
    builder.feed(re.sub(r"<svg\b.*?</svg>", stash, html, flags=re.S))
    builder.close()
    document = Document()
    for node in _walk(builder.root):
        if node.tag == "html":
            document.lang = node.attrs.get("lang") or document.lang
        elif node.tag == "title" and not document.title:
            document.title = _plain(node)
    body = next((n for n in _walk(builder.root) if n.tag == "body"), builder.root)
    _collect(body, document, svgs)
    return document


def _walk(node: Node):
    yield node
    for child in node.children:
        if isinstance(child, Node):
            yield from _walk(child)


def _collect(node: Node, document: Document, svgs: list[str]) -> None:
    for child in node.children:
        if not isinstance(child, Node):
            continue
        tag, classes = child.tag, child.classes
        if tag in ("h1", "h2", "h3", "h4"):
            document.blocks.append(Heading(min(int(tag[1]), 3), _runs(child)))
        elif tag == "p":
            style = next((c for c in PARAGRAPH_STYLES if c and c in classes), "")
            runs = _runs(child)
            if any(r.text.strip() for r in runs):
                document.blocks.append(Paragraph(style, runs))
        elif tag == "table":
            document.blocks.append(_table(child))
        elif tag == "div" and "print-label" in classes:
            document.label = document.label or _plain(child)
        elif tag == "svgref":
            svg = svgs[int(child.attrs["index"])]
            title = re.search(r"<title>(.*?)</title>", svg, re.S)
            document.blocks.append(Chart(svg, html_module.unescape(title.group(1)) if title else "chart"))
        elif tag in ("details", "style", "script", "head", "title"):
            continue  # a chart's numbers for screen readers; the PDF's charts carry alternative text
        else:
            _collect(child, document, svgs)


def _table(node: Node) -> Table:
    rows = []
    for row in (n for n in _walk(node) if n.tag == "tr"):
        cells = [Cell(_runs(c), c.tag == "th", "num" in c.classes) for c in row.children
                 if isinstance(c, Node) and c.tag in ("td", "th")]
        if cells:
            rows.append(cells)
    return Table(rows, borderless="keyfacts" in node.classes)


def _runs(node: Node, bold=False, mono=False, sup=False, big=False) -> list[Run]:
    """The text of ``node`` as runs of one style each, white space collapsed as a browser does."""
    runs: list[Run] = []
    for child in node.children:
        if isinstance(child, str):
            runs.append(Run(child, bold, mono, sup, big))
            continue
        if child.tag == "br":
            runs.append(Run("\n", bold, mono, sup, big))
            continue
        classes = child.classes
        header = child.tag == "th" and "key" not in classes  # a key-value table's row labels stay regular
        runs.extend(_runs(child, bold or child.tag in ("b", "strong") or header, mono or "hash" in classes,
                          sup or child.tag == "sup", big or "big" in classes))
    if node.tag in ("p", "td", "th", "h1", "h2", "h3", "h4", "div"):
        runs = _collapse(runs)
    return runs


def _collapse(runs: list[Run]) -> list[Run]:
    collapsed, previous_space = [], True
    for run in runs:
        if run.text == "\n":
            collapsed.append(run)
            previous_space = True
            continue
        text = re.sub(r"\s+", " ", run.text)
        if previous_space:
            text = text.lstrip(" ")
        if text:
            collapsed.append(Run(text, run.bold, run.mono, run.sup, run.big))
            previous_space = text.endswith(" ")
    if collapsed and collapsed[-1].text != "\n":
        last = collapsed[-1]
        collapsed[-1] = Run(last.text.rstrip(" "), last.bold, last.mono, last.sup, last.big)
    return [r for r in collapsed if r.text]


def _plain(node_or_runs) -> str:
    runs = _runs(node_or_runs) if isinstance(node_or_runs, Node) else node_or_runs
    return "".join(r.text for r in runs).strip()


# -- layout ------------------------------------------------------------------------------------------
def _fonts_dir() -> Path:
    from ..paths import resources_dir

    return resources_dir() / "fonts"


def _make_pdf(document: Document):
    from fpdf import FPDF

    class ReportPDF(FPDF):
        def header(self):
            if document.label:
                _label_bar(self, document.label, MARGIN_MM - 11)
            self.set_xy(self.l_margin, self.t_margin)
            self.set_fill_color(255, 255, 255)
            self.set_text_color(*TEXT)

        def footer(self):
            self.set_font(SANS, "", 8)
            self.set_text_color(*MUTED)
            if document.label:
                _label_bar(self, document.label, self.h - MARGIN_MM + 4)
            self.set_xy(MARGIN_MM, self.h - MARGIN_MM + (10 if document.label else 6))
            self.set_font(SANS, "", 8)
            self.set_text_color(*MUTED)
            self.cell(self.epw, 4, f"{document.title} · page {self.page_no()} of {{nb}}", align="C")

    pdf = ReportPDF(orientation="portrait", unit="mm", format="A4")
    fonts = _fonts_dir()
    for (family, style), name in FONT_FILES.items():
        pdf.add_font(family, style, str(fonts / name))
    pdf.set_margins(MARGIN_MM, MARGIN_MM, MARGIN_MM)
    pdf.set_auto_page_break(True, margin=MARGIN_MM)
    pdf.set_title(document.title)
    pdf.set_lang(document.lang)
    pdf.set_creator("dpdesk")
    pdf.set_subject("Differential privacy report")
    pdf.set_display_mode("fullwidth")
    return pdf


def _label_bar(pdf, text: str, y: float) -> None:
    pdf.set_xy(MARGIN_MM, y)
    pdf.set_font(SANS, "B", 8)
    pdf.set_fill_color(*LABEL_RED)
    pdf.set_text_color(255, 255, 255)
    pdf.cell(pdf.epw, 5, text, align="C", fill=True)


def html_to_pdf(html: str, *, title: str = "") -> bytes:
    """The PDF (bytes) of a dpdesk report page, laid out on A4 pages."""
    document = parse_report(html)
    if title:
        document.title = title
    pdf = _make_pdf(document)
    pdf.add_page()
    blocks = document.blocks
    for index, block in enumerate(blocks):
        if isinstance(block, Heading):
            _keep_with_next(pdf, blocks, index)
            _heading(pdf, block)
        elif isinstance(block, Paragraph):
            if _lead_in(blocks, index) and not (index and _heading_like(blocks[index - 1])):
                _keep_with_next(pdf, blocks, index)  # (after a heading, the heading already kept them together)
            _paragraph(pdf, block)
        elif isinstance(block, Table):
            if _body_rows(block) <= SMALL_TABLE_ROWS:
                _keep_with_next(pdf, blocks, index)  # a small table moves to the next page whole
            _table_block(pdf, block)
        elif isinstance(block, Chart):
            _chart(pdf, block)
    return bytes(pdf.output())


def _line_mm(size_pt: float) -> float:
    return size_pt * LINE_FACTOR * PT


def _heading_like(block) -> bool:
    return isinstance(block, Heading) or (isinstance(block, Paragraph) and block.style == "internal-section-label")


def _lead_in(blocks: list, index: int) -> bool:
    """Whether ``blocks[index]`` is a paragraph ending in ":" that introduces the table or chart after it."""
    block = blocks[index]
    return (isinstance(block, Paragraph) and _plain(block.runs).endswith(":") and index + 1 < len(blocks)
            and isinstance(blocks[index + 1], (Table, Chart)))


def _keep_with_next(pdf, blocks: list, index: int) -> None:
    """Start a new page when a group that must share a page would not fit on this one.

    The group starting at ``blocks[index]``: headings (and the internal report's section
    labels) with the start of their content; a lead-in paragraph ending in ":" with the table
    or chart it introduces; a small table whole (:func:`_start_height`). A group taller than a
    page is not moved (it could not fit on the next one either).
    """
    needed = 0.0
    for position in range(index, len(blocks)):
        block = blocks[position]
        if _lead_in(blocks, position):
            needed += _paragraph_height(pdf, block)
            continue  # … and the table or chart it introduces
        needed += _start_height(pdf, block)
        if not _heading_like(block):
            break
    if pdf.will_page_break(needed) and pdf.y > pdf.t_margin + 1 and needed <= pdf.eph:
        pdf.add_page()


def _paragraph_height(pdf, block: Paragraph, most_lines: int | None = None) -> float:
    """A paragraph's height (its first ``most_lines`` lines), as :func:`_paragraph` lays it out."""
    size = PARAGRAPH_STYLES[block.style][0]
    pdf.set_font(SANS, "B" if PARAGRAPH_STYLES[block.style][2] else "", size)
    lines = len(pdf.multi_cell(pdf.epw - 4, _line_mm(size), _plain(block.runs), dry_run=True, output="LINES"))
    if most_lines is not None:
        lines = min(lines, most_lines)
    if PARAGRAPH_STYLES[block.style][3] is not None:  # a filled box: 1 mm above, 2 mm padding each side, 2 below
        return lines * _line_mm(size) + 7
    return lines * _line_mm(size) + 3


def _start_height(pdf, block) -> float:
    """The height of a block's first part: what must share a page with the heading above it."""
    if isinstance(block, Heading):
        size, above, below = HEADING_STYLES[block.level]
        return above + _line_mm(size) + below
    if isinstance(block, Paragraph):
        return _paragraph_height(pdf, block, most_lines=3)
    if isinstance(block, Table):
        rows = None if _body_rows(block) <= SMALL_TABLE_ROWS else TABLE_START_ROWS
        return _table_height(pdf, block, rows)
    if isinstance(block, Chart):
        return _chart_size(pdf, block)[1] + 3
    return 0.0


def _body_rows(block: Table) -> int:
    """The rows of a table besides its header row."""
    header = bool(block.rows) and all(c.header for c in block.rows[0])
    return len(block.rows) - (1 if header else 0)


def _table_padding(block: Table) -> tuple[float, float, float, float]:
    # top, right, bottom, left (mm): borderless key-value tables keep a gap between their columns
    return (0.36, 3.0, 0.36, 0.0) if block.borderless else (0.96, 1.6, 0.96, 1.6)


def _table_height(pdf, block: Table, body_rows: int | None = None) -> float:
    """The height :func:`_table_block` gives the table (its header and first ``body_rows`` rows; all
    rows when ``None``): each row as tall as its cell with the most lines in its column's width."""
    if not block.rows:
        return 0.0
    padding = _table_padding(block)
    widths = _column_widths(pdf, block, padding[1] + padding[3])
    header = all(c.header for c in block.rows[0])
    rows = block.rows if body_rows is None else block.rows[:body_rows + (1 if header else 0)]
    line = _line_mm(9.0)
    height = 0.5 + 2.5  # the space _table_block leaves above and below
    for row in rows:
        most = 1
        for width, cell in zip(widths, row):
            shown = [r for r in cell.runs if r.text.strip()]
            mono = bool(shown) and all(r.mono for r in shown)
            bold = cell.header or any(_bold(r) for r in cell.runs)
            pdf.set_font(MONO if mono else SANS, "B" if bold and not mono else "", 7.5 if mono else 9.0)
            room = max(width - padding[1] - padding[3], 2 * pdf.c_margin + 3.0)  # multi_cell keeps c_margin
            most = max(most, len(pdf.multi_cell(room, line, _plain(cell.runs) or " ", dry_run=True,
                                                output="LINES")))
        height += most * line + padding[0] + padding[2]
    return height


def _heading(pdf, block: Heading) -> None:
    size, above, below = HEADING_STYLES[block.level]
    text = _plain(block.runs)
    if pdf.y > pdf.t_margin + 1:
        pdf.ln(above)
    pdf.start_section(text, level=block.level - 1, strict=False)
    pdf.set_font(SANS, "B", size)
    pdf.set_text_color(*(HEADING if block.level <= 2 else TEXT))
    pdf.multi_cell(pdf.epw, _line_mm(size), text, new_x="LMARGIN", new_y="NEXT")
    if block.level == 2:
        pdf.set_draw_color(*RULE)
        pdf.set_line_width(0.3)
        pdf.line(pdf.l_margin, pdf.y + 0.4, pdf.l_margin + pdf.epw, pdf.y + 0.4)
    pdf.ln(below)


def _paragraph(pdf, block: Paragraph) -> None:
    size, colour, bold, fill, border, align = PARAGRAPH_STYLES[block.style]
    line = _line_mm(size)
    if block.style == "footer":
        pdf.ln(4)
        pdf.set_draw_color(*RULE)
        pdf.set_line_width(0.3)
        pdf.line(pdf.l_margin, pdf.y, pdf.l_margin + pdf.epw, pdf.y)
        pdf.ln(1.5)
    pdf.set_text_color(*colour)
    if fill is not None:
        pdf.set_font(SANS, "B" if bold else "", size)
        pdf.set_fill_color(*fill)
        pdf.set_draw_color(*border)
        pdf.set_line_width(0.3)
        pdf.ln(1)
        pdf.multi_cell(pdf.epw, line, _plain(block.runs), border=1, fill=True, align=align, padding=2,
                       new_x="LMARGIN", new_y="NEXT")
        pdf.ln(2)
        return
    if max((r.big for r in block.runs), default=False):
        line = _line_mm(size * 1.3)
    for run in block.runs:
        if run.text == "\n":
            pdf.ln(line)
            continue
        run_size = size * (1.3 if run.big else 0.85 if run.mono else 1.0)
        pdf.set_font(MONO if run.mono else SANS, "B" if (bold or run.bold or run.big) and not run.mono else "",
                     run_size)
        pdf.char_vpos = "SUP" if run.sup else "LINE"
        pdf.write(line, run.text)
    pdf.char_vpos = "LINE"
    pdf.ln(line)
    pdf.ln(1.6)


def _bold(run: Run) -> bool:
    return run.bold or run.big


def _cell_markdown(runs: list[Run]) -> str:
    """A cell's runs as fpdf2 markdown: bold (and big) runs in ``**``; marker characters escaped."""
    parts = []
    for run in runs:
        text = run.text.replace("\\", "\\\\")
        for marker in ("**", "__", "~~", "--"):
            text = text.replace(marker, "\\" + marker)
        bold = _bold(run) and text.strip()
        parts.append(f"**{text}**" if bold else text)
    return "".join(parts).replace("****", "")


def _column_widths(pdf, table: Table, padding: float) -> list[float]:
    """``padding``: a cell's left plus right padding (mm)."""
    """Column widths from the content: natural widths when they fit, else shrink the wide columns."""
    columns = max(len(r) for r in table.rows)
    natural, least = [0.0] * columns, [0.0] * columns
    for row in table.rows:
        for j, cell in enumerate(row):
            mono = bool(cell.runs) and all(r.mono for r in cell.runs if r.text.strip())
            bold = cell.header or any(_bold(r) for r in cell.runs)  # measured bold: never too narrow
            pdf.set_font(MONO if mono else SANS, "B" if bold and not mono else "", 7.5 if mono else 9.0)
            text = _plain(cell.runs)
            room = padding + 2 * pdf.c_margin + 0.5  # fpdf2 keeps its cell margin inside the padding
            natural[j] = max(natural[j], pdf.get_string_width(text) + room)
            longest_word = max((pdf.get_string_width(w) for w in text.split()), default=0.0)
            least[j] = max(least[j], min(longest_word + room, pdf.epw / columns))
    if sum(natural) <= pdf.epw:
        return natural
    # columns narrower than a fair share keep their natural width; the others share the rest
    fixed: dict[int, float] = {}
    while len(fixed) < columns:
        free = [j for j in range(columns) if j not in fixed]
        share = (pdf.epw - sum(fixed.values())) / len(free)
        narrow = [j for j in free if natural[j] <= share]
        if not narrow:
            break
        fixed.update((j, natural[j]) for j in narrow)
    free = [j for j in range(columns) if j not in fixed]
    room = pdf.epw - sum(fixed.values())
    total = sum(natural[j] for j in free)
    for j in free:
        fixed[j] = max(least[j], room * natural[j] / total)
    return [fixed[j] for j in range(columns)]


def _table_block(pdf, block: Table) -> None:
    from fpdf.fonts import FontFace

    if not block.rows:
        return
    padding = _table_padding(block)
    widths = _column_widths(pdf, block, padding[1] + padding[3])
    header = all(c.header for c in block.rows[0])
    pdf.set_draw_color(*TABLE_BORDER)
    pdf.set_fill_color(255, 255, 255)
    pdf.set_line_width(0.2)
    pdf.set_text_color(*TEXT)
    pdf.set_font(SANS, "", 9.0)
    cells = [cell for row in block.rows for cell in row]
    # fpdf2's markdown gives partly bold cells, but it would also turn "[text](target)" into a link:
    # used only when a cell needs it and no cell could be read as a link
    markdown = any(len({_bold(r) for r in c.runs if r.text.strip()}) > 1 for c in cells) and not any(
        "](" in _plain(c.runs) for c in cells)
    # the widths' sum can exceed the page by a rounding error, which fpdf2 refuses
    options = dict(width=min(sum(widths), pdf.epw), col_widths=widths, align="LEFT", text_align="LEFT", markdown=markdown,
                   first_row_as_headings=header, line_height=_line_mm(9.0), v_align="TOP",
                   padding=padding,
                   borders_layout="NONE" if block.borderless else "ALL",
                   headings_style=FontFace(emphasis="BOLD", fill_color=TABLE_HEADER_FILL, color=TEXT))
    pdf.ln(0.5)
    with pdf.table(**options) as table:
        for row in block.rows:
            table_row = table.row()
            for cell in row:
                shown = [r for r in cell.runs if r.text.strip()]
                style = None
                if shown and all(r.mono for r in shown):
                    style = FontFace(family=MONO, size_pt=7.5)
                elif block.borderless and not cell.numeric and cell is row[0] and len(row) > 1:
                    style = FontFace(color=MUTED)
                elif not markdown and not cell.header and shown and all(_bold(r) for r in shown):
                    style = FontFace(emphasis="BOLD")
                text = _cell_markdown(cell.runs) if markdown else _plain(cell.runs)
                table_row.cell(text, align="RIGHT" if cell.numeric else "LEFT", style=style)
    pdf.ln(2.5)


def _chart_size(pdf, chart: Chart) -> tuple[float, float]:
    """Width and height (mm) of a chart: its own size, narrowed to the page when wider."""
    box = re.search(r'viewBox="([-\d.]+) ([-\d.]+) ([\d.]+) ([\d.]+)"', chart.svg)
    width_pt, height_pt = (float(box.group(3)), float(box.group(4))) if box else (460.8, 216.0)
    width = min(width_pt * PT, pdf.epw)
    return width, width * height_pt / width_pt


def _chart(pdf, chart: Chart) -> None:
    width, height = _chart_size(pdf, chart)
    if pdf.will_page_break(height + 2):
        pdf.add_page()
    pdf.set_fill_color(*TEXT)  # what fpdf2 falls back to for an SVG shape without a fill of its own
    pdf.image(io.BytesIO(_svg_for_fpdf(chart.svg)), x=pdf.l_margin, w=width, h=height, alt_text=chart.title,
              title=chart.title)
    pdf.ln(1.5)


def _svg_for_fpdf(svg: str) -> bytes:
    """The chart's SVG as fpdf2 draws it right.

    fpdf2 does not pass a group's ``fill`` on to the ``<use>`` elements inside it, which is
    how matplotlib draws text (glyph outlines in a group coloured by its style): each such
    ``<use>`` gets the inherited fill written on it. The ``<title>`` (the alternative text,
    given to fpdf2 separately) is dropped, as fpdf2 ignores it with a warning.
    """
    import xml.etree.ElementTree as ElementTree

    ElementTree.register_namespace("", SVG_NS)
    ElementTree.register_namespace("xlink", "http://www.w3.org/1999/xlink")
    root = ElementTree.fromstring(svg)

    def visit(node, inherited):
        style = node.get("style", "")
        found = re.search(r"(?:^|;)\s*fill:\s*([^;]+)", style)
        own = found.group(1).strip() if found else node.get("fill")
        if node.tag == f"{{{SVG_NS}}}use" and own is None and inherited is not None:
            node.set("style", f"{style}; fill: {inherited}" if style else f"fill: {inherited}")
        for child in list(node):
            if child.tag == f"{{{SVG_NS}}}title":
                node.remove(child)
            else:
                visit(child, own or inherited)

    visit(root, None)
    return ElementTree.tostring(root, encoding="utf-8")
