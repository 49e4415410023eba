"""Collections, their documents (every version kept until deleted) and the passages the
search reads. A passage row carries its collection's id so a search filters in the index
join without walking documents; files live under ``DEER_FLOW_HOME/knowledge/<collection>/<document>/``."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models


class Collection(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="knowledge_collections")
    name = models.CharField(max_length=120)
    description = models.TextField(blank=True, default="")
    # Bound to one of the owner's custom agents: searched only in that agent's runs, by
    # anyone the agent is shared with, and never in the owner's other chats.
    agent_id = models.UUIDField(null=True, blank=True)
    shared_with_everyone = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["owner", "name"], name="uq_knowledge_collection_owner_name")]

    def __str__(self) -> str:
        return self.name


class CollectionShare(models.Model):
    """Read access for one named user (never write: only the owner changes a collection)."""

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="shares")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="knowledge_shares")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["collection", "user"], name="uq_knowledge_share_collection_user")]


class ThreadCollection(models.Model):
    """A collection attached to a chat: its runs search it (while its user may still read it)."""

    thread = models.ForeignKey("threads.Thread", on_delete=models.CASCADE, related_name="knowledge_collections")
    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="threads")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["thread", "collection"], name="uq_knowledge_thread_collection")]


class Document(models.Model):
    class Source(models.TextChoices):
        UPLOAD = "upload"
        URL = "url"
        THREAD = "thread"

    class Status(models.TextChoices):
        QUEUED = "queued"
        PROCESSING = "processing"
        READY = "ready"
        FAILED = "failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="documents")
    name = models.CharField(max_length=255)  # the file name; versions share it
    title = models.CharField(max_length=300, blank=True, default="")
    version = models.PositiveIntegerField(default=1)
    # The newest version of its name that is ready; only current versions are searched.
    is_current = models.BooleanField(default=False)
    source_kind = models.CharField(max_length=16, choices=Source.choices)
    source = models.CharField(max_length=2000, blank=True, default="")  # the URL, or thread id and path
    content_type = models.CharField(max_length=120, blank=True, default="")
    size = models.BigIntegerField(default=0)
    sha256 = models.CharField(max_length=64, blank=True, default="")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    progress = models.PositiveSmallIntegerField(default=0)  # percent
    error = models.TextField(blank=True, default="")
    chunk_count = models.PositiveIntegerField(default=0)
    embedded = models.BooleanField(default=False)  # its passages have vectors
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name", "-version"]
        constraints = [models.UniqueConstraint(fields=["collection", "name", "version"], name="uq_knowledge_document_version")]
        indexes = [models.Index(fields=["status"], name="ix_knowledge_document_status")]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}"


class Passage(models.Model):
    id = models.BigAutoField(primary_key=True)
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="passages")
    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="+")
    ordinal = models.PositiveIntegerField()
    citation_id = models.CharField(max_length=40, unique=True)
    section = models.CharField(max_length=1000, blank=True, default="")
    page = models.PositiveIntegerField(null=True, blank=True)
    text = models.TextField()
    # What the full-text index reads: the section path, the text and its CJK bigrams.
    search_text = models.TextField(editable=False)
    embedding = models.BinaryField(null=True, blank=True, editable=False)  # float32, unit length

    class Meta:
        ordering = ["document", "ordinal"]
        constraints = [models.UniqueConstraint(fields=["document", "ordinal"], name="uq_knowledge_passage_ordinal")]
