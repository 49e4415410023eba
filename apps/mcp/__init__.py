"""MCP server settings: the admin-only ``/api/mcp/*`` API and the ``/settings/mcp`` page.

An app of its own because it shares nothing with the IM channels it used to sit beside: it
owns no models, only ``extensions_config.json`` (through ``harness.config``), and the programs
it configures start on the host, which is why only administrators reach it.
"""
