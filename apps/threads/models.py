"""Threads and feedback. Graph state lives in the LangGraph checkpointer, not here: a thread
row keeps only what lists, ownership and admin need."""

import uuid

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models
from django.db.models.functions import Lower

THREAD_ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
thread_id_validator = RegexValidator(THREAD_ID_PATTERN, "Thread ids are 1 to 64 characters of letters, digits, '_' and '-'.")


def new_thread_id() -> str:
    return str(uuid.uuid4())


class Thread(models.Model):
    class Status(models.TextChoices):
        IDLE = "idle"
        BUSY = "busy"
        INTERRUPTED = "interrupted"
        ERROR = "error"

    id = models.CharField(primary_key=True, max_length=64, default=new_thread_id, validators=[thread_id_validator])
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="threads")
    assistant_id = models.CharField(max_length=128, blank=True, default="")
    title = models.CharField(max_length=255, blank=True, default="")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.IDLE)
    metadata = models.JSONField(default=dict, blank=True)
    # Pinned threads head the sidebar, newest pin first; null is not pinned.
    pinned_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at"]
        indexes = [models.Index(fields=["owner", "-updated_at"], name="thread_owner_updated_idx")]
        constraints = [
            # The service validates first; this keeps a bad id out even from raw writes.
            models.CheckConstraint(condition=models.Q(id__regex=THREAD_ID_PATTERN), name="ck_thread_id_format"),
        ]

    def __str__(self) -> str:
        return self.title or self.id


class ThreadTag(models.Model):
    """A user's label for chats (Open WebUI's tags): a chat may carry several, and the sidebar
    filters by them. Names are unique per owner whatever their case; a tag only ever holds
    its owner's threads (the services check both ends)."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="thread_tags")
    name = models.CharField(max_length=40)
    threads = models.ManyToManyField(Thread, related_name="tags", blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = [Lower("name")]
        constraints = [models.UniqueConstraint(Lower("name"), "owner", name="uq_thread_tag_owner_name")]

    def __str__(self) -> str:
        return self.name


class Feedback(models.Model):
    class Rating(models.IntegerChoices):
        UP = 1, "+1"
        DOWN = -1, "-1"

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="feedback")
    run = models.ForeignKey("runs.Run", on_delete=models.CASCADE, related_name="feedback")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="feedback")
    message_id = models.CharField(max_length=128, blank=True, default="")
    rating = models.SmallIntegerField(choices=Rating.choices)
    comment = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "feedback"
        constraints = [
            models.UniqueConstraint(fields=["run", "owner", "message_id"], name="uq_feedback_run_owner_message"),
            models.CheckConstraint(condition=models.Q(rating__in=[1, -1]), name="ck_feedback_rating"),
        ]

    def __str__(self) -> str:
        return f"{self.get_rating_display()} on {self.run_id}"



class SandboxContainer(models.Model):
    """A lease on one sandbox container (harness.sandbox.ownership): which server process owns
    it and which thread it serves. Shared by every process, so no two claim one container."""

    name = models.CharField(primary_key=True, max_length=128)
    owner = models.CharField(max_length=160, help_text="host:pid:start:random of the owning server process.")
    thread_key = models.CharField(max_length=160, blank=True, default="", help_text="user:thread, empty while warm.")
    expires_at = models.DateTimeField()
    last_used = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["thread_key"], condition=~models.Q(thread_key=""), name="uq_sandbox_container_thread"),
        ]

    def __str__(self) -> str:
        return self.name
