from django.apps import AppConfig


class GovernanceConfig(AppConfig):
    name = "apps.governance"
    label = "governance"
    verbose_name = "Governance"

    def ready(self) -> None:
        # The harness records approval decisions and reads user rules and budgets through its ports.
        from apps.governance import probes, signals  # noqa: F401  (cache invalidation receivers)
        from apps.governance.services import run_admit
        from apps.accounts.settings_hub import SettingsSection, register_section
        from apps.governance.stores import OrmApprovalStore, OrmBudgetStore, OrmSandboxAuditStore
        from apps.runs import lifecycle
        from harness.governance.budget import set_budget_store
        from harness.governance.stores import set_approval_store
        from harness.sandbox.audit import set_audit_store

        set_approval_store(OrmApprovalStore())
        set_budget_store(OrmBudgetStore())
        set_audit_store(OrmSandboxAuditStore())
        lifecycle.admission_checks.register(run_admit)
        register_section(SettingsSection("approvals", "Approvals", "Which tool calls ask you first, and what you decided before.",
                                         "list-checks", "/approvals/", order=75))
