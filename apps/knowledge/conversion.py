"""Turning a stored document into Markdown: the uploads' own converters for PDF and office
files (``apps.threads.uploads.convert_to_markdown``), markitdown's HTML converter for web
pages, and plain text as it is.

PDF text keeps pdfminer's form feeds between pages, which the chunker reads as page numbers.
"""

from __future__ import annotations

import io
from pathlib import Path

from apps.threads.uploads import convert_to_markdown

OFFICE = frozenset({".pdf", ".docx", ".xlsx", ".xls", ".pptx"})
HTML = frozenset({".html", ".htm", ".xhtml"})
TEXT = frozenset({".md", ".markdown", ".txt", ".text", ".rst", ".csv", ".tsv", ".json", ".yaml", ".yml", ".xml", ".log",
                  ".py", ".js", ".ts", ".java", ".go", ".rs", ".c", ".h", ".cpp", ".sql", ".sh", ".toml", ".ini", ".tex"})
# What a fetched URL's content type means, for a page whose URL names no file type.
CONTENT_TYPES = {"text/html": ".html", "application/xhtml+xml": ".html", "application/pdf": ".pdf", "text/markdown": ".md",
                 "text/plain": ".txt", "text/csv": ".csv", "application/json": ".json",
                 "application/vnd.openxmlformats-officedocument.wordprocessingml.document": ".docx"}


class ConversionError(ValueError):
    pass


def _html(data: bytes, charset: str | None) -> str:
    from markitdown import StreamInfo
    from markitdown.converters import HtmlConverter

    result = HtmlConverter().convert(io.BytesIO(data), StreamInfo(extension=".html", charset=charset or "utf-8"))
    return result.markdown or ""


def _decoded(data: bytes, charset: str | None = None) -> str:
    if b"\x00" in data[:8192]:
        raise ConversionError("this is a binary file of a type knowledge bases cannot read")
    return data.decode(charset or "utf-8", errors="replace")


def document_markdown(path: Path, *, charset: str | None = None) -> tuple[str, bool]:
    """(Markdown, paged) for the file at *path*, by its extension."""
    extension = path.suffix.lower()
    try:
        if extension in OFFICE:
            text = convert_to_markdown(path)
        elif extension in HTML:
            text = _html(path.read_bytes(), charset)
        else:
            text = _decoded(path.read_bytes(), charset)
    except ConversionError:
        raise
    except Exception as exc:  # a corrupt file: the reason goes on the document
        raise ConversionError(f"could not convert the {extension or 'file'} ({type(exc).__name__}: {exc})".replace(" ()", "")) from None
    if not text.strip():
        raise ConversionError("the document has no extractable text")
    return text, extension == ".pdf"


def title_of(markdown: str, fallback: str) -> str:
    for line in markdown.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            return stripped.lstrip("#").strip()[:300] or fallback
    return fallback
