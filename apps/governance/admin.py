from django.contrib import admin

from apps.governance.models import ApprovalDecision, ApprovalRule, Budget, ModelProbe, SandboxAuditEntry


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


@admin.register(SandboxAuditEntry)
class SandboxAuditEntryAdmin(admin.ModelAdmin):
    """Every shell and file operation of the agents: evidence, so read-only; rows age out after
    sandbox_audit.retention_days."""

    list_display = ["created_at", "user", "tool", "access", "outcome", "preview", "thread_id"]
    list_filter = ["tool", "access", "outcome"]
    search_fields = ["thread_id", "run_id", "tool", "digest", "preview", "user__username"]
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


@admin.register(ModelProbe)
class ModelProbeAdmin(admin.ModelAdmin):
    list_display = ["model_name", "status", "failed_steps", "blocks_agent", "allow_despite_failure", "probed_at"]
    list_filter = ["status", "blocks_agent", "allow_despite_failure"]
    readonly_fields = ["model_name", "status", "failed_steps", "steps", "blocks_agent", "probed_at"]
    fields = ["model_name", "status", "failed_steps", "blocks_agent", "allow_despite_failure", "probed_at", "steps"]
    actions = ["probe_again", "probe_all_configured"]

    def has_add_permission(self, request) -> bool:
        return False

    @admin.action(description="Probe the selected models again")
    def probe_again(self, request, queryset):
        from apps.governance.probes import models_probe

        rows = models_probe(names=list(queryset.values_list("model_name", flat=True)))
        self.message_user(request, "; ".join(f"{r.model_name}: {r.status}" for r in rows))

    @admin.action(description="Probe every configured model")
    def probe_all_configured(self, request, queryset):
        self._probe_all(request)

    def _probe_all(self, request) -> None:
        from apps.governance.probes import models_probe

        rows = models_probe()
        self.message_user(request, "; ".join(f"{r.model_name}: {r.status}" for r in rows) or "No models are configured.")

    # The first probe needs no selection (there are no rows yet): a button on the list.
    change_list_template = "admin/governance/modelprobe/change_list.html"

    def get_urls(self):
        from django.urls import path

        return [path("probe-all/", self.admin_site.admin_view(self.probe_all_view), name="governance_modelprobe_probe_all"), *super().get_urls()]

    def probe_all_view(self, request):
        from django.http import HttpResponseNotAllowed
        from django.shortcuts import redirect

        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        if not self.has_change_permission(request):
            from django.core.exceptions import PermissionDenied

            raise PermissionDenied
        self._probe_all(request)
        return redirect("admin:governance_modelprobe_changelist")
