from django.urls import path

from apps.integrations import channel_views, channel_webhooks, views, webhooks

urlpatterns = [
    path("mcp/config", views.McpConfigView.as_view(), name="mcp-config"),
    path("mcp/status", views.McpStatusView.as_view(), name="mcp-status"),
    path("mcp/servers/<str:name>/test", views.McpServerTestView.as_view(), name="mcp-server-test"),
    path("channels/providers", channel_views.ChannelProvidersView.as_view(), name="channel-providers"),
    path("channels/connections", channel_views.ChannelConnectionsView.as_view(), name="channel-connections"),
    path("channels/connections/<str:connection_id>", channel_views.ChannelConnectionDetailView.as_view(),
         name="channel-connection-detail"),
    path("channels/<str:provider>/connect", channel_views.ChannelConnectView.as_view(), name="channel-connect"),
    # Platform callbacks (answer 404 unless configured): channel_webhooks.py
    path("channels/feishu/events", channel_webhooks.feishu_events, name="channel-feishu-events"),
    path("channels/wecom/callback", channel_webhooks.wecom_callback, name="channel-wecom-callback"),
]

# Platform webhooks: signed by the platform, 404 until their secret is configured.
urlpatterns += [
    path("channels/github/webhook", webhooks.github_webhook, name="channels-github-webhook"),
    path("channels/slack/events", webhooks.slack_events, name="channels-slack-events"),
]
