from django.conf import settings
from django.db import models
from django.db.models import Q


class SkillState(models.Model):
    """A user's (or, with no owner, everyone's) choice to turn a skill on or off.

    No row means the default: on. Only choices are stored; the skills themselves live on
    disk (skills/public, users/{id}/skills/custom).
    """

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE,
                              related_name="skill_states", help_text="Empty: the default for every user.")
    name = models.CharField(max_length=64)
    enabled = models.BooleanField(default=True)
    # A skill the agent wrote (installed from a thread's files) whose scan found something
    # high: kept off until the user turns it on knowing the findings (docs/skills.md).
    held = models.BooleanField(default=False, help_text="Kept off by the install scan until a person turns it on.")
    findings = models.JSONField(default=list, blank=True,
                                help_text="The scan findings that held it (rule, severity, file, line, message).")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["owner", "name"], condition=Q(owner__isnull=False), name="uq_skill_state_owner_name"),
            models.UniqueConstraint(fields=["name"], condition=Q(owner__isnull=True), name="uq_skill_state_global_name"),
        ]
        ordering = ["name"]

    def __str__(self) -> str:
        who = self.owner_id or "everyone"
        return f"{self.name} for {who}: {'held' if self.held else 'on' if self.enabled else 'off'}"


class GlobalSkillChange(models.Model):
    """One admin action on a skill installed for everyone: the audit trail the admin shows.

    The skill itself lives on disk (``DEER_FLOW_HOME/skills/global``); this row records who
    changed it, when, to which version and what the scan reported, because a global skill
    reaches every user's agent.
    """

    class Action(models.TextChoices):
        INSTALL = "install", "installed"
        UPDATE = "update", "updated"
        ROLLBACK = "rollback", "rolled back"
        DELETE = "delete", "deleted"

    name = models.CharField(max_length=64, db_index=True)
    action = models.CharField(max_length=16, choices=Action.choices)
    version = models.CharField(max_length=64, blank=True, default="")
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                              related_name="global_skill_changes")
    findings = models.JSONField(default=list, blank=True, help_text="What the install scan reported (rule, severity, file, line, message).")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.name} {self.get_action_display()} by {self.actor or 'a deleted user'}"



class SkillRevision(models.Model):
    """One change the agent made to a user's own skill (``skill_manage``): the per-skill
    history the Skills page lists and restores from.

    The skill lives on disk (``users/{id}/skills/custom``); this row keeps who, from which
    thread, what was done to which file, and that file's text before and after.
    """

    class Action(models.TextChoices):
        CREATE = "create", "created"
        EDIT = "edit", "rewrote"
        PATCH = "patch", "patched"
        WRITE_FILE = "write_file", "wrote"
        REMOVE_FILE = "remove_file", "removed"
        DELETE = "delete", "deleted"
        RESTORE = "restore", "restored"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="skill_revisions")
    name = models.CharField(max_length=64)
    action = models.CharField(max_length=16, choices=Action.choices)
    file_path = models.CharField(max_length=255, default="SKILL.md")
    thread_id = models.CharField(max_length=64, blank=True, default="", help_text="The conversation the agent made it in.")
    prev_content = models.TextField(null=True, blank=True)
    new_content = models.TextField(null=True, blank=True)
    findings = models.JSONField(default=list, blank=True, help_text="Scan warnings the change passed with.")
    moderation = models.TextField(blank=True, default="", help_text="The moderation model's decision, when one is configured.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["owner", "name", "-created_at"], name="skill_rev_owner_name")]

    def __str__(self) -> str:
        return f"{self.name} {self.get_action_display()} for {self.owner_id}"
