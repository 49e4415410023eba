"""Turning a fetched response into bounded Markdown for the model.

HTML goes through trafilatura's readability extraction (navigation, footers and ads
dropped), with a plain HTML-to-text pass when it finds no main content; PDF goes through
markitdown; text and JSON are decoded as they are. Parsing is CPU work on untrusted
input, so it runs in a worker thread, never on the event loop.
"""

from __future__ import annotations

import asyncio
import io
import json
import re

from harness.net import FetchedResponse

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
TEXT_TYPES = frozenset({"text/plain", "text/markdown", "text/csv", "text/x-markdown", "application/xml", "text/xml"})
PDF_TYPES = frozenset({"application/pdf", "application/x-pdf"})


class ExtractError(Exception):
    pass


def _kind(response: FetchedResponse) -> str:
    ctype = response.content_type
    if ctype in HTML_TYPES:
        return "html"
    if ctype in PDF_TYPES:
        return "pdf"
    if ctype == "application/json" or ctype.endswith("+json"):
        return "json"
    if ctype in TEXT_TYPES or (ctype.startswith("text/") and ctype not in {"text/javascript", "text/css"}):
        return "text"
    if ctype in {"", "application/octet-stream", "binary/octet-stream"}:
        head = response.content[:512].lstrip()
        if head.startswith(b"%PDF"):
            return "pdf"
        if head[:1] == b"<" and b"<html" in head.lower() or head.lower().startswith(b"<!doctype html"):
            return "html"
        if head[:1] in (b"{", b"["):
            return "json"
        if not ctype:
            return "text"
    raise ExtractError(f"unsupported content type {ctype or 'unknown'}; web_fetch reads HTML, plain text, JSON and PDF")


def decode(content: bytes, charset: str | None) -> str:
    """Text with undecodable bytes replaced; mostly undecodable means it is not text."""
    try:
        text = content.decode(charset or "utf-8", errors="replace")
    except LookupError:
        text = content.decode("utf-8", errors="replace")
    bad = text.count("\ufffd")
    if text and bad > max(16, len(text) // 10):
        raise ExtractError(f"the body is not valid {charset or 'UTF-8'} text ({bad} undecodable characters)")
    return text


_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)


def _plain_html(html: str) -> str:
    import lxml.html

    try:
        tree = lxml.html.fromstring(html)
    except (ValueError, lxml.etree.ParserError):
        return re.sub(r"<[^>]+>", " ", html)
    for node in tree.xpath("//script|//style|//noscript|//template"):
        node.drop_tree()
    text = tree.text_content()
    lines = [" ".join(line.split()) for line in text.splitlines()]
    return "\n".join(line for line in lines if line)


def html_to_markdown(html: str, url: str) -> tuple[str, str]:
    import html as html_lib

    import trafilatura

    title = ""
    meta = trafilatura.extract_metadata(html, default_url=url)
    if meta is not None and meta.title:
        title = meta.title
    if not title:
        found = _TITLE.search(html)
        title = html_lib.unescape(" ".join(found.group(1).split())) if found else ""
    body = trafilatura.extract(html, url=url, output_format="markdown", include_links=True, include_tables=True,
                               include_comments=False, favor_precision=True)
    if not body or not body.strip():
        body = _plain_html(html)
    return title, body.strip()


def pdf_to_markdown(data: bytes) -> tuple[str, str]:
    from markitdown import MarkItDown, StreamInfo

    try:
        result = MarkItDown(enable_plugins=False).convert_stream(io.BytesIO(data), stream_info=StreamInfo(extension=".pdf", mimetype="application/pdf"))
    except Exception as exc:  # markitdown wraps parser errors in its own types
        raise ExtractError(f"the PDF could not be read: {type(exc).__name__}") from None
    return (result.title or ""), (result.text_content or "").strip()


def _convert(response: FetchedResponse) -> tuple[str, str, str]:
    kind = _kind(response)
    if kind == "pdf":
        title, text = pdf_to_markdown(response.content)
    elif kind == "html":
        title, text = html_to_markdown(decode(response.content, response.charset), response.final_url)
    elif kind == "json":
        raw = decode(response.content, response.charset)
        try:
            text = json.dumps(json.loads(raw), indent=2, ensure_ascii=False)
        except ValueError:
            text = raw
        title = ""
    else:
        title, text = "", decode(response.content, response.charset)
    return kind, title, text


async def convert(response: FetchedResponse) -> tuple[str, str, str]:
    """(kind, title, markdown) for a successful response; raises :class:`ExtractError`."""
    return await asyncio.to_thread(_convert, response)


def bound(text: str, max_chars: int) -> tuple[str, bool]:
    """The head of *text* up to *max_chars*, with the cut marked so the model knows."""
    if len(text) <= max_chars:
        return text, False
    cut = text.rfind("\n", max(0, max_chars - 400), max_chars)
    head = text[: cut if cut > 0 else max_chars].rstrip()
    return f"{head}\n\n[... truncated: showing {len(head):,} of {len(text):,} characters ...]", True
