"""Users and personal access tokens."""

from django.conf import settings
from django.contrib.auth.models import AbstractUser
from django.db import models
from django.utils import timezone


class User(AbstractUser):
    """The project's user model, so later fields need no swap of AUTH_USER_MODEL."""

    class Meta(AbstractUser.Meta):
        swappable = "AUTH_USER_MODEL"


class PersonalAccessToken(models.Model):
    """A bearer token for scripts. Only the SHA-256 digest is stored; the token is shown once."""

    class Scope(models.TextChoices):
        THREADS_READ = "threads:read"
        THREADS_WRITE = "threads:write"
        RUNS_READ = "runs:read"
        RUNS_CREATE = "runs:create"
        RUNS_CANCEL = "runs:cancel"
        # Knowledge bases (apps/knowledge): reading collections and searching them; changing them.
        KNOWLEDGE_READ = "knowledge:read"
        KNOWLEDGE_WRITE = "knowledge:write"
        # Staff operations by token (budgets, the operator's console); for staff accounts only,
        # never pre-selected, and it never makes anyone staff (apps.accounts.permissions).
        ADMIN = "admin"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="access_tokens")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, help_text="The first characters of the token, to recognise it.")
    digest = models.CharField(max_length=64, unique=True, help_text="SHA-256 of the token.")
    scopes = models.JSONField(default=list)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["owner", "-created_at"], name="pat_owner_created_idx")]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_active(self) -> bool:
        if self.revoked_at is not None:
            return False
        return self.expires_at is None or self.expires_at > timezone.now()
