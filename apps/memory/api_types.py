"""Wire types of ``/api/memory``: DeerFlow's memory document (its camelCase keys, so a
document exported from DeerFlow imports here and the other way round)."""

from __future__ import annotations

from rest_framework import serializers

CATEGORIES = ["preference", "knowledge", "context", "behavior", "goal", "identity"]


class Summary(serializers.Serializer):
    summary = serializers.CharField(allow_blank=True)


class FactSource(serializers.Serializer):
    kind = serializers.CharField()
    threadId = serializers.CharField(allow_null=True)  # noqa: N815 (DeerFlow's key)
    runId = serializers.CharField(allow_null=True)  # noqa: N815
    messageId = serializers.CharField(allow_null=True)  # noqa: N815


class Fact(serializers.Serializer):
    id = serializers.CharField()
    content = serializers.CharField()
    category = serializers.CharField()
    confidence = serializers.FloatField()
    createdAt = serializers.DateTimeField(allow_null=True)  # noqa: N815
    lastConfirmedAt = serializers.DateTimeField(allow_null=True)  # noqa: N815
    validUntil = serializers.DateTimeField(allow_null=True)  # noqa: N815
    source = FactSource()
    revision = serializers.IntegerField()


class MemoryDocument(serializers.Serializer):
    version = serializers.CharField()
    revision = serializers.IntegerField()
    lastUpdated = serializers.DateTimeField()  # noqa: N815
    paused = serializers.BooleanField()
    user = serializers.DictField(child=Summary(), help_text="workContext, personalContext, topOfMind")
    history = serializers.DictField(child=Summary(), help_text="recentMonths, earlierContext, longTermBackground")
    facts = Fact(many=True)


class MemoryImport(serializers.Serializer):
    """A memory document as exported here or by DeerFlow; facts may carry fewer keys."""

    version = serializers.CharField(required=False)
    user = serializers.DictField(child=serializers.JSONField(), required=False)
    history = serializers.DictField(child=serializers.JSONField(), required=False)
    facts = serializers.ListField(child=serializers.DictField(child=serializers.JSONField()), required=False)


class FactCreate(serializers.Serializer):
    content = serializers.CharField()
    category = serializers.ChoiceField(choices=CATEGORIES, required=False)
    confidence = serializers.FloatField(required=False, min_value=0, max_value=1)


class FactPatch(FactCreate):
    revision = serializers.IntegerField(required=False, allow_null=True, help_text="refuse (409) if the fact changed since")


class MemoryConfig(serializers.Serializer):
    """Every ``memory:`` key of config.yaml as loaded (docs/configuration.md), and ``paused``."""

    enabled = serializers.BooleanField()
    injection_enabled = serializers.BooleanField()
    paused = serializers.BooleanField()
    debounce_seconds = serializers.FloatField()
    shutdown_flush_timeout_seconds = serializers.FloatField()
    model_name = serializers.CharField(allow_null=True)
    max_facts = serializers.IntegerField()
    fact_confidence_threshold = serializers.FloatField()
    max_injection_tokens = serializers.IntegerField()
    token_counting = serializers.ChoiceField(choices=["tiktoken", "char"])
    retrieval_adapter = serializers.ChoiceField(choices=["fts5", "fts5_cjk", ""], allow_blank=True)
    staleness_review_enabled = serializers.BooleanField()
    staleness_age_days = serializers.IntegerField()
    staleness_min_candidates = serializers.IntegerField()
    staleness_max_removals_per_cycle = serializers.IntegerField()
    staleness_protected_categories = serializers.ListField(child=serializers.CharField())
    staleness_max_lifetime_multiplier = serializers.FloatField()
    staleness_max_extension_days = serializers.IntegerField()
    consolidation_enabled = serializers.BooleanField()
    consolidation_min_facts = serializers.IntegerField()
    consolidation_max_groups_per_cycle = serializers.IntegerField()
    consolidation_max_sources = serializers.IntegerField()
    tool_mode = serializers.BooleanField()


class MemoryPause(serializers.Serializer):
    paused = serializers.BooleanField()


class MemoryStatusConfig(serializers.Serializer):
    enabled = serializers.BooleanField()
    injection_enabled = serializers.BooleanField()
    paused = serializers.BooleanField()


class MemoryStatus(serializers.Serializer):
    config = MemoryStatusConfig()
    data = MemoryDocument()
