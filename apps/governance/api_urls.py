from django.urls import path

from apps.governance import views

urlpatterns = [
    path("threads/<str:thread_id>/approvals", views.ThreadApprovalView.as_view(), name="thread-approvals"),
    path("approvals/decisions", views.DecisionListView.as_view(), name="approval-decisions"),
    path("approvals/rules", views.RuleListView.as_view(), name="approval-rules"),
    path("approvals/rules/<int:rule_id>", views.RuleDetailView.as_view(), name="approval-rule-detail"),
    path("budget", views.MyBudgetView.as_view(), name="my-budget"),
    path("budgets/<str:target>", views.BudgetAdminView.as_view(), name="budget-admin"),
]
