"""Questions and approvals answered in the chat app: the real lead agent (approval gate,
clarification middleware) around the scripted model, paused runs resumed as the connected
user from Telegram's inline keyboard (python-telegram-bot against the fake Bot API), and from
typed numbered replies where a platform has no buttons."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from channels.db import database_sync_to_async

from apps.channels.connections import connect_code_issue
from apps.governance.models import ApprovalDecision
from apps.runs.models import Run
from harness.testing import call, tool_reply
from tests.apps.channels.test_telegram import Bot, telegram  # noqa: F401 (the fixture)
from tests.support.fake_telegram import FakeTelegram

pytestmark = [pytest.mark.django_db(transaction=True)]

ANN, BOB = 501, 502
CMD = "rm -f /mnt/user-data/outputs/old.txt && echo tidied"


@pytest.fixture
def gated_config(tmp_path, monkeypatch):
    """The suite's config with an approval rule on ``rm`` in bash."""
    base = yaml.safe_load(Path(os.environ["DEER_FLOW_CONFIG_PATH"]).read_text())
    base["approvals"] = {"rules": [{"name": "risky-shell", "tool": "bash", "match": "rm ", "action": "ask"}]}
    path = tmp_path / "config-approvals.yaml"
    path.write_text(yaml.safe_dump(base))
    monkeypatch.setenv("DEER_FLOW_CONFIG_PATH", str(path))


async def _connect(fake: FakeTelegram, user, user_id: int = ANN, name: str = "Ann") -> None:
    issued = await database_sync_to_async(connect_code_issue)(user=user, provider="telegram", ttl_seconds=600)
    fake.user_says(f"/start {issued.code}", user_id=user_id, first_name=name)
    await fake.wait_for(lambda: any(t.startswith("Connected to DeerFlow") for t in fake.texts(user_id)))


def _runs():
    return list(Run.objects.order_by("created_at"))


def _decisions():
    return list(ApprovalDecision.objects.values_list("decision", "tool", "decided_by"))


async def test_an_approval_round_trip_from_telegrams_inline_keyboard(telegram, scripted_lead, gated_config, user):
    scripted_lead(tool_reply(call("bash", command=CMD, description="tidy the outputs")), "All tidy.")
    async with Bot(telegram) as bot:
        await _connect(telegram, user)
        telegram.user_says("tidy my outputs")
        await telegram.wait_for(lambda: telegram.with_buttons(ANN))
        [question] = telegram.with_buttons(ANN)
        assert "Approval needed" in question.text and "bash" in question.text and "risky-shell" in question.text
        assert [label for label, _ in question.buttons] == ["Approve once", "Approve always in this chat", "Deny"]
        await bot.manager.idle()
        [paused] = await database_sync_to_async(_runs)()
        assert paused.status == "interrupted"

        press = telegram.user_presses(question, "Approve once")
        await telegram.wait_for(lambda: "All tidy." in telegram.texts(ANN))
        await bot.manager.idle()
    assert press["id"] in telegram.answered_callbacks  # the button's spinner stopped
    first, resumed = await database_sync_to_async(_runs)()
    assert resumed.status == "success" and resumed.owner_id == user.pk and resumed.thread_id == first.thread_id
    assert await database_sync_to_async(_decisions)() == [("approved", "bash", str(user.pk))]


