"""Where a document's file lives: ``DEER_FLOW_HOME/knowledge/<collection id>/<document id>/<name>``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.config import deer_flow_home


def knowledge_root() -> Path:
    return deer_flow_home() / "knowledge"


def collection_dir(collection_id: Any) -> Path:
    return knowledge_root() / str(collection_id)


def document_dir(document) -> Path:
    return collection_dir(document.collection_id) / str(document.pk)


# A fetched page is kept as ``content<extension>``: the extension its content type calls for,
# which the URL need not show.
URL_FILE_STEM = "content"


def document_file(document) -> Path | None:
    """The stored original, or None (a URL not fetched yet)."""
    folder = document_dir(document)
    if document.source_kind != "url":
        path = folder / document.name
        return path if path.is_file() else None
    found = sorted(p for p in folder.glob(f"{URL_FILE_STEM}.*") if p.is_file()) if folder.is_dir() else []
    return found[0] if found else None
