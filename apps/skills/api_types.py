"""Wire types of the skills API."""

from __future__ import annotations

from rest_framework import serializers


class Finding(serializers.Serializer):
    rule = serializers.CharField()
    severity = serializers.CharField()
    file = serializers.CharField()
    line = serializers.IntegerField(allow_null=True)
    message = serializers.CharField()


class Skill(serializers.Serializer):
    name = serializers.CharField()
    description = serializers.CharField(allow_blank=True)
    license = serializers.CharField(allow_null=True)
    version = serializers.CharField(allow_null=True)
    author = serializers.CharField(allow_null=True)
    compatibility = serializers.CharField(allow_null=True)
    category = serializers.CharField(help_text="public, global or custom")
    enabled = serializers.BooleanField()
    editable = serializers.BooleanField()
    container_path = serializers.CharField()
    allowed_tools = serializers.ListField(child=serializers.CharField(), allow_null=True)
    required_secrets = serializers.ListField(child=serializers.CharField())
    secrets_autonomous = serializers.BooleanField(help_text="false: the skill gets its secrets only when the user starts it with /name")
    held = serializers.BooleanField(help_text="the agent wrote it and its install scan found something high: off until turned on with acknowledge_findings")
    review_findings = Finding(many=True, help_text="the install scan's findings that held it")


class SkillList(serializers.Serializer):
    skills = Skill(many=True)


class SkillVersion(serializers.Serializer):
    id = serializers.CharField()
    version = serializers.CharField(allow_null=True)
    installed_at = serializers.IntegerField(help_text="Unix time")


class SkillVersions(serializers.Serializer):
    versions = SkillVersion(many=True)


class SkillRevision(serializers.Serializer):
    id = serializers.IntegerField()
    action = serializers.ChoiceField(["create", "edit", "patch", "write_file", "remove_file", "delete", "restore"])
    action_display = serializers.CharField()
    file_path = serializers.CharField()
    thread_id = serializers.CharField(allow_null=True, help_text="The conversation the agent changed it in; null for a restore.")
    created_at = serializers.DateTimeField()
    prev_content = serializers.CharField(allow_null=True, help_text="The file before the change (null: it did not exist).")
    new_content = serializers.CharField(allow_null=True, help_text="The file after the change (null: removed).")
    moderation = serializers.CharField(allow_blank=True)
    restorable = serializers.BooleanField(help_text="POST .../history/{id}/restore puts prev_content back.")


class SkillDetail(Skill):
    content = serializers.CharField(allow_blank=True, help_text="SKILL.md")
    versions = SkillVersion(many=True)
    history = SkillRevision(many=True, help_text="The agent's changes (skill_manage), newest first; custom skills only.")


class SkillEnable(serializers.Serializer):
    enabled = serializers.BooleanField()
    acknowledge_findings = serializers.BooleanField(required=False, default=False,
                                                    help_text="Turn on a skill its install scan held, having read its review_findings.")


class SkillHeld(serializers.Serializer):
    detail = serializers.CharField()
    held = serializers.BooleanField()
    findings = Finding(many=True)


class SkillInstallFromThread(serializers.Serializer):
    thread_id = serializers.CharField()
    path = serializers.CharField(help_text="a .skill or .zip file in the thread, e.g. /mnt/user-data/outputs/x.skill")
    scope = serializers.ChoiceField(choices=["user", "global"], required=False, allow_null=True)


class SkillInstallUpload(serializers.Serializer):
    file = serializers.FileField()
    scope = serializers.ChoiceField(choices=["user", "global"], required=False, allow_null=True)


class SkillInstalled(serializers.Serializer):
    success = serializers.BooleanField()
    skill_name = serializers.CharField()
    version = serializers.CharField(allow_null=True)
    replaced = serializers.BooleanField()
    scope = serializers.CharField()
    message = serializers.CharField()
    held = serializers.BooleanField(help_text="installed but kept off until the user turns it on knowing the findings")
    findings = Finding(many=True)


class SkillRefused(serializers.Serializer):
    """A 422: the usual ``{detail}``, and when the archive's scan refused it, what it found."""

    detail = serializers.CharField()
    success = serializers.BooleanField(required=False)
    findings = Finding(many=True, required=False)


class SkillRollback(serializers.Serializer):
    version = serializers.CharField(required=False, allow_null=True, help_text="a version id (default: the previous one)")
    scope = serializers.ChoiceField(choices=["user", "global"], required=False, allow_null=True)


class SkillRolledBack(serializers.Serializer):
    success = serializers.BooleanField()
    skill_name = serializers.CharField()
    version = serializers.CharField(allow_null=True)
    message = serializers.CharField()


class SkillRestored(serializers.Serializer):
    success = serializers.BooleanField()
    skill_name = serializers.CharField()
    revision = serializers.IntegerField(help_text="The history row the restore itself made.")
    file_path = serializers.CharField()
    message = serializers.CharField()
