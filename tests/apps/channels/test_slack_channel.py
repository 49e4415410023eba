"""Slack end to end: the real adapter on a local Slack (Socket Mode + Web API), the channel
manager wired as the worker wires it, runs through start_run() on the scripted agent."""

from __future__ import annotations

import asyncio

import pytest
from channels.db import database_sync_to_async

from apps.channels.adapters.slack import SlackAdapter
from apps.channels.models import ChannelConnection
from apps.runs.models import Run
from harness.testing import call, tool_reply
from tests.support.channels import make_manager
from tests.support.fake_slack import APP_TOKEN, BOT_TOKEN, BOT_USER, TEAM, FakeSlack

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture
def fake_slack():
    fake = FakeSlack().start()
    yield fake
    fake.stop()


@pytest.fixture
async def slack(fake_slack, platform_config):
    manager, adapter = make_manager(SlackAdapter, adapter_settings={
        "bot_token": BOT_TOKEN, "app_token": APP_TOKEN, "api_base_url": fake_slack.api_url, "ping_interval": 0.2,
        "edit_interval": 0})
    await adapter.start()
    yield manager, adapter
    await manager.close()
    await adapter.stop()


def _runs() -> list[Run]:
    return list(Run.objects.select_related("thread").order_by("created_at"))


async def dm(fake: FakeSlack, text: str, *, user: str = "U0ALICE", channel: str = "D0ALICE", **extra) -> str:
    ts = fake.new_ts()
    await asyncio.to_thread(fake.deliver, {"type": "message", "channel_type": "im", "channel": channel, "user": user,
                                           "text": text, "ts": ts, **extra})
    return ts


async def mention(fake: FakeSlack, text: str, *, user: str = "U0ALICE", channel: str = "C0GENERAL", thread_ts=None) -> str:
    ts = fake.new_ts()
    event = {"type": "app_mention", "channel": channel, "user": user, "text": f"<@{BOT_USER}> {text}", "ts": ts}
    if thread_ts:
        event["thread_ts"] = thread_ts
    await asyncio.to_thread(fake.deliver, event)
    return ts


async def settle(manager, fake: FakeSlack, posts: int) -> None:
    """The turns are done once the manager is idle; the posts have all been made by then."""
    for _ in range(500):
        await manager.idle()
        if len(fake.calls_to("chat.postMessage")) >= posts:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"expected {posts} posts, got {[c.args for c in fake.calls_to('chat.postMessage')]}")


async def connect(manager, fake: FakeSlack, user, *, slack_user: str = "U0ALICE", channel: str = "D0ALICE") -> None:
    from apps.channels.connections import connect_code_issue

    issued = await database_sync_to_async(connect_code_issue)(user=user, provider="slack", ttl_seconds=600)
    posts = len(fake.calls_to("chat.postMessage"))
    await asyncio.to_thread(fake.deliver_command, f"connect {issued.code}", user=slack_user, channel=channel)
    await settle(manager, fake, posts + 1)
    assert fake.calls_to("chat.postMessage")[-1].args["text"].startswith("Connected to DeerFlow as")


async def test_an_unknown_sender_gets_the_connect_hint(slack, fake_slack, scripted_agent):
    manager, _ = slack
    scripted_agent("never used")
    await dm(fake_slack, "hello?", user="U0STRANGER", channel="D0STRANGER")
    await settle(manager, fake_slack, 1)
    [hint] = fake_slack.calls_to("chat.postMessage")
    assert hint.args["channel"] == "D0STRANGER" and hint.args["text"].startswith("Connect your account first")
    assert await database_sync_to_async(_runs)() == []


async def test_connect_with_the_slash_command_then_a_dm_is_answered_with_streamed_updates(slack, fake_slack, scripted_agent, user):
    manager, _ = slack
    scripted_agent("Forty-two, according to the guide; the question is harder to find.")
    await connect(manager, fake_slack, user)
    connection = await database_sync_to_async(ChannelConnection.objects.get)(provider="slack")
    assert (connection.user_id, connection.external_id, connection.workspace) == (user.pk, "U0ALICE", TEAM)

    await dm(fake_slack, "what is the answer?")
    await settle(manager, fake_slack, 2)
    placeholder = fake_slack.calls_to("chat.postMessage")[-1]
    assert placeholder.args["channel"] == "D0ALICE" and placeholder.args["text"] == "Working on it…"
    updates = [c.args["text"] for c in fake_slack.calls_to("chat.update")]
    assert updates[-1] == "Forty-two, according to the guide; the question is harder to find."
    assert len(updates) >= 2 and all(updates[-1].startswith(u) for u in updates), "the answer grows in place"
    [run] = await database_sync_to_async(_runs)()
    assert run.owner_id == user.pk and run.status == "success" and run.kwargs["input"]["messages"][0]["content"] == "what is the answer?"


