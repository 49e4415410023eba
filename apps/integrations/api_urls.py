from django.urls import path

from apps.integrations import views, webhooks

urlpatterns = [
    path("mcp/config", views.McpConfigView.as_view(), name="mcp-config"),
    path("mcp/status", views.McpStatusView.as_view(), name="mcp-status"),
    path("mcp/servers/<str:name>/test", views.McpServerTestView.as_view(), name="mcp-server-test"),
]

# Platform webhooks: signed by the platform, 404 until their secret is configured.
urlpatterns += [
    path("channels/github/webhook", webhooks.github_webhook, name="channels-github-webhook"),
    path("channels/slack/events", webhooks.slack_events, name="channels-slack-events"),
]
