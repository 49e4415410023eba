"""``/api/health`` (and its probes ``live`` and ``ready``), ``/api/features`` and ``/api/console/*``."""
from django.urls import path

from apps.console import api_views
from apps.console.views import FeaturesView, HealthView, LiveView, ReadyView

urlpatterns = [
    path("health", HealthView.as_view(), name="api-health"),
    # Probes for load balancers and orchestrators (deploy/, docs/deployment.md).
    path("health/live", LiveView.as_view(), name="api-health-live"),
    path("health/ready", ReadyView.as_view(), name="api-health-ready"),
    path("features", FeaturesView.as_view(), name="api-features"),
    path("console/stats", api_views.ConsoleStatsView.as_view(), name="console-stats"),
    path("console/runs", api_views.ConsoleRunsView.as_view(), name="console-runs"),
    path("console/runs/export", api_views.ConsoleRunsExportView.as_view(), name="console-runs-export"),
    path("console/runs/<str:run_id>/cancel", api_views.ConsoleRunCancelView.as_view(), name="console-run-cancel"),
    path("console/usage", api_views.ConsoleUsageView.as_view(), name="console-usage"),
    path("console/usage/export", api_views.ConsoleUsageExportView.as_view(), name="console-usage-export"),
    path("console/feedback", api_views.ConsoleFeedbackView.as_view(), name="console-feedback"),
    path("console/feedback/export", api_views.ConsoleFeedbackExportView.as_view(), name="console-feedback-export"),
    path("console/overview", api_views.ConsoleOverviewView.as_view(), name="console-overview"),
]
