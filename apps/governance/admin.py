from django.contrib import admin

from apps.governance.models import ApprovalDecision, ApprovalRule, Budget


@admin.register(ApprovalDecision)
class ApprovalDecisionAdmin(admin.ModelAdmin):
    """The audit is evidence: readable, never edited."""

    list_display = ["created_at", "user", "tool", "rule_name", "rule_source", "decision", "decided_by", "thread_id"]
    list_filter = ["decision", "rule_source", "tool"]
    search_fields = ["thread_id", "run_id", "tool", "rule_name", "user__username", "args_digest"]
    list_select_related = ["user"]
    date_hierarchy = "created_at"

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(ApprovalRule)
class ApprovalRuleAdmin(admin.ModelAdmin):
    list_display = ["name", "owner", "tool", "match", "action", "position"]
    list_filter = ["action"]
    search_fields = ["name", "tool", "owner__username"]
    list_select_related = ["owner"]


@admin.register(Budget)
class BudgetAdmin(admin.ModelAdmin):
    list_display = ["__str__", "daily_tokens", "monthly_tokens", "daily_cost", "monthly_cost", "currency", "updated_at"]
    search_fields = ["user__username", "note"]
    list_select_related = ["user"]
    autocomplete_fields = ["user"]
