"""Internal. Reading source files into chunks that follow the document's own structure.

    Markdown   sections at headings (ATX `#` and setext underlines; not inside code fences)
    HTML       made into the same Markdown outline (h1–h6, paragraphs, lists, pre), then as above
    PDF        pages (pypdf, the `knowledge` extra)
    text       pages at form feeds, else paragraphs

A section longer than the chunk size is split at paragraph breaks (a paragraph longer still,
at line or sentence ends). Every chunk keeps its heading path ("Install › Windows") and its
page: the PDF page, or for the other formats the section's ordinal, so that "page 3" is
something a reader can ask for next.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

from agentrt.exceptions import UserError

__all__ = ["SUFFIXES", "Chunk", "Document", "file_hash", "read_document"]

# Raise when chunking changes, so that the next ingest redoes every item.
CHUNKER_VERSION = "2"

SUFFIXES = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".rst": "text",
    ".txt": "text",
    ".html": "html",
    ".htm": "html",
    ".pdf": "pdf",
}


@dataclass(frozen=True, slots=True)
class Chunk:
    page: int
    """From 1: the PDF page, or the section's ordinal in other formats."""
    heading: str
    """The path of headings above the text, outermost first, joined with ` › `."""
    text: str


@dataclass(slots=True)
class Document:
    name: str
    """Its title (an HTML page's <title>, a PDF's title, the first top-level heading), else the
    file's stem."""
    kind: str
    chunks: list[Chunk] = field(default_factory=list)

    @property
    def pages(self) -> int:
        return max((c.page for c in self.chunks), default=0)


def file_hash(path: Path, chunk_chars: int) -> str:
    """Identifies a file's content as ingested: the same bytes chunked the same way."""
    h = hashlib.sha256(f"{CHUNKER_VERSION}:{chunk_chars}:".encode())
    h.update(path.read_bytes())
    return h.hexdigest()


def read_document(path: Path, chunk_chars: int) -> Document:
    """Read and chunk one file.

    :raises UserError: an unsupported suffix, or a PDF without the `knowledge` extra
    """
    kind = SUFFIXES.get(path.suffix.lower())
    if kind is None:
        msg = f"{path}: unsupported file type (supported: {', '.join(sorted(SUFFIXES))})"
        raise UserError(msg)
    if kind == "pdf":
        return _pdf(path, chunk_chars)
    text = path.read_text(encoding="utf-8", errors="replace")
    if kind == "html":
        title, text = _html_to_markdown(text)
        doc = _markdown(text, chunk_chars, kind="html", title=path.stem)
        # A page's <title> names it; its first <h1> is often a banner or a section.
        doc.name = title or doc.name
        return doc
    if kind == "markdown":
        return _markdown(text, chunk_chars, kind="markdown", title=path.stem)
    return _text(text, chunk_chars, title=path.stem)


_ATX = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)\s*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def _markdown(text: str, chunk_chars: int, *, kind: str, title: str) -> Document:
    sections: list[tuple[list[str], list[str]]] = []
    path: list[tuple[int, str]] = []
    body: list[str] = []
    first_title: str | None = None
    fence: str | None = None

    def close() -> None:
        if "".join(body).strip():
            sections.append(([h for _, h in path], list(body)))
        body.clear()

    def open_heading(level: int, heading: str) -> None:
        nonlocal first_title
        close()
        while path and path[-1][0] >= level:
            path.pop()
        path.append((level, heading))
        if first_title is None and level == 1:
            first_title = heading

    for line in text.splitlines():
        marker = _FENCE.match(line)
        if fence is not None:
            body.append(line)
            if marker and marker.group(1)[0] == fence[0] and len(marker.group(1)) >= len(fence):
                fence = None
            continue
        if marker:
            fence = marker.group(1)
            body.append(line)
            continue
        atx = _ATX.match(line)
        if atx:
            open_heading(len(atx.group(1)), _plain(atx.group(2)))
            continue
        setext = _SETEXT.match(line)
        # A setext underline needs a one-line paragraph right above it: otherwise `---` is a
        # horizontal rule and `===` plain text.
        if setext and body and body[-1].strip() and (len(body) == 1 or not body[-2].strip()):
            heading = body.pop().strip()
            open_heading(1 if setext.group(1)[0] == "=" else 2, _plain(heading))
            continue
        body.append(line)
    close()

    doc = Document(name=first_title or title, kind=kind)
    for page, (headings, lines) in enumerate(sections, start=1):
        heading = " › ".join(headings)
        for piece in _split("\n".join(lines).strip(), chunk_chars):
            doc.chunks.append(Chunk(page=page, heading=heading, text=piece))
    return doc


def _plain(heading: str) -> str:
    """A heading without what decorates it: images (badges) go; links keep their text; code
    marks, emphasis and HTML tags go, but not the underscores of `connect_sse`."""
    heading = re.sub(r"!\[[^\]]*\]\([^)\s]*\)", "", heading)
    heading = re.sub(r"\[([^\]]*)\]\([^)\s]*\)", r"\1", heading)
    heading = re.sub(r"<[^>]+>|`", "", heading)
    heading = re.sub(r"(?<!\w)(\*{1,2}|_{1,2})(\S(?:.*?\S)?)\1(?!\w)", r"\2", heading)
    return " ".join(heading.split())


