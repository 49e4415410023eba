"""The embedded ``DeerFlowClient`` on this server's data: the documented way a script, a
notebook or the terminal console works on the same threads, files, memory, skills and agents
as the web server.

The harness client never imports Django. What the server keeps in its database reaches it
through the harness ports the apps implement and register at startup: memory through
``MemoryStore`` (``apps.memory.stores.DjangoMemoryStore``, passed here), skill choices and
custom agents through the stores ``apps.skills`` and ``apps.agents`` register in their
``ready()`` (which ``django.setup()`` runs). Files and checkpoints are not in the database:
the client opens the same ``CHECKPOINTER_URL`` and works under the same ``DEER_FLOW_HOME``.

    DJANGO_SETTINGS_MODULE=deerflow_site.settings python -c '
    import django; django.setup()
    from deerflow_site.embedded import server_client
    client = server_client(username="ana")
    print(client.list_uploads("a-thread-of-anas"))'
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model

from apps.memory.stores import DjangoMemoryStore
from harness.client import DeerFlowClient


def server_client(*, username: str | None = None, user: Any = None, **options: Any) -> DeerFlowClient:
    """A client acting as ``user`` (or the user called ``username``) on this server's data.
    ``options`` are the client's own (``model_name``, ``agent_name``, ``thinking_enabled``, …).
    Call after ``django.setup()``; from a thread, not inside an event loop (ORM calls block)."""
    if user is None:
        user = get_user_model().objects.get(username=username)
    options.setdefault("checkpointer", settings.CHECKPOINTER_URL)
    return DeerFlowClient(user_id=str(user.pk), memory_store=DjangoMemoryStore(), is_admin=bool(user.is_staff), **options)
