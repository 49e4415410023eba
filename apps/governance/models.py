"""Governance: approval rules a user adds, the approval audit, and usage budgets."""

from django.conf import settings
from django.db import models
from django.db.models import Q


class ApprovalRule(models.Model):
    """A user's own rule. It can only tighten the operator's ``config.yaml`` rules (the
    strictest decision wins), so users may manage their own without an admin."""

    class Action(models.TextChoices):
        ASK = "ask"
        DENY = "deny"
        ALLOW = "allow"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="approval_rules")
    name = models.CharField(max_length=64)
    tool = models.CharField(max_length=200, help_text="Tool name or glob (mcp__*); several separated by commas.")
    match = models.CharField(max_length=1000, blank=True, default="", help_text="Regular expression searched in every argument.")
    action = models.CharField(max_length=8, choices=Action.choices, default=Action.ASK)
    agents = models.JSONField(default=list, blank=True, help_text="Only for these agents; empty: all.")
    position = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["owner_id", "position", "id"]
        constraints = [models.UniqueConstraint(fields=["owner", "name"], name="uq_approval_rule_owner_name")]

    def __str__(self) -> str:
        return f"{self.name}: {self.action} {self.tool}"

    def as_rule(self) -> dict:
        return {"name": self.name, "tool": [t.strip() for t in self.tool.split(",") if t.strip()], "match": self.match or None,
                "action": self.action, "agents": list(self.agents or [])}


class ApprovalDecision(models.Model):
    """The audit: one row per decision about one tool call. Arguments are kept as a digest."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="approval_decisions",
                             help_text="Whose run it was.")
    thread_id = models.CharField(max_length=64, blank=True, default="")
    run_id = models.CharField(max_length=64, blank=True, default="")
    tool_call_id = models.CharField(max_length=128, blank=True, default="")
    tool = models.CharField(max_length=128)
    args_digest = models.CharField(max_length=64, help_text="SHA-256 of the canonical JSON arguments.")
    rule_name = models.CharField(max_length=64)
    rule_source = models.CharField(max_length=16, help_text="config or user")
    decision = models.CharField(max_length=32)
    decided_by = models.CharField(max_length=64, help_text="A user id, policy, schedule or subagent.")
    reason = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["user", "-created_at"], name="approval_user_created_idx"),
                   models.Index(fields=["thread_id"], name="approval_thread_idx")]

    def __str__(self) -> str:
        return f"{self.decision} {self.tool} ({self.rule_name})"


class SandboxAuditEntry(models.Model):
    """One shell or file tool call of an agent (harness SandboxAuditMiddleware). Commands are kept
    as a SHA-256 and a 200-character preview; file content never. Kept sandbox_audit.retention_days."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="sandbox_audit_entries",
                             help_text="Whose run it was.")
    thread_id = models.CharField(max_length=64, blank=True, default="")
    run_id = models.CharField(max_length=64, blank=True, default="")
    tool_call_id = models.CharField(max_length=128, blank=True, default="")
    tool = models.CharField(max_length=128)
    access = models.CharField(max_length=8, help_text="read or write")
    digest = models.CharField(max_length=64, help_text="SHA-256 of the command, or of the arguments without file content.")
    preview = models.CharField(max_length=200, blank=True, default="")
    paths = models.JSONField(default=list, blank=True)
    outcome = models.CharField(max_length=16)
    duration_ms = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "sandbox audit entries"
        indexes = [models.Index(fields=["user", "-created_at"], name="sandbox_audit_user_idx"),
                   models.Index(fields=["thread_id"], name="sandbox_audit_thread_idx")]

    def __str__(self) -> str:
        return f"{self.tool} {self.outcome} ({self.preview[:40]})"


class Budget(models.Model):
    """Caps on a user's usage per UTC day and calendar month, in tokens and/or cost. The row
    without a user is everyone's default; a user's own row replaces it entirely. Empty caps
    are unlimited."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="budget",
                                help_text="Empty: the default for every user without a budget of their own.")
    daily_tokens = models.BigIntegerField(null=True, blank=True)
    monthly_tokens = models.BigIntegerField(null=True, blank=True)
    daily_cost = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True)
    monthly_cost = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True)
    is_default = models.BooleanField(default=False, editable=False)
    currency = models.CharField(max_length=8, default="USD", help_text="Cost caps count models priced in this currency.")
    note = models.CharField(max_length=200, blank=True, default="")
    updated_at = models.DateTimeField(auto_now=True)

    CAP_FIELDS = ("daily_tokens", "monthly_tokens", "daily_cost", "monthly_cost")

    class Meta:
        constraints = [
            # NULLs are distinct in a unique index, so the one default row is marked explicitly.
            models.UniqueConstraint(fields=["is_default"], condition=Q(is_default=True), name="uq_budget_single_default"),
            models.CheckConstraint(condition=Q(is_default=True, user__isnull=True) | Q(is_default=False, user__isnull=False),
                                   name="ck_budget_default_has_no_user"),
            models.CheckConstraint(condition=(Q(daily_tokens__isnull=True) | Q(daily_tokens__gte=0)) & (Q(monthly_tokens__isnull=True) | Q(monthly_tokens__gte=0))
                                   & (Q(daily_cost__isnull=True) | Q(daily_cost__gte=0)) & (Q(monthly_cost__isnull=True) | Q(monthly_cost__gte=0)),
                                   name="ck_budget_caps_not_negative", violation_error_message="Budget caps must be zero or more."),
        ]

    def save(self, *args, **kwargs):
        self.is_default = self.user_id is None
        super().save(*args, **kwargs)

    def __str__(self) -> str:
        return f"budget for {self.user or 'everyone'}"


class ModelProbe(models.Model):
    """The latest capability probe of one configured model (``manage.py probe_models``)."""

    class Status(models.TextChoices):
        PASSED = "passed"
        FAILED = "failed"
        NOT_CONFIGURED = "not_configured"

    model_name = models.CharField(max_length=128, unique=True)
    status = models.CharField(max_length=16, choices=Status.choices)
    failed_steps = models.JSONField(default=list, blank=True)
    steps = models.JSONField(default=list, blank=True, help_text="Each step: name, status, detail, the provider's error.")
    blocks_agent = models.BooleanField(default=False, help_text="It failed a step the agent cannot do without (tool calls).")
    allow_despite_failure = models.BooleanField(default=False, help_text="An admin lets users pick it for the agent anyway.")
    probed_at = models.DateTimeField()

    class Meta:
        ordering = ["model_name"]

    def __str__(self) -> str:
        return f"{self.model_name}: {self.status}"

    @property
    def blocked(self) -> bool:
        return self.blocks_agent and not self.allow_despite_failure
