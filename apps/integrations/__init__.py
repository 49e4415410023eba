"""IM channels, channel connections, GitHub webhooks and the MCP config API."""