async def test_a_channel_mention_is_answered_in_its_thread_and_the_thread_continues(slack, fake_slack, scripted_agent, user):
    manager, _ = slack
    scripted_agent("first answer", "second answer", "other thread")
    await connect(manager, fake_slack, user)
    root = await mention(fake_slack, "start here")
    await settle(manager, fake_slack, 2)
    await mention(fake_slack, "and continue", thread_ts=root)
    await settle(manager, fake_slack, 3)
    await mention(fake_slack, "a new topic")
    await settle(manager, fake_slack, 4)
    posts = fake_slack.calls_to("chat.postMessage")[1:]
    assert [p.args.get("thread_ts") for p in posts[:2]] == [root, root]
    assert posts[2].args["thread_ts"] not in (None, root)
    runs = await database_sync_to_async(_runs)()
    assert runs[0].thread_id == runs[1].thread_id != runs[2].thread_id
    assert [c.args["text"] for c in fake_slack.calls_to("chat.update")][-1] == "other thread"


async def test_mention_form_of_a_command_works_in_a_channel(slack, fake_slack, scripted_agent, user):
    manager, _ = slack
    await connect(manager, fake_slack, user)
    await mention(fake_slack, "/help")
    await settle(manager, fake_slack, 2)
    assert fake_slack.calls_to("chat.postMessage")[-1].args["text"].startswith("Commands:")


async def test_two_slack_users_never_share_a_thread(slack, fake_slack, scripted_agent, user, other_user):
    manager, _ = slack
    scripted_agent("ok", loop=True)
    await connect(manager, fake_slack, user, slack_user="U0ALICE", channel="D0ALICE")
    await connect(manager, fake_slack, other_user, slack_user="U0BOB", channel="D0BOB")
    root = await mention(fake_slack, "from alice", user="U0ALICE")
    await settle(manager, fake_slack, 3)
    await mention(fake_slack, "from bob in the same slack thread", user="U0BOB", thread_ts=root)
    await settle(manager, fake_slack, 4)
    first, second = await database_sync_to_async(_runs)()
    assert (first.owner_id, second.owner_id) == (user.pk, other_user.pk) and first.thread_id != second.thread_id


async def test_files_in_land_in_the_uploads_and_presented_files_go_back_by_upload_v2(fake_slack, platform_config, scripted_lead, user):
    from apps.threads.uploads import uploads_dir

    manager, adapter = make_manager(SlackAdapter, adapter_settings={
        "bot_token": BOT_TOKEN, "app_token": APP_TOKEN, "api_base_url": fake_slack.api_url, "ping_interval": 0.2})
    await adapter.start()
    try:
        scripted_lead(
            tool_reply(call("write_file", description="notes", path="/mnt/user-data/outputs/summary.md", content="# Summary\n")),
            tool_reply(call("present_files", filepaths=["/mnt/user-data/outputs/summary.md"])),
            "Here is the summary.",
        )
        await connect(manager, fake_slack, user)
        shared = fake_slack.host_file("notes.txt", b"remember the milk")
        await dm(fake_slack, "summarise this", subtype="file_share", files=[shared])
        await settle(manager, fake_slack, 2)
        [run] = await database_sync_to_async(_runs)()
        assert run.status == "success", run.error
        directory = await database_sync_to_async(uploads_dir)(run.thread)
        assert (directory / "notes.txt").read_bytes() == b"remember the milk"
        assert "Uploaded: notes.txt" in run.kwargs["input"]["messages"][0]["content"]
        assert fake_slack.download_auth == [f"Bearer {BOT_TOKEN}"]
        [complete] = fake_slack.calls_to("files.completeUploadExternal")
        assert complete.args["channel_id"] == "D0ALICE"
        assert list(fake_slack.uploads.values()) == [b"# Summary\n"]
    finally:
        await manager.close()
        await adapter.stop()


async def test_a_slash_command_typed_in_a_channel_is_answered_in_private(slack, fake_slack, scripted_agent, user):
    manager, _ = slack
    await connect(manager, fake_slack, user, channel="C0GENERAL")  # the code never shows in the channel
    reply = fake_slack.calls_to("chat.postMessage")[-1]
    assert reply.args["channel"] == "U0ALICE"  # the DM with the bot, not #general
    connection = await database_sync_to_async(ChannelConnection.objects.get)(provider="slack")
    assert connection.user_id == user.pk


async def test_a_connect_code_mentioned_in_a_channel_is_spent_and_binds_nobody(slack, fake_slack, user):
    from apps.channels.connections import connect_code_issue

    manager, _ = slack
    issued = await database_sync_to_async(connect_code_issue)(user=user, provider="slack", ttl_seconds=600)
    await mention(fake_slack, f"/connect {issued.code}")
    await settle(manager, fake_slack, 1)
    assert fake_slack.calls_to("chat.postMessage")[-1].args["text"].startswith("Send connect codes only in a private chat")
    assert not await database_sync_to_async(ChannelConnection.objects.exists)()
