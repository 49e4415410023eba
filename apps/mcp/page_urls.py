from django.urls import path

from apps.mcp import pages

urlpatterns = [
    path("mcp", pages.mcp_settings_page, name="mcp-settings"),
]
