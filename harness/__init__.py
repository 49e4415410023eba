"""DeerFlow harness: the agent framework (agent, tools, sandbox, skills, memory, MCP).

It never imports Django, DRF, Channels, Celery or anything under ``apps/``; the server
adapts to it through small store protocols, and ``harness.client.DeerFlowClient`` runs it
in-process without a server.
"""
