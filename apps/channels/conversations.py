"""Which thread a channel conversation talks to, and the run questions commands ask.

Sync ORM functions; the manager calls them through ``database_sync_to_async``.
"""

from __future__ import annotations

from django.db import transaction

from apps.agents.selectors import model_list
from apps.channels.base import ChatRef
from apps.channels.models import ChannelConnection, ChannelConversation
from apps.memory.selectors import memory_get_for_user
from apps.runs.selectors import thread_active_run, thread_latest_run
from apps.threads.selectors import thread_of_owner
from apps.threads.services import thread_create, thread_title_set


def _title(chat: ChatRef, display: str) -> str:
    return f"{chat.provider.capitalize()}: {display}"[:255] if display else ""


def _new_thread(*, owner, chat: ChatRef, chat_title: str, shared: bool):
    metadata = {"origin": "channel", "channel": chat.provider, "channel_chat": chat.chat}
    if chat.topic:
        metadata["channel_topic"] = chat.topic
    if shared:
        metadata["channel_shared"] = True
    thread = thread_create(owner=owner, metadata=metadata)
    title = _title(chat, chat_title)
    if title:
        thread_title_set(thread_id=thread.pk, title=title)
        thread.title = title
    return thread


def conversation_thread(*, connection: ChannelConnection, chat: ChatRef, chat_title: str = "", fresh: bool = False):
    """The thread for this user in this chat/topic: reused while it exists, created otherwise
    (and always when ``fresh``, for /new). The thread belongs to the connection's user."""
    conversation, _ = ChannelConversation.objects.get_or_create(
        user_id=connection.user_id, provider=chat.provider, workspace=chat.workspace, chat=chat.chat, topic=chat.topic,
        defaults={"connection": connection})
    thread = None
    if conversation.thread_id and not fresh:
        # Owner checked again: a thread handed to someone else is never reused.
        thread = thread_of_owner(thread_id=conversation.thread_id, owner_id=connection.user_id)
    if thread is None:
        thread = _new_thread(owner=connection.user, chat=chat, chat_title=chat_title, shared=False)
        ChannelConversation.objects.filter(pk=conversation.pk).update(thread=thread, connection=connection)
    elif conversation.connection_id != connection.pk:
        ChannelConversation.objects.filter(pk=conversation.pk).update(connection=connection)
    return thread


def _live_owner(conversation: ChannelConversation) -> bool:
    owner = conversation.connection
    return owner is not None and owner.revoked_at is None and owner.user_id == conversation.user_id


def shared_thread(*, connection: ChannelConnection, chat: ChatRef, chat_title: str = "", fresh: bool = False):
    """The group chat's one shared thread and the user it runs as (its owner).

    The member who first talks to the bot there owns it: the thread is theirs, and every
    connected member's turns run as them. When the owner's connection is revoked the next
    member to speak takes the conversation over on a new thread of their own, so nobody's
    turns keep running as someone who left."""
    with transaction.atomic():
        key = {"provider": chat.provider, "workspace": chat.workspace, "chat": chat.chat, "topic": chat.topic}
        conversation = (ChannelConversation.objects.select_for_update().select_related("connection", "user")
                        .filter(shared=True, **key).first())
        if conversation is not None and not _live_owner(conversation):
            conversation.delete()
            conversation = None
        if conversation is None:
            # The speaker's own per-user row for this chat (from before the operator chose
            # shared threads) becomes the shared one, keeping its thread.
            conversation, _ = ChannelConversation.objects.select_for_update().get_or_create(
                user_id=connection.user_id, **key, defaults={"connection": connection})
            ChannelConversation.objects.filter(pk=conversation.pk).update(shared=True, connection=connection)
            conversation.connection = connection
        owner = conversation.connection.user
        thread = None
        if conversation.thread_id and not fresh:
            thread = thread_of_owner(thread_id=conversation.thread_id, owner_id=conversation.user_id)
        if thread is None:
            thread = _new_thread(owner=owner, chat=chat, chat_title=chat_title, shared=True)
            ChannelConversation.objects.filter(pk=conversation.pk).update(thread=thread)
    return thread, owner


def current_thread(*, connection: ChannelConnection, chat: ChatRef, shared: bool = False):
    rows = ChannelConversation.objects.filter(provider=chat.provider, workspace=chat.workspace, chat=chat.chat, topic=chat.topic)
    conversation = rows.filter(shared=True).first() if shared else rows.filter(user_id=connection.user_id).first()
    if conversation is None or conversation.thread_id is None:
        return None
    return thread_of_owner(thread_id=conversation.thread_id, owner_id=conversation.user_id)


def active_run(*, thread):
    return thread_active_run(thread_id=thread.pk)


def latest_run(*, thread):
    return thread_latest_run(thread_id=thread.pk)


def run_status_text(*, thread) -> str:
    if thread is None:
        return "No conversation yet: send a message to start one."
    run = active_run(thread=thread) or latest_run(thread=thread)
    if run is None:
        return f"Conversation “{thread.title or thread.pk}”: no runs yet."
    since = run.created_at.strftime("%Y-%m-%d %H:%M UTC")
    line = f"Conversation “{thread.title or thread.pk}”: the latest run is {run.status} (started {since})."
    if run.error:
        line += f"\nError: {run.error[:300]}"
    return line


def stop_active_run(*, thread) -> bool:
    from apps.runs.services import run_cancel

    if thread is None:
        return False
    run = active_run(thread=thread)
    if run is None:
        return False
    run_cancel(run=run, action="interrupt")
    return True


def set_goal(*, thread, objective: str) -> dict:
    from apps.chat.actions.goals import goal_set

    return goal_set(thread=thread, objective=objective)["goal"]


def read_goal(*, thread) -> dict | None:
    from apps.chat.actions.goals import goal_get

    return goal_get(thread=thread)["goal"] if thread is not None else None


# -- /models and /memory ------------------------------------------------------------------

MEMORY_FACTS_SHOWN = 5


def models_text() -> str:
    """The configured models, as ``GET /api/models`` lists them; unusable ones say why."""

    lines = []
    for model in model_list():
        label = model["name"] if not model.get("display_name") or model["display_name"] == model["name"] else \
            f"{model['name']} ({model['display_name']})"
        if not model.get("selectable", True):
            label += f" — unavailable: {model.get('unavailable_reason') or 'blocked by its probe'}"
        lines.append(f"• {label}")
    return "Available models:\n" + "\n".join(lines) if lines else "No models configured."


def memory_text(*, user) -> str:
    """What the agent remembers about this user (their global memory), briefly."""

    doc = memory_get_for_user(user=user)
    facts = sorted(doc.facts, key=lambda f: -f.confidence)
    text = f"Memory contains {len(facts)} fact(s)" + (" (paused: nothing new is learned)." if doc.paused else ".")
    if facts:
        text += "\n" + "\n".join(f"• {f.content}" for f in facts[:MEMORY_FACTS_SHOWN])
        if len(facts) > MEMORY_FACTS_SHOWN:
            text += f"\n… and {len(facts) - MEMORY_FACTS_SHOWN} more on the Memory page."
    return text
