"""Writes: collections, their share settings, documents (added by upload, URL or from a
thread's outputs; ingested off the request path) and the chats they are attached to.

Deleting a document or a collection removes its rows (passages with their index entries and
vectors go with them by cascade and the index's triggers) and, once the transaction commits,
its files: nothing of it is left to search or to read.
"""

from __future__ import annotations

import hashlib
import logging
import os
import secrets
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Max

from apps.agents.selectors import agent_get_owned
from apps.errors import Conflict, InvalidRequest, NotFound, PayloadTooLarge
from apps.knowledge import queue
from apps.knowledge.files import collection_dir, document_dir
from apps.knowledge.models import (
    Collection,
    CollectionShare,
    Document,
    ThreadCollection,
)
from apps.knowledge.selectors import (
    collection_get_for_owner,
    collection_get_readable,
    document_get_for_owner,
)
from apps.threads.selectors import thread_get_for_user
from apps.threads.uploads import validate_upload_name
from harness.config import get_app_config, thread_user_data_dir
from harness.net.guard import GuardError, check_url

logger = logging.getLogger(__name__)

COPY_CHUNK = 1024 * 1024
MAX_NAME = 120
MAX_DESCRIPTION = 2000


def _remove_later(path: Path) -> None:
    transaction.on_commit(lambda: shutil.rmtree(path, ignore_errors=True))


# --- collections ---------------------------------------------------------------------------


