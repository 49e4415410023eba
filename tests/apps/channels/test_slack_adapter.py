"""The Slack adapter against a local Slack (tests/support/fake_slack.py): the real slack-bolt
Socket Mode client opens the websocket, acks envelopes and calls the Web API over HTTP."""

from __future__ import annotations

import asyncio
import os

import pytest

from apps.channels.base import ChatRef, SentMessage
from apps.channels.registry import get_adapter
from apps.channels.adapters.slack import SlackAdapter
from tests.support.fake_slack import APP_TOKEN, BOT_TOKEN, BOT_USER, TEAM, FakeSlack


@pytest.fixture
def fake_slack():
    fake = FakeSlack().start()
    yield fake
    fake.stop()


def settings_for(fake: FakeSlack, **extra):
    return {"bot_token": BOT_TOKEN, "app_token": APP_TOKEN, "api_base_url": fake.api_url, "ping_interval": 0.2, **extra}


@pytest.fixture
async def connected(fake_slack):
    inbox: list = []

    async def sink(message):
        inbox.append(message)

    adapter = SlackAdapter(settings_for(fake_slack), sink)
    await adapter.start()
    yield adapter, inbox
    await adapter.stop()


async def deliver(fake: FakeSlack, event: dict) -> None:
    await asyncio.to_thread(fake.deliver, event)


async def until(predicate, what: str):
    for _ in range(1000):
        if predicate():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


def test_registered_and_missing_settings_named():
    assert get_adapter("slack") is SlackAdapter
    env = {k: os.environ.pop(k) for k in ("SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET") if k in os.environ}
    try:
        assert SlackAdapter.missing_settings({}) == ["bot_token (SLACK_BOT_TOKEN)",
                                                     "app_token (SLACK_APP_TOKEN, an xapp- token with connections:write)"]
        assert SlackAdapter.missing_settings({"bot_token": "x", "mode": "events"}) == [
            "signing_secret (SLACK_SIGNING_SECRET, needed for mode: events)"]
        assert SlackAdapter.missing_settings({"bot_token": "x", "app_token": "y"}) == []
    finally:
        os.environ.update(env)


async def test_direct_message_arrives_over_socket_mode(fake_slack, connected):
    adapter, inbox = connected
    assert adapter.bot_user_id == BOT_USER  # from auth.test
    ts = fake_slack.new_ts()
    await deliver(fake_slack, {"type": "message", "channel_type": "im", "channel": "D0ALICE", "user": "U0ALICE",
                               "text": "what is the weather?", "ts": ts})
    await until(lambda: inbox, "the DM")
    [message] = inbox
    assert message.chat == ChatRef(provider="slack", workspace=TEAM, chat="D0ALICE", topic="")
    assert (message.sender_id, message.text, message.message_id) == ("U0ALICE", "what is the weather?", ts)
    assert message.is_direct and message.mentioned


async def test_channel_mention_is_topic_of_its_own_thread_and_thread_replies_continue_it(fake_slack, connected):
    adapter, inbox = connected
    ts = fake_slack.new_ts()
    await deliver(fake_slack, {"type": "app_mention", "channel": "C0GENERAL", "user": "U0ALICE",
                               "text": f"<@{BOT_USER}> summarise <@U0BOB>'s notes", "ts": ts})
    later = fake_slack.new_ts()
    await deliver(fake_slack, {"type": "app_mention", "channel": "C0GENERAL", "user": "U0ALICE",
                               "text": f"<@{BOT_USER}> and shorter", "ts": later, "thread_ts": ts})
    await until(lambda: len(inbox) == 2, "both mentions")
    first, second = inbox
    assert first.chat.topic == ts and second.chat.topic == ts  # one Slack thread, one conversation
    assert first.text == "summarise <@U0BOB>'s notes"  # only the bot's own mention is removed
    assert not first.is_direct and first.mentioned


async def test_ignored_events(fake_slack, connected):
    adapter, inbox = connected
    # channel chatter without a mention, the bot's own post, an edit, and a duplicate DM delivery
    await deliver(fake_slack, {"type": "message", "channel_type": "channel", "channel": "C0GENERAL", "user": "U0ALICE",
                               "text": "lunch?", "ts": fake_slack.new_ts()})
    await deliver(fake_slack, {"type": "message", "channel_type": "im", "channel": "D0ALICE", "user": BOT_USER,
                               "bot_id": "B0BOT", "text": "my own answer", "ts": fake_slack.new_ts()})
    await deliver(fake_slack, {"type": "message", "channel_type": "im", "channel": "D0ALICE", "subtype": "message_changed",
                               "ts": fake_slack.new_ts(), "message": {"text": "edited"}})
    ts = fake_slack.new_ts()
    dm = {"type": "message", "channel_type": "im", "channel": "D0ALICE", "user": "U0ALICE", "text": "once", "ts": ts}
    await deliver(fake_slack, dm)
    await deliver(fake_slack, {**dm, "type": "app_mention", "text": f"<@{BOT_USER}> once"})
    await until(lambda: inbox, "the DM")
    await asyncio.sleep(0.2)  # the duplicate was acked already: give a wrong second delivery its chance
    assert [m.text for m in inbox] == ["once"]


