"""Wire types of the MCP settings API (staff, session only). Each server's settings are
DeerFlow's extensions_config.json entry (secrets masked), kept as that file has them."""

from __future__ import annotations

from rest_framework import serializers

from apps.threads.api_types import free_object


class McpConfig(serializers.Serializer):
    mcp_servers = serializers.DictField(child=free_object(), help_text="server name → its extensions_config.json entry")


class McpToggle(serializers.Serializer):
    server_name = serializers.CharField()
    enabled = serializers.BooleanField()


class McpServerStatus(serializers.Serializer):
    name = serializers.CharField()
    type = serializers.CharField()
    enabled = serializers.BooleanField()
    status = serializers.CharField(help_text="disabled, not_loaded, connecting, connected, failed, ...")
    last_error = serializers.CharField(allow_null=True)
    error_at = serializers.CharField(allow_null=True)
    connected_at = serializers.CharField(allow_null=True)
    tools = serializers.ListField(child=serializers.JSONField())


class McpStatus(serializers.Serializer):
    servers = McpServerStatus(many=True)


