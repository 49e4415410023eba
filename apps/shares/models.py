"""A shared chat: a read-only snapshot of a thread behind an unguessable link."""

import uuid

from django.conf import settings
from django.db import models


class Share(models.Model):
    """The messages are copied when the link is made, so the link never shows what is said
    after it. The link's token is never stored: it is an HMAC of the row's id under the
    server's secret key (``services.share_token``), so the owner can be shown it again, and the
    row keeps only its SHA-256 digest for the lookup; a database dump alone opens no share."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="shares")
    # Deleting the chat deletes its links: a shared link never outlives what it shows.
    thread = models.ForeignKey("threads.Thread", on_delete=models.CASCADE, related_name="shares")
    title = models.CharField(max_length=256, blank=True, default="")
    messages = models.JSONField(default=list, blank=True, help_text="The visible conversation when the link was made.")
    include_files = models.BooleanField(default=False, help_text="Whether viewers may open the files the snapshot names.")
    files = models.JSONField(default=list, blank=True,
                             help_text="The files the snapshot names ({path, name, size}); reachable through the link only with include_files.")
    token_digest = models.CharField(max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["owner", "-created_at"], name="share_owner_created_idx")]

    def __str__(self) -> str:
        return f"{self.title or self.thread_id} ({'revoked' if self.revoked_at else 'active'})"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None