async def test_malformed_event_is_acked_and_dropped(fake_slack, connected):
    adapter, inbox = connected
    await deliver(fake_slack, {"type": "app_mention", "channel": ["not", "a", "string"], "user": None})
    ts = fake_slack.new_ts()
    await deliver(fake_slack, {"type": "message", "channel_type": "im", "channel": "D0ALICE", "user": "U0ALICE",
                               "text": "still alive", "ts": ts})
    await until(lambda: inbox, "the next message")
    assert [m.text for m in inbox] == ["still alive"]


async def test_replies_go_to_the_triggering_thread_and_stream_by_chat_update(fake_slack, connected):
    adapter, _ = connected
    chat = ChatRef(provider="slack", workspace=TEAM, chat="C0GENERAL", topic="1700000000.000100")
    sent = await adapter.send_text(chat, "Working on it…")
    await adapter.edit_text(sent, "The answer is 42.")
    [post] = fake_slack.calls_to("chat.postMessage")
    assert post.args["thread_ts"] == "1700000000.000100" and post.args["channel"] == "C0GENERAL"
    [update] = fake_slack.calls_to("chat.update")
    assert update.args == {"channel": "C0GENERAL", "ts": sent.message_id, "text": "The answer is 42."}
    dm = await adapter.send_text(ChatRef(provider="slack", workspace=TEAM, chat="D0ALICE"), "hi")
    assert "thread_ts" not in fake_slack.calls_to("chat.postMessage")[-1].args  # a plain DM stays top level
    assert isinstance(dm, SentMessage)


async def test_files_in_with_the_bot_token_and_out_through_upload_v2(fake_slack, connected, platform_config):
    adapter, inbox = connected
    shared = fake_slack.host_file("notes.txt", b"line one\nline two\n")
    await deliver(fake_slack, {"type": "message", "channel_type": "im", "channel": "D0ALICE", "user": "U0ALICE",
                               "subtype": "file_share", "text": "read this", "ts": fake_slack.new_ts(), "files": [shared]})
    await until(lambda: inbox, "the file message")
    [file] = inbox[0].files
    assert (file.name, file.size, file.content_type) == ("notes.txt", 18, "text/plain")
    assert await file.read() == b"line one\nline two\n"
    assert fake_slack.download_auth == [f"Bearer {BOT_TOKEN}"]

    chat = ChatRef(provider="slack", workspace=TEAM, chat="C0GENERAL", topic="1700000000.000100")
    sent = await adapter.send_file(chat, "report.md", b"# Report\n")
    [complete] = fake_slack.calls_to("files.completeUploadExternal")
    assert fake_slack.uploads[sent.message_id] == b"# Report\n"
    assert complete.args["channel_id"] == "C0GENERAL" and complete.args["thread_ts"] == "1700000000.000100"


async def test_file_links_to_other_hosts_never_get_the_token(fake_slack, connected, platform_config):
    adapter, _ = connected
    with pytest.raises(ValueError, match="refusing to send the bot token to evil.example"):
        await adapter.download("https://evil.example/files-pri/T-F1/x.txt")
    assert fake_slack.download_auth == []


async def test_outage_on_connect_is_retried(fake_slack):
    fake_slack.fail_connections_open = 2
    inbox: list = []

    async def sink(message):
        inbox.append(message)

    adapter = SlackAdapter(settings_for(fake_slack), sink)
    await adapter.start()
    try:
        assert fake_slack.connections_opened == 3
        await deliver(fake_slack, {"type": "message", "channel_type": "im", "channel": "D0ALICE", "user": "U0ALICE",
                                   "text": "after the outage", "ts": fake_slack.new_ts()})
        await until(lambda: inbox, "the message after reconnecting")
        # Slack drops the socket: the client opens a new one and keeps receiving.
        await asyncio.to_thread(fake_slack.drop_sockets)
        await until(lambda: fake_slack.connections_opened >= 4, "the reconnect")
        await deliver(fake_slack, {"type": "message", "channel_type": "im", "channel": "D0ALICE", "user": "U0ALICE",
                                   "text": "after the drop", "ts": fake_slack.new_ts()})
        await until(lambda: len(inbox) == 2, "the message after the drop")
    finally:
        await adapter.stop()
