"""Wire type of a run's workspace changes and delivery receipt."""

from __future__ import annotations

from rest_framework import serializers

from apps.threads.api_types import free_object


class WorkspaceChanges(serializers.Serializer):
    available = serializers.BooleanField(help_text="false: the run recorded no changes (an older run, or nothing tracked)")
    version = serializers.IntegerField()
    summary = serializers.DictField(child=serializers.IntegerField(), help_text="created, modified, deleted, additions, deletions, ...")
    files = serializers.ListField(child=free_object(), help_text="{path, status, diff, ...} per file")
    limits = free_object()
    delivery = free_object(allow_null=True, help_text="the run's delivery receipt; null for a run from before receipts")
