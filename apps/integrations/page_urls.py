from django.urls import path

from apps.integrations import pages

urlpatterns = [
    path("mcp", pages.mcp_settings_page, name="mcp-settings"),
    path("connections", pages.connections_page, name="channel-connections-page"),
]
