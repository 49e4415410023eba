"""Wire type of a run's workspace changes and delivery receipt."""

from __future__ import annotations

from rest_framework import serializers

from apps.threads.api_types import free_object


class ChangeSummary(serializers.Serializer):
    created = serializers.IntegerField()
    modified = serializers.IntegerField()
    deleted = serializers.IntegerField()
    symlink_created = serializers.IntegerField()
    additions = serializers.IntegerField()
    deletions = serializers.IntegerField()
    truncated = serializers.BooleanField(help_text="some change is listed without its diff, or not at all")


class WorkspaceChanges(serializers.Serializer):
    available = serializers.BooleanField(help_text="false: the run recorded no changes (an older run, or nothing tracked)")
    version = serializers.IntegerField()
    summary = ChangeSummary()
    files = serializers.ListField(child=free_object(), help_text="{path, status, diff, ...} per file")
    limits = free_object()
    delivery = free_object(allow_null=True, help_text="the run's delivery receipt; null for a run from before receipts")