def _clean_name(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidRequest("name is required")
    name = value.strip()
    if len(name) > MAX_NAME:
        raise InvalidRequest(f"name must be at most {MAX_NAME} characters")
    return name


def _clean_description(value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InvalidRequest("description must be a string")
    if len(value) > MAX_DESCRIPTION:
        raise InvalidRequest(f"description must be at most {MAX_DESCRIPTION} characters")
    return value.strip()


def _agent_id(user, value: Any) -> uuid.UUID | None:
    if value in (None, ""):
        return None
    if not isinstance(value, str):
        raise InvalidRequest("agent must be the name or id of one of your agents, or null")
    try:
        return agent_get_owned(user=user, key=value).pk
    except NotFound:
        raise InvalidRequest(f"agent {value!r} is not one of your agents") from None


def collection_create(*, user, name: Any, description: Any = "", agent: Any = None) -> Collection:
    name = _clean_name(name)
    with transaction.atomic():
        if Collection.objects.filter(owner=user, name=name).exists():
            raise Conflict(f"you already have a collection named {name!r}")
        return Collection.objects.create(owner=user, name=name, description=_clean_description(description),
                                         agent_id=_agent_id(user, agent))


def _share_users(owner, usernames: Any) -> list:
    if not isinstance(usernames, list) or not all(isinstance(u, str) for u in usernames):
        raise InvalidRequest("shared_with must be a list of user names")
    wanted = sorted({u.strip() for u in usernames if u.strip()})
    users = list(get_user_model().objects.filter(username__in=wanted))
    missing = sorted(set(wanted) - {u.username for u in users})
    if missing:
        raise InvalidRequest(f"no such user: {', '.join(missing)}")
    return [u for u in users if u.pk != owner.pk]


def collection_update(*, user, collection_id: Any, changes: dict) -> Collection:
    """``name``, ``description``, ``agent`` (name or id of one of the user's agents, or null),
    ``shared_with`` (user names; replaces the list), ``shared_with_everyone``."""
    unknown = sorted(set(changes) - {"name", "description", "agent", "shared_with", "shared_with_everyone"})
    if unknown:
        raise InvalidRequest(f"unknown field(s): {', '.join(unknown)}")
    with transaction.atomic():
        collection = collection_get_for_owner(user=user, collection_id=collection_id)
        collection = Collection.objects.select_for_update().get(pk=collection.pk)
        if "name" in changes:
            name = _clean_name(changes["name"])
            if Collection.objects.filter(owner=user, name=name).exclude(pk=collection.pk).exists():
                raise Conflict(f"you already have a collection named {name!r}")
            collection.name = name
        if "description" in changes:
            collection.description = _clean_description(changes["description"])
        if "agent" in changes:
            collection.agent_id = _agent_id(user, changes["agent"])
        if "shared_with_everyone" in changes:
            if not isinstance(changes["shared_with_everyone"], bool):
                raise InvalidRequest("shared_with_everyone must be true or false")
            collection.shared_with_everyone = changes["shared_with_everyone"]
        if "shared_with" in changes:
            users = _share_users(user, changes["shared_with"])
            CollectionShare.objects.filter(collection=collection).exclude(user__in=users).delete()
            have = set(CollectionShare.objects.filter(collection=collection).values_list("user_id", flat=True))
            CollectionShare.objects.bulk_create([CollectionShare(collection=collection, user=u) for u in users if u.pk not in have])
        if collection.agent_id is not None and (collection.shared_with_everyone or collection.shares.exists()):
            # An agent's collection is read through the agent only: sharing it would open a second door.
            raise InvalidRequest("a collection bound to an agent cannot also be shared; share the agent instead")
        collection.save()
        return collection


def collection_delete(*, user, collection_id: Any) -> None:
    collection_purge(collection=collection_get_for_owner(user=user, collection_id=collection_id))


def collection_purge(*, collection: Collection) -> None:
    """The collection, everything in it and its folder (also what the admin's delete calls)."""
    with transaction.atomic():
        path = collection_dir(collection.pk)
        collection.delete()
        _remove_later(path)


# --- documents -----------------------------------------------------------------------------


@dataclass
class IncomingFile:
    name: str
    file: Any  # a Django UploadedFile, or anything with ``size`` and ``chunks()``


def _next_version(collection: Collection, name: str) -> int:
    return (collection.documents.filter(name=name).aggregate(v=Max("version"))["v"] or 0) + 1


def _check_room(collection: Collection, adding: int) -> None:
    cap = get_app_config().knowledge.max_documents_per_collection
    if collection.documents.count() + adding > cap:
        raise InvalidRequest(f"a collection holds at most {cap} documents (versions count); delete some first")


def _new_document(collection: Collection, *, name: str, source_kind: str, source: str = "") -> Document:
    return Document.objects.create(collection=collection, name=name, version=_next_version(collection, name),
                                   source_kind=source_kind, source=source[:2000], title=name)


def _store_file(document: Document, chunks, max_size: int) -> None:
    """Copy into the document's folder through a hidden staging file; size and digest counted."""
    folder = document_dir(document)
    folder.mkdir(parents=True, exist_ok=True)
    staging = folder / f".part-{secrets.token_hex(6)}"
    digest, size = hashlib.sha256(), 0
    try:
        with staging.open("wb") as out:
            for chunk in chunks:
                size += len(chunk)
                if size > max_size:
                    raise PayloadTooLarge(f"{document.name} is over the {max_size:,}-byte limit of knowledge.max_document_size")
                digest.update(chunk)
                out.write(chunk)
        os.replace(staging, folder / document.name)
    except BaseException:
        staging.unlink(missing_ok=True)
        raise
    document.size, document.sha256 = size, digest.hexdigest()
    document.save(update_fields=["size", "sha256", "updated_at"])


def document_add_uploads(*, user, collection_id: Any, files: list[IncomingFile]) -> list[Document]:
    if not files:
        raise InvalidRequest("send at least one file in the 'files' field")
    max_size = get_app_config().knowledge.max_document_size
    for item in files:
        validate_upload_name(item.name)
        if getattr(item.file, "size", 0) > max_size:
            raise PayloadTooLarge(f"{item.name} is over the {max_size:,}-byte limit of knowledge.max_document_size")
    added: list[Document] = []
    folders: list[Path] = []
    try:
        with transaction.atomic():
            collection = collection_get_for_owner(user=user, collection_id=collection_id)
            _check_room(collection, len(files))
            for item in files:
                document = _new_document(collection, name=item.name, source_kind=Document.Source.UPLOAD)
                folders.append(document_dir(document))
                _store_file(document, item.file.chunks(COPY_CHUNK), max_size)
                added.append(document)
                queue.ingest_later(document.pk)
    except BaseException:
        for folder in folders:  # nothing half-added: the rows rolled back, the files go too
            shutil.rmtree(folder, ignore_errors=True)
        raise
    return added


def _name_for_url(url: str) -> str:
    parts = urlsplit(url)
    last = unquote(parts.path.rstrip("/").rpartition("/")[2])
    name = last if last and not last.startswith(".") and "\\" not in last else parts.hostname or "page"
    name = "".join(ch for ch in name if ch.isprintable())[:200] or "page"
    return name


def document_add_from_url(*, user, collection_id: Any, url: Any) -> Document:
    """The page is fetched by the ingestion worker, through the SSRF guard; here only its form."""
    if not isinstance(url, str) or not url.strip():
        raise InvalidRequest("url is required")
    url = url.strip()
    try:
        check_url(url)
    except GuardError as exc:
        raise InvalidRequest(f"this URL cannot be fetched: {exc}") from None
    with transaction.atomic():
        collection = collection_get_for_owner(user=user, collection_id=collection_id)
        _check_room(collection, 1)
        document = _new_document(collection, name=_name_for_url(url), source_kind=Document.Source.URL, source=url)
        queue.ingest_later(document.pk)
        return document


def document_add_from_thread(*, user, collection_id: Any, thread_id: Any, path: Any) -> Document:
    """A file of one of the user's chats (``outputs/…`` or ``uploads/…``), copied in."""
    if not isinstance(path, str) or not path.strip():
        raise InvalidRequest("path is required (for example outputs/report.md)")
    thread = thread_get_for_user(user=user, thread_id=str(thread_id or ""))
    relative = path.strip().removeprefix("/mnt/user-data/").lstrip("/")
    root = thread_user_data_dir(user.pk, thread.pk).resolve()
    source = (root / relative).resolve()
    if not (source.is_relative_to(root / "outputs") or source.is_relative_to(root / "uploads")) or not source.is_file():
        raise NotFound(f"no file {path} in this chat's outputs or uploads")
    name = validate_upload_name(source.name)
    max_size = get_app_config().knowledge.max_document_size
    folder = None
    try:
        with transaction.atomic():
            collection = collection_get_for_owner(user=user, collection_id=collection_id)
            _check_room(collection, 1)
            document = _new_document(collection, name=name, source_kind=Document.Source.THREAD, source=f"{thread.pk}:{relative}")
            folder = document_dir(document)

            def chunks():
                with source.open("rb") as fh:
                    while block := fh.read(COPY_CHUNK):
                        yield block

            _store_file(document, chunks(), max_size)
            queue.ingest_later(document.pk)
            return document
    except BaseException:
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
        raise


def document_delete(*, user, document_id: Any) -> None:
    """This version goes; when it was the current one, the newest ready older version is
    searched again."""
    document_purge(document=document_get_for_owner(user=user, document_id=document_id))


def document_purge(*, document: Document) -> None:
    """The document's rows and folder (also what the admin's delete calls)."""
    with transaction.atomic():
        path, was_current = document_dir(document), document.is_current
        collection_id, name = document.collection_id, document.name
        document.delete()
        if was_current:
            _make_current(collection_id, name)
        _remove_later(path)


def _make_current(collection_id, name: str) -> None:
    newest = (Document.objects.filter(collection_id=collection_id, name=name, status=Document.Status.READY)
              .order_by("-version").values_list("pk", flat=True).first())
    Document.objects.filter(collection_id=collection_id, name=name).exclude(pk=newest).update(is_current=False)
    if newest is not None:
        Document.objects.filter(pk=newest).update(is_current=True)


def document_retry(*, user, document_id: Any) -> Document:
    with transaction.atomic():
        document = document_get_for_owner(user=user, document_id=document_id)
        if document.status == Document.Status.READY:
            raise Conflict("the document is ready; add it again for a new version")
        Document.objects.filter(pk=document.pk).update(status=Document.Status.QUEUED, progress=0, error="")
        queue.ingest_later(document.pk)
    document.refresh_from_db()
    return document


# --- chats ---------------------------------------------------------------------------------


def thread_collections_set(*, user, thread_id: Any, collection_ids: Any) -> list[Collection]:
    """The collections attached to one of the user's chats (replaces the set). Each must be
    readable by the user and not bound to an agent."""
    thread = thread_get_for_user(user=user, thread_id=str(thread_id or ""))
    if not isinstance(collection_ids, list) or not all(isinstance(c, str) for c in collection_ids):
        raise InvalidRequest("collection_ids must be a list of collection ids")
    wanted = []
    for cid in dict.fromkeys(collection_ids):
        collection = collection_get_readable(user=user, collection_id=cid)
        if collection.agent_id is not None:
            raise InvalidRequest(f"{collection.name} belongs to an agent: chat with that agent to use it")
        wanted.append(collection)
    with transaction.atomic():
        ThreadCollection.objects.filter(thread=thread).exclude(collection__in=wanted).delete()
        have = set(ThreadCollection.objects.filter(thread=thread).values_list("collection_id", flat=True))
        ThreadCollection.objects.bulk_create([ThreadCollection(thread=thread, collection=c) for c in wanted if c.pk not in have])
    return wanted
