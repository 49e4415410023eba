"""IM channel bindings: who a platform identity is here, which thread a chat maps to, the
one-time codes that create a binding, and what each channel worker last reported."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q


class ChannelConnection(models.Model):
    """A platform identity (Telegram user, Slack member, ...) bound to a user of this server.

    Revoking keeps the row (admin history) and frees the identity: the partial unique
    constraint only covers live bindings, so the same identity can be connected again.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="channel_connections")
    provider = models.CharField(max_length=32)
    workspace = models.CharField(max_length=128, blank=True, default="")  # team/guild/tenant; "" when none
    external_id = models.CharField(max_length=128)
    display_name = models.CharField(max_length=255, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["provider", "external_id", "workspace"], condition=Q(revoked_at__isnull=True),
                                    name="uq_channel_connection_active_identity"),
        ]
        indexes = [models.Index(fields=["user", "provider"], name="channel_conn_user_provider_idx")]

    def __str__(self) -> str:
        return f"{self.provider}:{self.display_name or self.external_id}"

    @property
    def active(self) -> bool:
        return self.revoked_at is None


class ChannelConversation(models.Model):
    """(provider, workspace, chat, topic) for one user → the thread their messages go to.

    The user is part of the key: in a group chat every member talks to their own thread, so
    no one reads another member's conversation through the bot, unless the operator chose
    one shared thread per group chat (``shared``).
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="channel_conversations")
    connection = models.ForeignKey(ChannelConnection, on_delete=models.SET_NULL, null=True, blank=True, related_name="conversations")
    provider = models.CharField(max_length=32)
    workspace = models.CharField(max_length=128, blank=True, default="")
    chat = models.CharField(max_length=128)
    topic = models.CharField(max_length=128, blank=True, default="")
    thread = models.ForeignKey("threads.Thread", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    # A group chat's one shared thread (``session.group_chats: shared``): ``user`` is its
    # owner, the member who started it; every connected member's turns go to it.
    shared = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at"]
        constraints = [
            models.UniqueConstraint(fields=["user", "provider", "workspace", "chat", "topic"], name="uq_channel_conversation_key"),
            models.UniqueConstraint(fields=["provider", "workspace", "chat", "topic"], condition=Q(shared=True),
                                    name="uq_channel_conversation_shared"),
        ]

    def __str__(self) -> str:
        where = f"{self.chat}/{self.topic}" if self.topic else self.chat
        return f"{self.provider}:{where}"


class ConnectCode(models.Model):
    """A one-time code a user sends to the bot to bind their platform identity.

    Only the SHA-256 digest is stored; the code is shown once. Single use (``used_at``),
    expiring, and issuing a new one retires the user's earlier codes for that provider.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="channel_connect_codes")
    provider = models.CharField(max_length=32)
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)
    connection = models.ForeignKey(ChannelConnection, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.provider} code for {self.user}"


class ChannelStatus(models.Model):
    """What the channels worker last reported for one provider, so the web process can show
    it (admin, providers API) without talking to the worker. ``cursor`` is the adapter's
    resume point (Telegram's update offset), kept across worker restarts."""

    provider = models.CharField(max_length=32, unique=True)
    state = models.CharField(max_length=16, default="stopped")  # starting | connected | retrying | login | disabled | stopped
    detail = models.CharField(max_length=500, blank=True, default="")  # why disabled / what it is retrying
    bot_name = models.CharField(max_length=128, blank=True, default="")
    process = models.CharField(max_length=128, blank=True, default="")
    last_event_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True, default="")
    last_error_at = models.DateTimeField(null=True, blank=True)
    cursor = models.JSONField(default=dict, blank=True)
    # What the login QR code encodes while the platform waits for an operator to scan it
    # (WeChat's iLink login); empty otherwise. Shown to administrators only.
    login_qr = models.TextField(blank=True, default="")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["provider"]
        verbose_name_plural = "channel statuses"

    def __str__(self) -> str:
        return f"{self.provider}: {self.state}"


class ChannelDelivery(models.Model):
    """A scheduled run's result waiting to be posted to a connection (an outbox).

    The run finishes in whatever process executed it; only the channels worker holds the
    platform connections, so it picks these rows up and sends them.
    """

    class Status(models.TextChoices):
        PENDING = "pending"
        SENT = "sent"
        FAILED = "failed"

    connection = models.ForeignKey(ChannelConnection, on_delete=models.CASCADE, related_name="deliveries")
    run_id = models.CharField(max_length=64, unique=True)  # one post per run, however often the hook fires
    task_id = models.CharField(max_length=64, blank=True, default="")
    # What the post is headed with (the scheduled task's title), kept on the row: the outbox
    # does not read the scheduling app's tables.
    title = models.CharField(max_length=200, blank=True, default="")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at"]
        verbose_name_plural = "channel deliveries"
        indexes = [models.Index(fields=["status", "created_at"], name="channel_delivery_pending_idx")]

    def __str__(self) -> str:
        return f"run {self.run_id} → {self.connection}"
