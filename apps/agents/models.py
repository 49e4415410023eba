"""Custom agents: a persona (SOUL.md), its model and settings, its tools, skills and memory.

An agent is owned by one user; its name is unique per owner and is what the owner types in
``/api/agents/{name}``. Its ``id`` (a UUID) is its LangGraph ``assistant_id``, unique across
the server, so a shared agent can be addressed by others without clashing with their own
names. Every change writes an ``AgentVersion`` (the whole settings snapshot), so
``assistants.get_versions`` and the admin can show what an agent was at any point.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models


class Agent(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="agents")
    name = models.CharField(max_length=64, help_text="Lowercase letters, digits, '-' and '_'; unique per owner.")
    display_name = models.CharField(max_length=128, blank=True, default="")
    description = models.TextField(blank=True, default="")
    soul = models.TextField(blank=True, default="", help_text="SOUL.md: the persona, in Markdown, added to the system prompt.")
    model = models.CharField(max_length=128, blank=True, default="", help_text="A model name from config.yaml; empty = the default.")
    temperature = models.FloatField(null=True, blank=True)
    max_tokens = models.PositiveIntegerField(null=True, blank=True)
    thinking_enabled = models.BooleanField(default=False)
    reasoning_effort = models.CharField(max_length=16, blank=True, default="")
    # None: every configured group / every enabled skill, as the lead agent has.
    tool_groups = models.JSONField(null=True, blank=True)
    skills = models.JSONField(null=True, blank=True)
    memory_enabled = models.BooleanField(default=True, help_text="The agent keeps its own memory bucket.")
    avatar = models.CharField(max_length=16, blank=True, default="")
    color = models.CharField(max_length=16, blank=True, default="")
    shared = models.BooleanField(default=False, help_text="Other users on this server may chat with it (read-only).")
    metadata = models.JSONField(default=dict, blank=True)
    # The repositories and GitHub events that start this agent (apps/agents/github.py).
    github = models.JSONField(null=True, blank=True)
    version = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["owner", "name"], name="uq_agent_owner_name")]
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.owner_id})"


class AgentVersion(models.Model):
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="versions")
    version = models.PositiveIntegerField()
    snapshot = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["agent", "version"], name="uq_agent_version")]
        ordering = ["-version"]

    def __str__(self) -> str:
        return f"{self.agent_id} v{self.version}"