async def test_a_stale_button_and_someone_elses_press_change_nothing(telegram, scripted_lead, gated_config, user, other_user):
    scripted_lead(tool_reply(call("bash", command=CMD, description="tidy")), "Not run, as you said.")
    group = -100
    async with Bot(telegram) as bot:
        await _connect(telegram, user)
        await _connect(telegram, other_user, user_id=BOB, name="Bob")
        telegram.user_says("@deerflow_bot tidy my outputs", chat_id=group, chat_type="supergroup")
        await telegram.wait_for(lambda: telegram.with_buttons(group))
        [question] = telegram.with_buttons(group)
        await bot.manager.idle()

        telegram.user_presses(question, "Approve once", user_id=BOB, first_name="Bob")  # not the one asked
        await telegram.wait_for(lambda: any(t.startswith("Only the person who was asked") for t in telegram.texts(group)))
        assert len(await database_sync_to_async(_runs)()) == 1

        telegram.user_presses(question, "Deny")
        await telegram.wait_for(lambda: "Not run, as you said." in telegram.texts(group))
        await bot.manager.idle()
        telegram.user_presses(question, "Approve once")  # the run moved on: too late
        await telegram.wait_for(lambda: any(t.startswith("That question is no longer open") for t in telegram.texts(group)))
        await bot.manager.idle()
    runs = await database_sync_to_async(_runs)()
    assert [r.status for r in runs] == ["interrupted", "success"]
    assert await database_sync_to_async(_decisions)() == [("denied", "bash", str(user.pk))]


async def test_a_clarification_is_answered_by_a_button(telegram, scripted_lead, user):
    scripted_lead(tool_reply(call("ask_clarification", question="Which format?", options=["PDF", "Markdown"])),
                  "Markdown it is.")
    async with Bot(telegram) as bot:
        await _connect(telegram, user)
        telegram.user_says("write the report")
        await telegram.wait_for(lambda: telegram.with_buttons(ANN))
        [question] = telegram.with_buttons(ANN)
        assert question.text.startswith("Which format?")
        assert [label for label, _ in question.buttons] == ["PDF", "Markdown"]
        await bot.manager.idle()
        telegram.user_presses(question, "Markdown")
        await telegram.wait_for(lambda: "Markdown it is." in telegram.texts(ANN))
        await bot.manager.idle()
    first, resumed = await database_sync_to_async(_runs)()
    assert resumed.kwargs["command"] == {"resume": "Markdown"} and resumed.status == "success"


async def test_without_buttons_the_answer_is_a_numbered_reply(channel_kit, scripted_lead, gated_config, user):
    scripted_lead(tool_reply(call("bash", command=CMD, description="tidy")), "Denied, so nothing was removed.")
    await channel_kit.connect(user)
    await channel_kit.adapter.say("tidy my outputs")
    await channel_kit.manager.idle()
    texts = channel_kit.adapter.final_texts()
    assert texts[-1].endswith("1. Approve once\n2. Approve always in this chat\n3. Deny\n\nReply with the number.")
    await channel_kit.adapter.say("perhaps")  # not an answer: the question again, nothing runs
    await channel_kit.manager.idle()
    assert "Reply 1 (approve once)" in channel_kit.adapter.final_texts()[-1]
    assert len(await database_sync_to_async(_runs)()) == 1
    await channel_kit.adapter.say("3 not today")
    await channel_kit.manager.idle()
    assert channel_kit.adapter.final_texts()[-1] == "Denied, so nothing was removed."
    decisions = await database_sync_to_async(lambda: list(ApprovalDecision.objects.values_list("decision", "reason")))()
    assert decisions == [("denied", "not today")]


async def test_a_question_without_choices_takes_the_typed_reply(channel_kit, scripted_lead, user):
    scripted_lead(tool_reply(call("ask_clarification", question="Which city is the trip to?")), "Booking Lisbon.")
    await channel_kit.connect(user)
    await channel_kit.adapter.say("plan my trip")
    await channel_kit.manager.idle()
    assert channel_kit.adapter.final_texts()[-1] == "Which city is the trip to?\n(Reply with your answer.)"
    await channel_kit.adapter.say("Lisbon, in May")
    await channel_kit.manager.idle()
    assert channel_kit.adapter.final_texts()[-1] == "Booking Lisbon."
    first, resumed = await database_sync_to_async(_runs)()
    assert resumed.kwargs["command"] == {"resume": "Lisbon, in May"} and resumed.thread_id == first.thread_id
