"""IM channels: chat platforms (Telegram, Slack, Feishu, …) and GitHub as ways to talk to the agent.

One app owns the channel models (connections, conversations, connect codes, worker status,
the scheduled-delivery outbox) and everything that reads or writes them. Its app label stays
``integrations`` (see ``apps.py``), so the database and the admin do not notice the move.
"""
