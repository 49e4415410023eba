"""The channel manager end to end: connect codes, strangers, commands, thread reuse, queued
follow-ups, privacy between users. Runs go through start_run() on the scripted agent."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async

from apps.channels.models import ChannelConnection, ChannelConversation
from apps.runs.models import Run
from harness.testing import call, tool_reply

pytestmark = [pytest.mark.django_db(transaction=True)]


def _runs() -> list[Run]:
    return list(Run.objects.select_related("thread").order_by("created_at"))


async def test_a_stranger_gets_the_connect_hint_and_starts_no_run(channel_kit, scripted_agent):
    scripted_agent("never used")
    await channel_kit.adapter.say("hello?", sender="stranger")
    await channel_kit.manager.idle()
    [reply] = channel_kit.adapter.final_texts()
    assert reply.startswith("Connect your account first") and "/connect" in reply
    assert await database_sync_to_async(_runs)() == []


async def test_connect_code_then_a_dm_is_answered_with_streamed_edits(channel_kit, scripted_agent, user):
    scripted_agent("The answer is forty-two.")
    await channel_kit.connect(user, sender="tg-7", sender_name="Alice T")
    assert channel_kit.adapter.final_texts()[-1].startswith("Connected to DeerFlow as alice")
    connection = await database_sync_to_async(ChannelConnection.objects.get)(external_id="tg-7")
    assert connection.user_id == user.pk and connection.display_name == "Alice T"

    await channel_kit.adapter.say("what is the answer?", sender="tg-7")
    await channel_kit.manager.idle()
    texts = channel_kit.adapter.final_texts()
    assert texts[-1] == "The answer is forty-two."
    edits = [o for o in channel_kit.adapter.outbound if o.kind == "edit"]
    assert edits, "the answer streams by editing the placeholder"
    [run] = await database_sync_to_async(_runs)()
    assert run.owner_id == user.pk and run.status == "success" and run.metadata["origin"] == "channel"
    assert run.thread.owner_id == user.pk


async def test_a_code_works_once_and_a_wrong_code_binds_nothing(channel_kit, user):
    from apps.channels.connections import connect_code_issue

    issued = await database_sync_to_async(connect_code_issue)(user=user, provider="fake", ttl_seconds=600)
    await channel_kit.adapter.say(f"/connect {issued.code}", sender="first")
    await channel_kit.adapter.say(f"/connect {issued.code}", sender="second")
    await channel_kit.adapter.say("/connect ZZZZZZZZ", sender="third")
    texts = channel_kit.adapter.final_texts()
    assert texts[0].startswith("Connected")
    assert texts[1].startswith("That code is not valid") and texts[2].startswith("That code is not valid")
    bound = await database_sync_to_async(lambda: list(ChannelConnection.objects.values_list("external_id", flat=True)))()
    assert bound == ["first"]


async def test_an_expired_code_and_a_superseded_code_are_refused(channel_kit, user):
    from datetime import timedelta

    from django.utils import timezone

    from apps.channels.connections import connect_code_issue
    from apps.channels.models import ConnectCode

    old = await database_sync_to_async(connect_code_issue)(user=user, provider="fake", ttl_seconds=600)
    new = await database_sync_to_async(connect_code_issue)(user=user, provider="fake", ttl_seconds=600)
    await channel_kit.adapter.say(f"/connect {old.code}", sender="a")
    assert channel_kit.adapter.final_texts()[-1].startswith("That code is not valid")
    await database_sync_to_async(ConnectCode.objects.filter(used_at__isnull=True).update)(expires_at=timezone.now() - timedelta(seconds=1))
    await channel_kit.adapter.say(f"/connect {new.code}", sender="a")
    assert channel_kit.adapter.final_texts()[-1].startswith("That code is not valid")


async def test_the_newest_bind_wins_and_a_revoked_connection_gets_the_hint(channel_kit, scripted_agent, user, other_user):
    scripted_agent("hi", loop=True)
    await channel_kit.connect(user, sender="shared")
    await channel_kit.connect(other_user, sender="shared")
    live = await database_sync_to_async(lambda: list(ChannelConnection.objects.filter(revoked_at__isnull=True).values_list("user_id", flat=True)))()
    assert live == [other_user.pk]

    from apps.channels.connections import connection_revoke

    connection = await database_sync_to_async(ChannelConnection.objects.get)(revoked_at__isnull=True)
    await database_sync_to_async(connection_revoke)(connection=connection)
    await channel_kit.adapter.say("still me?", sender="shared")
    await channel_kit.manager.idle()
    assert channel_kit.adapter.final_texts()[-1].startswith("Connect your account first")
    assert await database_sync_to_async(_runs)() == []


async def test_one_thread_per_chat_and_topic_and_new_starts_another(channel_kit, scripted_agent, user):
    scripted_agent("ok", loop=True)
    await channel_kit.connect(user, sender="u")
    for text, topic in (("one", ""), ("two", ""), ("in a topic", "t-9")):
        await channel_kit.adapter.say(text, sender="u", chat="room", direct=False, mentioned=True, topic=topic)
        await channel_kit.manager.idle()
    await channel_kit.adapter.say("/new", sender="u", chat="room", direct=False, mentioned=True)
    assert channel_kit.adapter.final_texts()[-1] == "Started a new conversation."
    await channel_kit.adapter.say("three", sender="u", chat="room", direct=False, mentioned=True)
    await channel_kit.manager.idle()
    threads = [r.thread_id for r in await database_sync_to_async(_runs)()]
    assert threads[0] == threads[1]
    assert len({threads[0], threads[2], threads[3]}) == 3


async def test_group_messages_not_addressed_to_the_bot_are_ignored(channel_kit, scripted_agent, user):
    scripted_agent("ok")
    await channel_kit.connect(user, sender="u")
    before = len(channel_kit.adapter.outbound)
    await channel_kit.adapter.say("chatting with friends", sender="u", direct=False, mentioned=False)
    await channel_kit.manager.idle()
    assert len(channel_kit.adapter.outbound) == before
    assert await database_sync_to_async(_runs)() == []


async def test_two_users_on_one_bot_never_share_a_thread(channel_kit, scripted_agent, user, other_user):
    scripted_agent("noted", loop=True)
    await channel_kit.connect(user, sender="alice-id")
    await channel_kit.connect(other_user, sender="bob-id")
    await channel_kit.adapter.say("my secret plan", sender="alice-id", chat="team", direct=False, mentioned=True)
    await channel_kit.manager.idle()
    await channel_kit.adapter.say("what did alice say?", sender="bob-id", chat="team", direct=False, mentioned=True)
    await channel_kit.manager.idle()
    runs = await database_sync_to_async(_runs)()
    assert [r.owner_id for r in runs] == [user.pk, other_user.pk]
    assert runs[0].thread_id != runs[1].thread_id
    assert runs[0].thread.owner_id == user.pk and runs[1].thread.owner_id == other_user.pk
    owners = await database_sync_to_async(lambda: sorted(ChannelConversation.objects.values_list("user_id", "thread__owner_id")))()
    assert owners == sorted([(user.pk, user.pk), (other_user.pk, other_user.pk)])
    # Bob's run saw only his own message: the model got one human message.
    from tests.support import agents

    last_request = agents.MODEL.requests[-1]
    humans = [m for m in last_request.messages if m.type == "human"]
    assert [h.content for h in humans] == ["what did alice say?"]


async def test_a_follow_up_during_a_run_is_queued_and_runs_next(channel_kit, gated_agent, user):
    # The first run holds at the gate until the follow-up is queued: with a 1.5 s tool a busy
    # machine sometimes finished it before the follow-up arrived, which then was no follow-up.
    set_script, gate = gated_agent
    set_script(tool_reply(call("wait_for_gate")), "first done", "second done")
    await channel_kit.connect(user, sender="u")
    await channel_kit.adapter.say("long task", sender="u")
    await channel_kit.adapter.say("and then this", sender="u")
    assert channel_kit.adapter.final_texts()[-1].startswith("Queued: it runs after the current one (1 waiting)")
    gate.set()
    await channel_kit.manager.idle()
    texts = channel_kit.adapter.final_texts()
    assert "first done" in texts and texts[-1] == "second done"
    runs = await database_sync_to_async(_runs)()
    assert [r.status for r in runs] == ["success", "success"] and runs[0].thread_id == runs[1].thread_id


async def test_the_queue_is_bounded(gated_agent, user):
    from tests.support.channels import ChannelKit, FakeAdapter, make_manager, make_settings

    manager, adapter = make_manager(FakeAdapter, make_settings("fake", queue_size=1))
    kit = ChannelKit(manager=manager, adapter=adapter)
    set_script, gate = gated_agent
    set_script(tool_reply(call("wait_for_gate")), "a", "b")
    try:
        await kit.connect(user, sender="u")
        await adapter.say("one", sender="u")
        await adapter.say("two", sender="u")
        await adapter.say("three", sender="u")
        assert adapter.final_texts()[-1].startswith("Still working, and 1 message(s) are already waiting")
        gate.set()
        await manager.idle()
        assert len(await database_sync_to_async(_runs)()) == 2
    finally:
        await manager.close()


async def test_status_stop_and_help(channel_kit, scripted_agent, user):
    scripted_agent(tool_reply(call("slow", seconds=30)), "never")
    await channel_kit.connect(user, sender="u")
    await channel_kit.adapter.say("/status", sender="u")
    assert channel_kit.adapter.final_texts()[-1].startswith("No conversation yet")
    await channel_kit.adapter.say("work for a while", sender="u")
    await channel_kit.adapter.say("queued one", sender="u")
    run = None
    while run is None or run.status != "running":
        import asyncio

        await asyncio.sleep(0.05)
        run = (await database_sync_to_async(_runs)() or [None])[0]
    await channel_kit.adapter.say("/status", sender="u")
    status = channel_kit.adapter.final_texts()[-1]
    assert "the latest run is running" in status and "1 message(s) queued" in status
    await channel_kit.adapter.say("/stop", sender="u")
    assert channel_kit.adapter.final_texts()[-1] == "Stopped the current run. Dropped 1 queued message(s)."
    await channel_kit.manager.idle()
    runs = await database_sync_to_async(_runs)()
    assert [r.status for r in runs] == ["interrupted"]
    await channel_kit.adapter.say("/help", sender="u")
    assert "/goal <objective>" in "\n".join(channel_kit.adapter.final_texts()[-2:])  # the fake platform splits long help


async def test_goal_sets_the_objective_and_starts_on_it(channel_kit, scripted_lead, user):
    scripted_lead("working on the goal", loop=True)
    await channel_kit.connect(user, sender="u")
    await channel_kit.adapter.say("/goal write the release notes", sender="u")
    await channel_kit.manager.idle()
    texts = channel_kit.adapter.final_texts()
    assert "Goal set: write the release notes" in texts
    [run, *_] = await database_sync_to_async(_runs)()
    assert run.kwargs["input"]["messages"][0]["content"] == "write the release notes"
    await channel_kit.adapter.say("/goal", sender="u")
    assert channel_kit.adapter.final_texts()[-1].startswith("Current goal: write the release notes")


async def test_files_land_in_the_thread_uploads_and_oversize_ones_are_refused(channel_kit, scripted_agent, user):
    from apps.threads.uploads import uploads_dir
    from tests.support.channels import inbound_file

    scripted_agent("got it", loop=True)
    await channel_kit.connect(user, sender="u")
    await channel_kit.adapter.say("see attached", sender="u",
                                  files=(inbound_file("notes.txt", b"remember the milk"), inbound_file("big.bin", b"x", size=5000)))
    await channel_kit.manager.idle()
    texts = channel_kit.adapter.final_texts()
    assert any(t.startswith("“big.bin” is 5000 bytes; files can be at most 1000 bytes") for t in texts)
    [run] = await database_sync_to_async(_runs)()
    directory = await database_sync_to_async(uploads_dir)(run.thread)
    assert (directory / "notes.txt").read_bytes() == b"remember the milk"
    assert not (directory / "big.bin").exists()
    assert "Uploaded: notes.txt" in run.kwargs["input"]["messages"][0]["content"]


async def test_a_code_shown_in_a_group_is_used_up_and_binds_no_one(channel_kit, user):
    from apps.channels.connections import connect_code_issue

    issued = await database_sync_to_async(connect_code_issue)(user=user, provider="fake", ttl_seconds=600)
    await channel_kit.adapter.say(f"/connect {issued.code}", sender="me", direct=False, mentioned=True)
    assert channel_kit.adapter.final_texts()[-1].startswith("Send connect codes only in a private chat")
    await channel_kit.adapter.say(f"/connect {issued.code}", sender="onlooker")  # copied from the group, sent privately
    assert channel_kit.adapter.final_texts()[-1].startswith("That code is not valid")
    assert not await database_sync_to_async(ChannelConnection.objects.exists)()
