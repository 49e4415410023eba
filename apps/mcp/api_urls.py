from django.urls import path

from apps.mcp import views

urlpatterns = [
    path("mcp/config", views.McpConfigView.as_view(), name="mcp-config"),
    path("mcp/status", views.McpStatusView.as_view(), name="mcp-status"),
    path("mcp/servers/<str:name>/test", views.McpServerTestView.as_view(), name="mcp-server-test"),
]
