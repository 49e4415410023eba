"""Telegram end to end: python-telegram-bot against a fake Bot API server on loopback
(getUpdates long polling, sendMessage, editMessageText, sendDocument, getFile + download),
the channel manager, and real runs on the scripted agent."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async

from apps.channels.status import DatabaseHooks
from apps.channels.adapters.telegram import TelegramAdapter
from apps.channels.connections import connect_code_issue
from apps.channels.models import ChannelConnection, ChannelStatus
from apps.runs.models import Run
from harness.testing import call, tool_reply
from tests.support.channels import RunningAdapter, make_manager
from tests.support.fake_telegram import FakeTelegram

pytestmark = [pytest.mark.django_db(transaction=True)]

ANN = 501


@pytest.fixture
async def telegram():
    fake = await FakeTelegram().start()
    yield fake
    await fake.stop()


class Bot(RunningAdapter):
    """A running adapter + manager against the fake server, as the worker wires them."""

    def __init__(self, fake: FakeTelegram, **overrides) -> None:
        super().__init__(TelegramAdapter, {**fake.settings, **overrides}, DatabaseHooks("telegram"))


def _runs():
    return list(Run.objects.order_by("created_at"))


async def _connect(fake: FakeTelegram, user, user_id: int = ANN, first_name: str = "Ann") -> None:
    issued = await database_sync_to_async(connect_code_issue)(user=user, provider="telegram", ttl_seconds=600)
    fake.user_says(f"/start {issued.code}", user_id=user_id, first_name=first_name)  # what t.me/<bot>?start=CODE sends
    await fake.wait_for(lambda: any(t.startswith("Connected to DeerFlow") for t in fake.texts(user_id)))


async def test_a_dm_is_answered_by_editing_one_message(telegram, scripted_agent, user):
    scripted_agent("Paris is the capital of France.")
    async with Bot(telegram) as bot:
        await _connect(telegram, user)
        asked = telegram.user_says("capital of France?")
        await telegram.wait_for(lambda: "Paris is the capital of France." in telegram.texts(ANN))
        await bot.manager.idle()
    answer = next(m for m in telegram.sent if m.text == "Paris is the capital of France.")
    assert answer.edits, "the placeholder was edited into the answer"
    assert answer.reply_to == asked["message_id"]
    connection = await database_sync_to_async(ChannelConnection.objects.get)(provider="telegram")
    assert connection.external_id == str(ANN) and connection.user_id == user.pk
    status = await database_sync_to_async(ChannelStatus.objects.get)(provider="telegram")
    assert status.state == "connected" and status.bot_name == "deerflow_bot" and status.last_event_at is not None


async def test_an_unknown_sender_is_told_to_connect_and_nothing_runs(telegram, scripted_agent):
    scripted_agent("never")
    async with Bot(telegram, ):
        telegram.user_says("hello", user_id=777)
        await telegram.wait_for(lambda: telegram.texts(777))
    assert telegram.texts(777)[0].startswith("Connect your account first")
    assert await database_sync_to_async(_runs)() == []


async def test_in_a_group_the_bot_answers_only_when_mentioned(telegram, scripted_agent, user):
    scripted_agent("Hi group.", loop=True)
    async with Bot(telegram) as bot:
        await _connect(telegram, user)
        telegram.user_says("just chatting", chat_id=-100, chat_type="supergroup")
        telegram.user_says("@deerflow_bot say hi", chat_id=-100, chat_type="supergroup")
        await telegram.wait_for(lambda: "Hi group." in telegram.texts(-100))
        await bot.manager.idle()
    [run] = await database_sync_to_async(_runs)()
    assert run.kwargs["input"]["messages"][0]["content"] == "say hi"


async def test_documents_and_photos_land_in_uploads_and_oversize_files_are_refused(telegram, scripted_agent, user):
    from apps.threads.uploads import uploads_dir

    scripted_agent("Read them.", loop=True)
    async with Bot(telegram) as bot:
        await _connect(telegram, user)
        telegram.user_sends_document("notes.txt", b"buy milk", caption="my notes")
        await telegram.wait_for(lambda: "Read them." in telegram.texts(ANN))
        await bot.manager.idle()
        telegram.user_sends_photo(b"\xff\xd8jpeg-bytes")
        await telegram.wait_for(lambda: telegram.texts(ANN).count("Read them.") == 2)
        telegram.user_sends_document("huge.iso", b"tiny", size=25_000_000)
        await telegram.wait_for(lambda: any("files can be at most 20.0 MB" in t for t in telegram.texts(ANN)))
        await bot.manager.idle()
    runs = await database_sync_to_async(_runs)()
    assert len(runs) == 2
    thread = await database_sync_to_async(lambda: runs[0].thread)()
    directory = await database_sync_to_async(uploads_dir)(thread)
    assert (directory / "notes.txt").read_bytes() == b"buy milk"
    assert any(p.name.startswith("photo_") and p.read_bytes() == b"\xff\xd8jpeg-bytes" for p in directory.iterdir())
    assert not (directory / "huge.iso").exists()
    assert runs[0].kwargs["input"]["messages"][0]["content"].startswith("my notes")


async def test_presented_files_are_sent_back_as_documents(telegram, scripted_lead, user):
    scripted_lead(
        tool_reply(call("write_file", description="write", path="/mnt/user-data/outputs/report.md", content="# Report\n")),
        tool_reply(call("present_files", filepaths=["/mnt/user-data/outputs/report.md"])),
        "Your report is attached.",
    )
    async with Bot(telegram) as bot:
        await _connect(telegram, user)
        telegram.user_says("write a report")
        await telegram.wait_for(lambda: any(m.document for m in telegram.sent))
        await bot.manager.idle()
    assert "Your report is attached." in telegram.texts(ANN)
    [doc] = [m for m in telegram.sent if m.document]
    assert doc.document == ("report.md", b"# Report\n")


async def test_a_restarted_worker_resumes_after_the_last_update(telegram, scripted_agent, user):
    scripted_agent("answer", loop=True)
    async with Bot(telegram) as bot:
        await _connect(telegram, user)
        telegram.user_says("first")
        await telegram.wait_for(lambda: telegram.texts(ANN).count("answer") == 1)
        await bot.manager.idle()
    saved = (await database_sync_to_async(ChannelStatus.objects.get)(provider="telegram")).cursor["offset"]
    # The worker stopped before its next getUpdates confirmed "first": Telegram still holds it.
    handled = telegram.handled_updates[-1]
    assert handled["update_id"] == saved - 1
    telegram.updates.insert(0, handled)
    telegram.user_says("second")
    offsets_before = len(telegram.get_updates_offsets)
    async with Bot(telegram) as bot:
        await telegram.wait_for(lambda: telegram.texts(ANN).count("answer") == 2)
        await bot.manager.idle()
    assert telegram.get_updates_offsets[offsets_before] == saved
    runs = await database_sync_to_async(_runs)()
    assert [r.kwargs["input"]["messages"][0]["content"] for r in runs] == ["first", "second"]


async def test_an_outage_is_retried_and_recorded(telegram, scripted_agent, user):
    scripted_agent("back again")
    async with Bot(telegram) as bot:
        await _connect(telegram, user)
        telegram.fail_next = 2  # the next two getUpdates answer 502
        await telegram.wait_for(lambda: telegram.fail_next == 0)
        telegram.user_says("are you there?")
        await telegram.wait_for(lambda: "back again" in telegram.texts(ANN))
        await bot.manager.idle()
    status = await database_sync_to_async(ChannelStatus.objects.get)(provider="telegram")
    assert "getUpdates failed" in status.last_error and status.state == "connected"


async def test_a_wrong_token_fails_the_start(telegram):
    from telegram.error import InvalidToken

    manager, adapter = make_manager(TelegramAdapter, adapter_settings={**telegram.settings, "bot_token": "999:WRONG"})
    with pytest.raises(InvalidToken):
        await adapter.start()
    await adapter.stop()


async def test_a_malformed_update_is_logged_acknowledged_and_skipped(telegram, scripted_agent, user):
    scripted_agent("still here")
    async with Bot(telegram) as bot:
        await _connect(telegram, user)
        telegram.updates.append({"update_id": 9999, "message": {"message_id": "not-a-number", "text": "broken"}})
        telegram._new_update.set()
        telegram.user_says("hello after the broken one")
        await telegram.wait_for(lambda: "still here" in telegram.texts(ANN))
        await bot.manager.idle()
    status = await database_sync_to_async(ChannelStatus.objects.get)(provider="telegram")
    assert "update 9999 could not be read" in status.last_error
    assert status.cursor["offset"] > 9999  # acknowledged: never delivered again
    assert len(await database_sync_to_async(_runs)()) == 1


async def test_webhook_mode_takes_pushed_updates_with_the_secret_only(telegram, scripted_agent, user):
    scripted_agent("pushed and answered")
    settings = {"mode": "webhook", "webhook_secret": "s3cret-token", "webhook_listen": "127.0.0.1:0",
                "webhook_url": "https://deerflow.example.com/telegram/webhook"}
    async with Bot(telegram, **settings) as bot:
        port = bot.adapter.webhook_port
        assert telegram.webhook == ("https://deerflow.example.com/telegram/webhook", "s3cret-token")
        telegram.webhook = (f"http://127.0.0.1:{port}/telegram/webhook", "s3cret-token")  # the proxy in front of it
        issued = await database_sync_to_async(connect_code_issue)(user=user, provider="telegram", ttl_seconds=600)
        assert await telegram.push(telegram.user_update(f"/connect {issued.code}")) == 200
        await telegram.wait_for(lambda: any(t.startswith("Connected to DeerFlow") for t in telegram.texts(ANN)))
        assert await telegram.push(telegram.user_update("forged"), secret="guess") == 401
        assert await telegram.push(telegram.user_update("real question")) == 200
        await telegram.wait_for(lambda: "pushed and answered" in telegram.texts(ANN))
        await bot.manager.idle()
    runs = await database_sync_to_async(_runs)()
    assert [r.kwargs["input"]["messages"][0]["content"] for r in runs] == ["real question"]
    assert telegram.get_updates_offsets == []  # no polling in webhook mode


def test_webhook_mode_needs_its_url_and_secret():
    assert TelegramAdapter.missing_settings({"bot_token": "x", "mode": "webhook"}) == ["webhook_url", "webhook_secret"]
    assert TelegramAdapter.missing_settings({"bot_token": "x"}) == []


async def test_two_people_in_one_group_and_topic_get_threads_of_their_own(telegram, scripted_agent, user, other_user):
    from apps.channels.models import ChannelConversation

    scripted_agent("ok", loop=True)
    async with Bot(telegram) as bot:
        await _connect(telegram, user, user_id=501, first_name="Ann")
        await _connect(telegram, other_user, user_id=502, first_name="Bob")
        for n, (user_id, text, topic) in enumerate(((501, "ann's plan", None), (502, "bob asks", None), (501, "ann again", None),
                                                    (501, "ann in a topic", 7)), start=1):
            extra = {"thread_id": topic} if topic else {}
            telegram.user_says(f"@deerflow_bot {text}", user_id=user_id, chat_id=-100, chat_type="supergroup", **extra)
            await telegram.wait_for(lambda n=n: len([m for m in telegram.sent if m.chat_id == -100 and m.text == "ok"]) == n)
            await bot.manager.idle()
    runs = await database_sync_to_async(lambda: [(r.kwargs["input"]["messages"][0]["content"], r.owner_id, r.thread_id, r.thread.owner_id)
                                                 for r in Run.objects.select_related("thread").order_by("created_at")])()
    by_text = {text: (owner, thread, thread_owner) for text, owner, thread, thread_owner in runs}
    assert by_text["ann's plan"][0] == user.pk and by_text["bob asks"][0] == other_user.pk
    assert all(owner == thread_owner for owner, _, thread_owner in by_text.values())
    assert by_text["ann's plan"][1] == by_text["ann again"][1]  # reused per person and chat
    assert by_text["bob asks"][1] != by_text["ann's plan"][1]
    assert by_text["ann in a topic"][1] not in (by_text["ann's plan"][1], by_text["bob asks"][1])
    assert [m.thread_id for m in telegram.sent if m.chat_id == -100 and m.text == "ok"] == [None, None, None, 7]  # answered in the topic
    topics = await database_sync_to_async(lambda: sorted(ChannelConversation.objects.values_list("user_id", "topic")))()
    assert topics == sorted([(user.pk, ""), (other_user.pk, ""), (user.pk, "7")])


async def test_rich_messages_turn_the_final_answer_into_a_rich_message(telegram, scripted_agent, user):
    answer = "## Plan\n\n- **one**\n- two\n\n| a | b |\n|---|---|\n| 1 | 2 |"
    scripted_agent(answer, "plain again")
    async with Bot(telegram, rich_messages=True) as bot:
        await _connect(telegram, user)
        telegram.user_says("plan?")
        await telegram.wait_for(lambda: any(m.rich == answer for m in telegram.sent))
        await bot.manager.idle()
        streamed = next(m for m in telegram.sent if m.rich == answer)
        assert streamed.edits[-1] == answer, "the streamed message itself became the rich one"
        # With nothing streamed (no placeholder), the answer is a new rich message replying to the question.
        from apps.channels.base import ChatRef

        assert await bot.adapter.finish_answer(ChatRef("telegram", "", str(ANN)), None, "*new*", reply_to=str(streamed.reply_to))
        assert telegram.sent[-1].rich == "*new*" and telegram.sent[-1].reply_to == streamed.reply_to
        # A Bot API server without Rich Messages: the same answer arrives as plain text.
        telegram.rich_supported = False
        telegram.user_says("again?")
        await telegram.wait_for(lambda: "plain again" in telegram.texts(ANN))
    assert next(m for m in telegram.sent if m.text == "plain again").rich is None


async def test_without_rich_messages_the_answer_stays_plain(telegram, scripted_agent, user):
    scripted_agent("**bold** plain")
    async with Bot(telegram):
        await _connect(telegram, user)
        telegram.user_says("hi")
        await telegram.wait_for(lambda: "**bold** plain" in telegram.texts(ANN))
    assert all(m.rich is None for m in telegram.sent)


def test_streamed_edits_are_paced_per_chat_type(telegram):
    from apps.channels.base import ChatRef

    paced = TelegramAdapter({k: v for k, v in telegram.settings.items() if k != "edit_interval"}, sink=None)
    assert paced.edit_interval_for(ChatRef("telegram", "", "501")) == 1.0  # private chat
    assert paced.edit_interval_for(ChatRef("telegram", "", "-100123")) == 3.0  # group: ~20 messages a minute
    fixed = TelegramAdapter({**telegram.settings, "edit_interval": 5}, sink=None)
    assert fixed.edit_interval_for(ChatRef("telegram", "", "-100123")) == 5.0


async def test_a_shared_group_thread_over_telegram(telegram, scripted_agent, user, other_user):
    from apps.channels.config import ChannelsSettings
    from apps.channels.models import ChannelConversation

    model = scripted_agent("hello group", "noted, Bob")
    settings = ChannelsSettings(enabled=True, queue_size=5, connect_code_ttl=600, public_url="",
                                providers={"telegram": {**telegram.settings, "session": {"group_chats": "shared"}}})
    manager, adapter = make_manager(TelegramAdapter, settings)
    await adapter.start()
    try:
        await _connect(telegram, user, user_id=501, first_name="Ann")
        await _connect(telegram, other_user, user_id=502, first_name="Bob")
        telegram.user_says("@deerflow_bot start the plan", user_id=501, chat_id=-100, chat_type="supergroup", first_name="Ann")
        await telegram.wait_for(lambda: "hello group" in telegram.texts(-100))
        await manager.idle()
        telegram.user_says("@deerflow_bot add testing", user_id=502, chat_id=-100, chat_type="supergroup", first_name="Bob")
        await telegram.wait_for(lambda: "noted, Bob" in telegram.texts(-100))
        await manager.idle()
    finally:
        await adapter.stop()
        await manager.close()
    humans = [m.content for m in model.requests[-1].messages if m.type == "human"]
    assert humans == ["[Ann] start the plan", "[Bob] add testing"]
    threads = await database_sync_to_async(lambda: {r.thread_id for r in Run.objects.all()})()
    assert len(threads) == 1
    [row] = await database_sync_to_async(lambda: list(ChannelConversation.objects.filter(chat="-100")))()
    assert row.shared and row.user_id == user.pk