def _text(text: str, chunk_chars: int, *, title: str) -> Document:
    doc = Document(name=title, kind="text")
    if "\f" in text:
        for page, content in enumerate(text.split("\f"), start=1):
            for piece in _split(content.strip(), chunk_chars):
                doc.chunks.append(Chunk(page=page, heading="", text=piece))
        return doc
    for page, piece in enumerate(_split(text.strip(), chunk_chars), start=1):
        doc.chunks.append(Chunk(page=page, heading="", text=piece))
    return doc


def _pdf(path: Path, chunk_chars: int) -> Document:
    try:
        from pypdf import PdfReader
    except ImportError:
        msg = f"{path}: reading PDF needs pypdf: pip install 'agentrt[knowledge]'"
        raise UserError(msg) from None
    reader = PdfReader(path)
    title = (reader.metadata.title if reader.metadata else None) or path.stem
    doc = Document(name=str(title).strip() or path.stem, kind="pdf")
    for page, pdf_page in enumerate(reader.pages, start=1):
        for piece in _split((pdf_page.extract_text() or "").strip(), chunk_chars):
            doc.chunks.append(Chunk(page=page, heading="", text=piece))
    return doc


def _split(text: str, limit: int) -> list[str]:
    """`text` in pieces of at most `limit` characters, broken at the largest unit that fits:
    paragraphs, then lines, then sentences, then (a last resort) anywhere."""
    if not text:
        return []
    if len(text) <= limit:
        return [text]
    for separator in ("\n\n", "\n", ". "):
        parts = [p for p in text.split(separator) if p.strip()]
        if len(parts) > 1:
            break
    else:
        return [text[i : i + limit].strip() for i in range(0, len(text), limit)]
    pieces: list[str] = []
    current = ""
    for part in parts:
        candidate = f"{current}{separator}{part}" if current else part
        if len(candidate) <= limit:
            current = candidate
            continue
        if current:
            pieces.append(current.strip())
        if len(part) <= limit:
            current = part
        else:
            pieces.extend(_split(part, limit))
            current = ""
    if current.strip():
        pieces.append(current.strip())
    return pieces


class _Outline(HTMLParser):
    """HTML to a Markdown outline: the structure chunking needs, none of the presentation."""

    _SKIP = frozenset({"script", "style", "head", "nav", "footer", "noscript", "template"})
    _BLOCK = frozenset({"p", "div", "section", "article", "li", "tr", "br", "table", "blockquote"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.lines: list[str] = [""]
        self.title = ""
        self._skipping = 0
        self._in_title = False
        self._pre = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._SKIP:
            self._skipping += 1
        if tag == "title":
            self._in_title = True
        elif re.fullmatch(r"h[1-6]", tag):
            self._newline(blank=True)
            self.lines[-1] = "#" * int(tag[1]) + " "
        elif tag == "pre":
            self._newline(blank=True)
            self.lines[-1] = "```"
            self.lines.append("")
            self._pre = True
        elif tag in self._BLOCK:
            self._newline(blank=tag != "br" and tag != "li")
            if tag == "li":
                self.lines[-1] = "- "

    def handle_endtag(self, tag: str) -> None:
        if tag in self._SKIP:
            self._skipping = max(0, self._skipping - 1)
        if tag == "title":
            self._in_title = False
        elif re.fullmatch(r"h[1-6]", tag):
            self._newline(blank=True)
        elif tag == "pre":
            if self.lines[-1]:
                self.lines.append("")
            self.lines[-1] = "```"
            self.lines.append("")
            self._pre = False
        elif tag in self._BLOCK:
            self._newline(blank=tag == "p")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
            return
        if self._skipping:
            return
        if self._pre:
            head, *rest = data.split("\n")
            self.lines[-1] += head
            self.lines.extend(rest)
            return
        # Whitespace counts once, and only where the page has some: `No <b>signal</b>.` is
        # "No signal." — not "No signal ." nor "Nosignal.".
        text = re.sub(r"\s+", " ", data)
        if not self.lines[-1].strip() or self.lines[-1].endswith((" ", "- ", "# ")):
            text = text.lstrip()
        self.lines[-1] += text

    def _newline(self, *, blank: bool) -> None:
        if not self._pre:
            self.lines[-1] = self.lines[-1].rstrip()
        if self.lines[-1].strip():
            self.lines.append("")
        if blank and len(self.lines) > 1 and self.lines[-2].strip():
            self.lines.append("")


def _html_to_markdown(html: str) -> tuple[str, str]:
    """The page's title and its text as a Markdown outline."""
    outline = _Outline()
    outline.feed(html)
    outline.close()
    return " ".join(outline.title.split()), "\n".join(outline.lines)
