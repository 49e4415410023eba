"""Which thread a channel conversation talks to, and the run questions commands ask.

Sync ORM functions; the manager calls them through ``database_sync_to_async``.
"""

from __future__ import annotations

from apps.channels.base import ChatRef
from apps.channels.models import ChannelConnection, ChannelConversation
from apps.runs.selectors import thread_active_run, thread_latest_run
from apps.threads.selectors import thread_of_owner
from apps.threads.services import thread_create, thread_title_set


def _title(chat: ChatRef, display: str) -> str:
    return f"{chat.provider.capitalize()}: {display}"[:255] if display else ""


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
        metadata = {"origin": "channel", "channel": chat.provider, "channel_chat": chat.chat}
        if chat.topic:
            metadata["channel_topic"] = chat.topic
        thread = thread_create(owner=connection.user, metadata=metadata)
        title = _title(chat, chat_title)
        if title:
            thread_title_set(thread_id=thread.pk, title=title)
            thread.title = title
        ChannelConversation.objects.filter(pk=conversation.pk).update(thread=thread, connection=connection)
    elif conversation.connection_id != connection.pk:
        ChannelConversation.objects.filter(pk=conversation.pk).update(connection=connection)
    return thread


def current_thread(*, connection: ChannelConnection, chat: ChatRef):
    conversation = ChannelConversation.objects.filter(
        user_id=connection.user_id, provider=chat.provider, workspace=chat.workspace, chat=chat.chat, topic=chat.topic).first()
    if conversation is None or conversation.thread_id is None:
        return None
    return thread_of_owner(thread_id=conversation.thread_id, owner_id=connection.user_id)


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
