from django.urls import path

from apps.integrations import channel_webhooks, views

urlpatterns = [
    path("mcp/config", views.McpConfigView.as_view(), name="mcp-config"),
    path("mcp/status", views.McpStatusView.as_view(), name="mcp-status"),
    path("mcp/servers/<str:name>/test", views.McpServerTestView.as_view(), name="mcp-server-test"),
    # Platform callbacks (answer 404 unless configured): channel_webhooks.py
    path("channels/feishu/events", channel_webhooks.feishu_events, name="channel-feishu-events"),
    path("channels/wecom/callback", channel_webhooks.wecom_callback, name="channel-wecom-callback"),
]
