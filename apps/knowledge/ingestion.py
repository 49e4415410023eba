"""Ingesting one document, in a worker (``queue.py``): fetch (URL documents, through the SSRF
guard), convert to Markdown, cut into passages that keep their headings and pages, index
them, embed them when ``knowledge.embeddings`` names a model, and make the version current.

Progress is written as it goes (the Knowledge page polls it); any failure leaves the document
``failed`` with the reason a person can act on, and none of its passages.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from pathlib import Path

from django.db import transaction
from django.utils import timezone

from apps.knowledge.conversion import (
    CONTENT_TYPES,
    ConversionError,
    document_markdown,
    title_of,
)
from apps.knowledge.files import URL_FILE_STEM, document_dir
from apps.knowledge.models import Document, Passage
from harness.config import get_app_config
from harness.knowledge.chunking import chunk_markdown, search_text
from harness.knowledge.embeddings import (
    EmbeddingError,
    embedder_for,
    embeddings_enabled,
    to_blob,
)
from harness.knowledge.types import citation_id
from harness.net.guard import GuardError, GuardPolicy, guarded_fetch

logger = logging.getLogger(__name__)


class IngestError(Exception):
    pass


def _progress(document: Document, percent: int, **fields) -> None:
    Document.objects.filter(pk=document.pk).update(progress=percent, updated_at=timezone.now(), **fields)


def _fetch(document: Document) -> tuple[Path, str | None]:
    """Download a URL document into its folder; the file's extension follows its content type."""
    app = get_app_config()
    policy = GuardPolicy.from_networks(app.web.allowed_private_networks)
    try:
        answer = asyncio.run(guarded_fetch(document.source, policy=policy, max_bytes=app.knowledge.max_document_size,
                                           timeout=app.web.timeout_seconds, headers={"User-Agent": app.web.user_agent}))
    except GuardError as exc:
        raise IngestError(f"could not fetch {document.source}: {exc}") from None
    if answer.status_code >= 400:
        raise IngestError(f"could not fetch {document.source}: the server answered {answer.status_code}")
    extension = CONTENT_TYPES.get(answer.content_type) or Path(document.name).suffix.lower() or ".html"
    folder = document_dir(document)
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.iterdir():  # a retry replaces what an earlier fetch kept
        old.unlink()
    path = folder / f"{URL_FILE_STEM}{extension}"
    path.write_bytes(answer.content)
    Document.objects.filter(pk=document.pk).update(content_type=answer.content_type, size=len(answer.content),
                                                    sha256=hashlib.sha256(answer.content).hexdigest())
    return path, answer.charset


def _embed(document: Document, passages: list[Passage]) -> bool:
    cfg = get_app_config().knowledge.embeddings
    if not embeddings_enabled(cfg) or not passages:
        return False
    embedder = embedder_for(cfg)
    step = cfg.batch_size
    for start in range(0, len(passages), step):
        batch = passages[start:start + step]
        vectors = embedder.embed([f"{p.section}\n{p.text}" if p.section else p.text for p in batch])
        for passage, vector in zip(batch, vectors, strict=True):
            passage.embedding = to_blob(vector)
        Passage.objects.bulk_update(batch, ["embedding"])
        _progress(document, 60 + int(35 * min(len(passages), start + step) / len(passages)))
    return True


def document_ingest(*, document_id: str) -> None:
    document = Document.objects.filter(pk=document_id).first()
    if document is None:  # deleted before its turn came
        return
    _progress(document, 5, status=Document.Status.PROCESSING, error="")
    try:
        if document.source_kind == Document.Source.URL:
            path, charset = _fetch(document)
        else:
            path, charset = document_dir(document) / document.name, None
            if not path.is_file():
                raise IngestError("the document's file is missing; add it again")
        _progress(document, 20)
        markdown, paged = document_markdown(path, charset=charset)
        _progress(document, 40)
        cfg = get_app_config().knowledge
        chunks = chunk_markdown(markdown, size=cfg.chunk_size, overlap=cfg.chunk_overlap, paged=paged)
        hex_id = document.pk.hex
        passages = [Passage(document=document, collection_id=document.collection_id, ordinal=c.ordinal,
                            citation_id=citation_id(hex_id, c.ordinal), section=c.section[:1000], page=c.page, text=c.text,
                            search_text=search_text(c)) for c in chunks]
        with transaction.atomic():
            Passage.objects.filter(document=document).delete()
            Passage.objects.bulk_create(passages, batch_size=500)
        _progress(document, 60)
        passages = list(Passage.objects.filter(document=document).order_by("ordinal"))
        embedded = _embed(document, passages)
        with transaction.atomic():
            if not Document.objects.filter(pk=document.pk).exists():
                return  # deleted meanwhile: its passages went with it
            Document.objects.filter(collection_id=document.collection_id, name=document.name).update(is_current=False)
            Document.objects.filter(pk=document.pk).update(
                status=Document.Status.READY, progress=100, is_current=True, chunk_count=len(passages), embedded=embedded,
                title=title_of(markdown, document.name), updated_at=timezone.now())
    except (IngestError, ConversionError, EmbeddingError) as exc:
        _fail(document, str(exc))
    except Exception as exc:
        logger.exception("Ingesting document %s failed", document.pk)
        _fail(document, f"ingestion failed ({type(exc).__name__}: {exc})")


def _fail(document: Document, reason: str) -> None:
    with transaction.atomic():
        Passage.objects.filter(document_id=document.pk).delete()
        Document.objects.filter(pk=document.pk).update(status=Document.Status.FAILED, error=reason[:2000], progress=0,
                                                        updated_at=timezone.now())
