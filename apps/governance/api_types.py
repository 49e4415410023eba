"""Wire types of approvals and budgets."""

from __future__ import annotations

from rest_framework import serializers

from apps.threads.api_types import free_object

DECISIONS = ["approve", "approve_always", "deny"]


class Decision(serializers.Serializer):
    id = serializers.IntegerField()
    user_id = serializers.IntegerField(allow_null=True)
    thread_id = serializers.CharField(allow_blank=True)
    run_id = serializers.CharField(allow_blank=True, allow_null=True)
    tool_call_id = serializers.CharField(allow_blank=True)
    tool = serializers.CharField()
    args_digest = serializers.CharField(allow_blank=True)
    rule = serializers.CharField(allow_blank=True, allow_null=True)
    rule_source = serializers.CharField(allow_blank=True, allow_null=True)
    decision = serializers.CharField()
    decided_by = serializers.CharField(allow_blank=True, allow_null=True)
    reason = serializers.CharField(allow_blank=True)
    created_at = serializers.DateTimeField()


class ThreadApprovals(serializers.Serializer):
    pending = free_object(allow_null=True, help_text="the approval the thread waits for ({type: approval, requests: [...]}), or null")
    decisions = Decision(many=True)


class ApprovalAnswer(serializers.Serializer):
    decision = serializers.ChoiceField(choices=DECISIONS, required=False, help_text="one answer for every pending call")
    decisions = serializers.DictField(child=serializers.ChoiceField(choices=DECISIONS), required=False,
                                      help_text="or one per tool call id")
    reason = serializers.CharField(required=False, allow_blank=True, max_length=2000)
    context = free_object(required=False, help_text="run context for the resumed run (default: the paused run's)")


class DecisionList(serializers.Serializer):
    decisions = Decision(many=True)


class Rule(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    tool = serializers.ListField(child=serializers.CharField())
    match = serializers.CharField(allow_null=True)
    action = serializers.CharField()
    agents = serializers.ListField(child=serializers.CharField())
    created_at = serializers.DateTimeField()


class RuleWrite(serializers.Serializer):
    name = serializers.CharField()
    tool = serializers.JSONField(help_text="a tool name or glob, or a list of them")
    match = serializers.CharField(required=False, allow_null=True, allow_blank=True, help_text="a regular expression over the arguments")
    action = serializers.CharField(help_text="allow, ask or deny")
    agents = serializers.ListField(child=serializers.CharField(), required=False, allow_null=True)


class OperatorRule(serializers.Serializer):
    name = serializers.CharField()
    source = serializers.CharField()
    action = serializers.CharField()
    tools = serializers.ListField(child=serializers.CharField())
    match = serializers.CharField(allow_null=True)


class Rules(serializers.Serializer):
    user_rules_enabled = serializers.BooleanField()
    rules = Rule(many=True)
    operator_rules = OperatorRule(many=True)


class BudgetCap(serializers.Serializer):
    period = serializers.CharField()
    kind = serializers.CharField()
    limit = serializers.FloatField()
    used = serializers.FloatField()
    fraction = serializers.FloatField()
    resets_at = serializers.CharField()


class BudgetStatus(serializers.Serializer):
    enabled = serializers.BooleanField()
    currency = serializers.CharField(required=False, allow_null=True)
    caps = BudgetCap(many=True)
    warn_at = serializers.FloatField()
    warning = serializers.BooleanField()
    exhausted = serializers.BooleanField()


class BudgetWrite(serializers.Serializer):
    daily_tokens = serializers.FloatField(required=False, allow_null=True)
    monthly_tokens = serializers.FloatField(required=False, allow_null=True)
    daily_cost = serializers.FloatField(required=False, allow_null=True)
    monthly_cost = serializers.FloatField(required=False, allow_null=True)
    currency = serializers.CharField(required=False)
    note = serializers.CharField(required=False, allow_blank=True, allow_null=True)


class Budget(serializers.Serializer):
    user_id = serializers.IntegerField(allow_null=True)
    daily_tokens = serializers.FloatField(allow_null=True)
    monthly_tokens = serializers.FloatField(allow_null=True)
    daily_cost = serializers.FloatField(allow_null=True)
    monthly_cost = serializers.FloatField(allow_null=True)
    currency = serializers.CharField(allow_blank=True)
    note = serializers.CharField(allow_blank=True)
