"""Shared group threads (``channels.session.group_chats: shared``), ``allowed_users``, the
``channels.session`` run defaults and the /models and /memory commands, through the manager
with real runs on the scripted agent."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async

from apps.channels.config import ChannelsSettings, session_for
from apps.channels.models import ChannelConnection, ChannelConversation
from apps.runs.models import Run
from tests.support.channels import ChannelKit, FakeAdapter, make_manager

pytestmark = [pytest.mark.django_db(transaction=True)]


def _kit(**provider: object) -> ChannelKit:
    session = provider.pop("session_top", {})
    settings = ChannelsSettings(enabled=True, queue_size=5, connect_code_ttl=600, public_url="",
                                providers={"fake": {"enabled": True, **provider}}, session=session)
    manager, adapter = make_manager(FakeAdapter, settings)
    return ChannelKit(manager=manager, adapter=adapter)


@pytest.fixture
async def kits():
    made: list[ChannelKit] = []

    def make(**provider):
        made.append(_kit(**provider))
        return made[-1]

    yield make
    for kit in made:
        await kit.manager.close()


def _runs() -> list[Run]:
    return list(Run.objects.select_related("thread").order_by("created_at"))


async def test_two_members_share_one_group_thread_and_each_is_named(kits, scripted_agent, user, other_user):
    model = scripted_agent("Hi Ann.", "Hi Bob, Ann asked first.")
    kit = kits(session_top={"group_chats": "shared"})
    await kit.connect(user, sender="ann", sender_name="Ann")
    await kit.connect(other_user, sender="bob", sender_name="Bob")
    await kit.adapter.say("hello from Ann", sender="ann", sender_name="Ann", direct=False, mentioned=True)
    await kit.manager.idle()
    await kit.adapter.say("and hello from Bob", sender="bob", sender_name="Bob", direct=False, mentioned=True)
    await kit.manager.idle()

    texts = kit.adapter.final_texts("group-1")
    assert texts[-2:] == ["Hi Ann.", "Hi Bob, Ann asked first."]
    first, second = await database_sync_to_async(_runs)()
    assert first.thread_id == second.thread_id, "one thread for the group"
    # The thread belongs to the member who started it; Bob's turn runs there as its owner.
    assert first.thread.owner_id == user.pk and second.owner_id == user.pk
    # Who said what is in the messages the model read.
    humans = [m.content for m in model.requests[-1].messages if m.type == "human"]
    assert humans == ["[Ann] hello from Ann", "[Bob] and hello from Bob"]
    [row] = await database_sync_to_async(lambda: list(ChannelConversation.objects.all()))()
    assert row.shared and row.user_id == user.pk

    # /new from either member starts a fresh shared thread for everyone.
    await kit.adapter.say("/new", sender="bob", sender_name="Bob", direct=False, mentioned=True)
    assert kit.adapter.final_texts("group-1")[-1] == "Started a new conversation for everyone here."
    row = await database_sync_to_async(ChannelConversation.objects.get)(pk=row.pk)
    assert row.thread_id != first.thread_id


async def test_per_user_is_the_default_and_a_provider_session_overrides_the_global_one(kits, scripted_agent, user, other_user):
    scripted_agent("one", "two")
    kit = kits(session={"group_chats": "per_user"}, session_top={"group_chats": "shared"})
    await kit.connect(user, sender="ann")
    await kit.connect(other_user, sender="bob")
    await kit.adapter.say("mine", sender="ann", direct=False, mentioned=True)
    await kit.manager.idle()
    await kit.adapter.say("mine too", sender="bob", direct=False, mentioned=True)
    await kit.manager.idle()
    first, second = await database_sync_to_async(_runs)()
    assert first.thread_id != second.thread_id and first.owner_id == user.pk and second.owner_id == other_user.pk


async def test_a_revoked_owner_hands_the_shared_conversation_to_the_next_member(kits, scripted_agent, user, other_user):
    scripted_agent("first", "second")
    kit = kits(session_top={"group_chats": "shared"})
    await kit.connect(user, sender="ann")
    await kit.connect(other_user, sender="bob")
    await kit.adapter.say("hi", sender="ann", direct=False, mentioned=True)
    await kit.manager.idle()
    await database_sync_to_async(lambda: ChannelConnection.objects.filter(external_id="ann").update(revoked_at="2026-01-01T00:00Z"))()
    await kit.adapter.say("still here", sender="bob", direct=False, mentioned=True)
    await kit.manager.idle()
    first, second = await database_sync_to_async(_runs)()
    assert second.owner_id == other_user.pk and second.thread.owner_id == other_user.pk and second.thread_id != first.thread_id


async def test_allowed_users_lets_only_listed_senders_talk_but_anyone_may_connect(kits, scripted_agent, user, other_user):
    scripted_agent("for ann")
    kit = kits(allowed_users=["ann"])
    await kit.connect(user, sender="ann")
    await kit.connect(other_user, sender="bob")
    assert kit.adapter.final_texts("dm-bob")[-1].startswith("Connected to DeerFlow")
    await kit.adapter.say("let me in", sender="bob")
    await kit.adapter.say("hello", sender="ann")
    await kit.manager.idle()
    assert kit.adapter.final_texts("dm-bob") == [kit.adapter.final_texts("dm-bob")[0]], "bob is ignored"
    assert kit.adapter.final_texts("dm-ann")[-1] == "for ann"
    [run] = await database_sync_to_async(_runs)()
    assert run.owner_id == user.pk


def test_session_layers_win_in_deerflows_order():
    settings = ChannelsSettings(
        enabled=True, queue_size=5, connect_code_ttl=600, public_url="",
        providers={"fake": {"enabled": True, "assistant_id": "helper",
                            "session": {"context": {"thinking_enabled": False},
                                        "users": {"vip": {"assistant_id": "vip-agent", "config": {"recursion_limit": 150},
                                                          "context": {"subagent_enabled": True}}}}}},
        session={"assistant_id": "lead_agent", "context": {"thinking_enabled": True, "is_plan_mode": False},
                 "config": {"recursion_limit": 100}})
    plain = session_for(settings, "fake", "someone")
    assert plain.assistant_id == "helper" and plain.context == {"thinking_enabled": False, "is_plan_mode": False}
    assert plain.config == {"recursion_limit": 100} and plain.group_chats == "per_user"
    vip = session_for(settings, "fake", "vip")
    assert vip.assistant_id == "vip-agent" and vip.config == {"recursion_limit": 150}
    assert vip.context == {"thinking_enabled": False, "is_plan_mode": False, "subagent_enabled": True}


async def test_the_session_context_reaches_the_run(kits, scripted_agent, user):
    scripted_agent("ok")
    kit = kits(session={"context": {"is_plan_mode": True}})
    await kit.connect(user, sender="ann")
    await kit.adapter.say("plan it", sender="ann")
    await kit.manager.idle()
    [run] = await database_sync_to_async(_runs)()
    assert run.kwargs["context"]["is_plan_mode"] is True


async def test_models_and_memory_commands(kits, user):
    from apps.memory.services import fact_create

    kit = kits()
    await kit.connect(user, sender="ann")
    await kit.adapter.say("/models", sender="ann")
    models = kit.adapter.final_texts("dm-ann")[-1]
    assert models.startswith("Available models:\n• ")
    await kit.adapter.say("/memory", sender="ann")
    assert kit.adapter.final_texts("dm-ann")[-1] == "Memory contains 0 fact(s)."
    await database_sync_to_async(fact_create)(user=user, content="Ann prefers metric units", confidence=0.9)
    await kit.adapter.say("/memory", sender="ann")
    assert kit.adapter.final_texts("dm-ann")[-1] == "Memory contains 1 fact(s).\n• Ann prefers metric units"
    await kit.adapter.say("/help", sender="ann")
    helped = "\n".join(kit.adapter.final_texts("dm-ann")[5:])  # split: the fake platform's messages are short
    assert "/models — " in helped and "/memory — " in helped


def test_a_misspelt_group_chats_value_is_refused_at_load():
    from pydantic import ValidationError

    from harness.config.app_config import ChannelsConfig

    ChannelsConfig.model_validate({"session": {"group_chats": "shared"}, "slack": {"session": {"group_chats": "per_user"}}})
    with pytest.raises(ValidationError, match="per_user' or 'shared"):
        ChannelsConfig.model_validate({"session": {"group_chats": "everyone"}})
    with pytest.raises(ValidationError, match="channels.slack.session"):
        ChannelsConfig.model_validate({"slack": {"session": {"group_chats": "everyone"}}})
