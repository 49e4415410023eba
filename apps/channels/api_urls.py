from django.urls import path

from apps.channels import callbacks, views, webhooks

urlpatterns = [
    path("channels/providers", views.ChannelProvidersView.as_view(), name="channel-providers"),
    path("channels/connections", views.ChannelConnectionsView.as_view(), name="channel-connections"),
    path("channels/connections/<str:connection_id>", views.ChannelConnectionDetailView.as_view(),
         name="channel-connection-detail"),
    path("channels/<str:provider>/connect", views.ChannelConnectView.as_view(), name="channel-connect"),
    # Platform callbacks (answer 404 unless configured): callbacks.py
    path("channels/feishu/events", callbacks.feishu_events, name="channel-feishu-events"),
    path("channels/wecom/callback", callbacks.wecom_callback, name="channel-wecom-callback"),
]

# Platform webhooks: signed by the platform, 404 until their secret is configured.
urlpatterns += [
    path("channels/github/webhook", webhooks.github_webhook, name="channels-github-webhook"),
    path("channels/slack/events", webhooks.slack_events, name="channels-slack-events"),
    # Slack's Interactivity Request URL (button presses); bolt takes both on either route.
    path("channels/slack/interactions", webhooks.slack_events, name="channels-slack-interactions"),
]
