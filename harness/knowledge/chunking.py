"""Cutting a converted document (Markdown) into passages that keep where they came from.

- Headings (``#``…``######``, and Setext underlines) are tracked as a path; a passage never
  spans two sections, so its ``section`` is exact and a search hit can say where it is.
- Form feeds (``\\f``) are page breaks, as pdfminer writes them: a passage never spans two
  pages, and carries its 1-based page when the document is paged.
- Paragraphs are packed up to ``size`` characters; a paragraph longer than that is cut at
  sentence or word boundaries with ``overlap`` characters repeated, so a sentence cut in two
  is still found whole in one of the pieces.
"""

from __future__ import annotations

import re
import unicodedata

from harness.knowledge.types import Chunk
from harness.memory.retrieval import index_text

_ATX = re.compile(r"^\s{0,3}(#{1,6})\s+(.+?)\s*#*\s*$")
_SETEXT = re.compile(r"^\s{0,3}(=+|-+)\s*$")
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+")


def _split_long(text: str, size: int, overlap: int) -> list[str]:
    pieces: list[str] = []
    start = 0
    while start < len(text):
        end = min(len(text), start + size)
        if end < len(text):
            window = text[start:end]
            cut = max((m.end() for m in _SENTENCE_END.finditer(window) if m.end() > size // 2), default=0)
            if not cut:
                cut = window.rfind(" ", size // 2) + 1
            if cut > 0:
                end = start + cut
        piece = text[start:end].strip()
        if piece:
            pieces.append(piece)
        if end >= len(text):
            break
        start = max(start + 1, end - overlap)
        # start the repeated part at a word, not inside one
        space = text.find(" ", start, end)
        if 0 <= space < end - 1 and overlap:
            start = space + 1
    return pieces


def _blocks(page_text: str):
    """(kind, level, text) per heading or paragraph of one page."""
    lines = page_text.split("\n")
    paragraph: list[str] = []

    def flush():
        text = "\n".join(paragraph).strip()
        paragraph.clear()
        return text

    i = 0
    while i < len(lines):
        line = lines[i]
        heading = _ATX.match(line)
        if heading:
            if paragraph:
                yield ("p", 0, flush())
            yield ("h", len(heading.group(1)), heading.group(2).strip())
        elif _SETEXT.match(line) and len(paragraph) == 1 and paragraph[0].strip():
            title = flush()
            yield ("h", 1 if line.strip().startswith("=") else 2, title)
        elif not line.strip():
            if paragraph:
                yield ("p", 0, flush())
        else:
            paragraph.append(line.rstrip())
        i += 1
    if paragraph:
        yield ("p", 0, flush())


def chunk_markdown(text: str, *, size: int = 1200, overlap: int = 150, paged: bool | None = None) -> list[Chunk]:
    """The passages of *text*, in order. ``paged``: whether form feeds number pages (None:
    when the text has any)."""
    pages = text.split("\f")
    if paged is None:
        paged = len(pages) > 1
    chunks: list[Chunk] = []
    headings: list[tuple[int, str]] = []
    buffer: list[str] = []
    state = {"page": None}

    def section() -> str:
        return " > ".join(t for _, t in headings)

    def emit(body: str, page: int | None) -> None:
        if body.strip():
            chunks.append(Chunk(ordinal=len(chunks), text=body.strip(), section=section(), page=page))

    def flush() -> None:
        if buffer:
            emit("\n\n".join(buffer), state["page"])
            buffer.clear()

    for number, page_text in enumerate(pages, 1):
        flush()
        state["page"] = number if paged else None
        for kind, level, body in _blocks(page_text):
            if kind == "h":
                flush()
                while headings and headings[-1][0] >= level:
                    headings.pop()
                headings.append((level, body[:200]))
                continue
            if len(body) > size:
                flush()
                for piece in _split_long(body, size, overlap):
                    emit(piece, state["page"])
                continue
            if buffer and sum(len(b) + 2 for b in buffer) + len(body) > size:
                flush()
            buffer.append(body)
    flush()
    return chunks


def fold(text: str) -> str:
    """*text* without diacritics ("café" → "cafe"), as SQLite FTS5's unicode61 tokenizer folds."""
    return "".join(ch for ch in unicodedata.normalize("NFKD", text) if not unicodedata.combining(ch))


def search_text(chunk: Chunk) -> str:
    """What the full-text index reads for a passage: its section path and text, their CJK
    bigrams, and the text without accents when it has any (PostgreSQL's ``simple`` parser keeps
    accents, so "cafe" finds "café" there through this copy)."""
    body = f"{chunk.section}\n{chunk.text}" if chunk.section else chunk.text
    folded = fold(body)
    return index_text(body) + (f"\n{folded}" if folded != body else "")
