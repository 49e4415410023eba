"""Long-term memory on the ORM: one profile per owner and agent bucket, and its facts.

The shapes mirror ``harness.memory.types``; ``stores.py`` converts. Retrieval indexes
``MemoryFact.search_text``: on SQLite an FTS5 table kept in step by triggers (migration 0005),
on PostgreSQL a GIN expression index serving ``to_tsvector`` matching.
"""

from django.conf import settings
from django.db import models


class MemoryProfile(models.Model):
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memory_profiles")
    # "" is the default agent's bucket; custom agents have their own.
    agent = models.CharField(max_length=128, blank=True, default="")
    work_context = models.TextField(blank=True, default="")
    personal_context = models.TextField(blank=True, default="")
    top_of_mind = models.TextField(blank=True, default="")
    recent_months = models.TextField(blank=True, default="")
    earlier_context = models.TextField(blank=True, default="")
    long_term_background = models.TextField(blank=True, default="")
    paused = models.BooleanField(default=False, help_text="Paused memory is neither updated nor injected.")
    revision = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["owner", "agent"], name="memory_profile_owner_agent_uniq")]

    def __str__(self) -> str:
        return f"memory of {self.owner_id}/{self.agent or 'default'}"


class MemoryFact(models.Model):
    profile = models.ForeignKey(MemoryProfile, on_delete=models.CASCADE, related_name="facts")
    fact_id = models.CharField(max_length=64)
    content = models.TextField()
    # What full-text retrieval indexes: the content and, for CJK text, its character bigrams
    # (harness.memory.retrieval.index_text). Written with the content by the store.
    search_text = models.TextField(blank=True, default="", editable=False)
    category = models.CharField(max_length=32, default="context")
    confidence = models.FloatField(default=0.5)
    source_kind = models.CharField(max_length=16, default="conversation")
    # Plain ids, not foreign keys: provenance outlives a deleted thread.
    source_thread_id = models.CharField(max_length=64, blank=True, default="")
    source_run_id = models.CharField(max_length=64, blank=True, default="")
    source_message_id = models.CharField(max_length=128, blank=True, default="")
    created_at = models.DateTimeField()
    last_confirmed_at = models.DateTimeField(null=True, blank=True)
    valid_until = models.DateTimeField(null=True, blank=True)
    revision = models.PositiveIntegerField(default=1)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["profile", "fact_id"], name="memory_fact_profile_id_uniq")]
        # Injection walks a profile's facts in this order and stops early: no sort of them all.
        indexes = [models.Index(fields=["profile", "-confidence", "-created_at"], name="memory_fact_rank_idx")]

    def __str__(self) -> str:
        return self.content[:80]


class PendingMemoryUpdate(models.Model):
    """An update a server was stopped before applying (``updates.stop_updates``): the next
    start queues it (``updates.resume_saved_updates``) and deletes the row."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    thread_id = models.CharField(max_length=64)
    # harness.memory.updater.UpdateJob as a dict: owner, agent, thread_id, run_id, messages.
    job = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"pending memory update of thread {self.thread_id}"
