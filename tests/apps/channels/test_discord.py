"""Discord against a fake gateway and REST API on loopback: discord.py's own client logs in,
identifies, parses READY / GUILD_CREATE / MESSAGE_CREATE into its models, and posts, edits and
opens threads over its HTTP client; the adapter is exercised through all of it."""

from __future__ import annotations

import asyncio
import json

import discord
import discord.gateway
import discord.http
import pytest

from apps.channels.base import ChatRef, SentMessage
from apps.channels.common import PlatformError
from apps.channels.adapters.discord_bot import DiscordAdapter
from apps.channels.registry import ADAPTER_MODULES, get_adapter
from tests.apps.channels.discord_fake import ALICE, BOT, BOT_ID, CHANNEL_ID, DM_ID, GUILD_ID, FakeDiscord, message
from tests.apps.channels.fake_platform import Inbox, RecordingHooks


@pytest.fixture
async def fake():
    server = await FakeDiscord().start()
    yield server
    await server.stop()


@pytest.fixture
async def adapter(fake, monkeypatch):
    # The adapter rewrites discord.py's class-level endpoints; put them back after the test.
    monkeypatch.setattr(discord.http.Route, "BASE", discord.http.Route.BASE)
    monkeypatch.setattr(discord.gateway.DiscordWebSocket, "DEFAULT_GATEWAY", discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY)
    inbox = Inbox()
    adapter = DiscordAdapter({"bot_token": "bot-token-1", "api_base": f"{fake.url}/api/v10", "gateway_url": f"ws{fake.url[4:]}/gateway",
                              "allowed_networks": ["127.0.0.0/8"]}, inbox, RecordingHooks())
    await adapter.start()
    await asyncio.wait_for(fake.ready.wait(), 30)
    yield adapter, inbox
    await adapter.stop()


async def test_registered():
    assert ADAPTER_MODULES["discord"] == "apps.channels.adapters.discord_bot"
    assert get_adapter("discord") is DiscordAdapter
    assert DiscordAdapter.missing_settings({}) == ["bot_token"]
    assert DiscordAdapter.capabilities.max_text == 2000
    assert DiscordAdapter.connect_hint("ABCD2345") == ("", "Send this message to the Discord bot in a direct chat: /connect ABCD2345")


async def test_login_and_identify(fake, adapter):
    await adapter[0].hooks.until(lambda: adapter[0].hooks.connected_as)
    assert adapter[0].hooks.connected_as == ["deerflow"]
    assert fake.calls("GET", "/api/v10/users/@me")[0].headers["Authorization"] == "Bot bot-token-1"
    identify = fake.identified[0]
    assert identify["token"] == "bot-token-1"
    intents = discord.Intents._from_value(identify["intents"])
    assert intents.guild_messages and intents.dm_messages and intents.message_content and not intents.members


async def test_a_direct_message_is_answered_and_edited_as_it_streams(fake, adapter):
    discord_adapter, inbox = adapter
    await fake.dispatch("MESSAGE_CREATE", message(channel_id=DM_ID, content="hello deer", guild=False))
    inbound = await inbox.next()
    assert inbound.is_direct and inbound.mentioned and inbound.text == "hello deer"
    assert inbound.sender_id == ALICE["id"] and inbound.sender_name == "Alice"
    assert inbound.chat == ChatRef(provider="discord", workspace="", chat=DM_ID)
    sent = await discord_adapter.send_text(inbound.chat, "Deer", reply_to=inbound.message_id)
    await discord_adapter.edit_text(sent, "Deer Flow answers.")
    post = fake.calls("POST", f"/api/v10/channels/{DM_ID}/messages")[0].json()
    assert post["content"] == "Deer" and str(post["message_reference"]["message_id"]) == inbound.message_id
    assert post["allowed_mentions"] == {"parse": []}
    edit = fake.calls("PATCH", f"/api/v10/channels/{DM_ID}/messages/{sent.message_id}")[0].json()
    assert edit["content"] == "Deer Flow answers."


async def test_a_mention_opens_a_thread_and_follow_ups_in_it_are_the_same_conversation(fake, adapter):
    discord_adapter, inbox = adapter
    await fake.dispatch("MESSAGE_CREATE", message(channel_id=CHANNEL_ID, content="just chatting"))
    await fake.dispatch("MESSAGE_CREATE", message(channel_id=CHANNEL_ID, content=f"<@{BOT_ID}> plan a trip", mentions=(BOT,)))
    chatting, mention = await inbox.next(), await inbox.next()
    assert not chatting.mentioned
    assert mention.mentioned and not mention.is_direct and mention.text == "plan a trip"
    assert mention.chat == ChatRef(provider="discord", workspace="", chat=CHANNEL_ID, topic=mention.message_id)
    assert mention.extra["guild_id"] == GUILD_ID
    await discord_adapter.send_text(mention.chat, "Planning…\nstep 1", reply_to=mention.message_id)
    opened = fake.calls("POST", f"/api/v10/channels/{CHANNEL_ID}/messages/{mention.message_id}/threads")[0].json()
    assert opened["name"] == "Planning…" and opened["auto_archive_duration"] == 1440
    # The answer is posted inside the thread, whose id is the starter message's.
    assert fake.calls("POST", f"/api/v10/channels/{mention.message_id}/messages")[0].json()["content"] == "Planning…\nstep 1"
    # A follow-up in the bot's thread, without a mention, continues the same conversation.
    await fake.dispatch("MESSAGE_CREATE", message(channel_id=mention.message_id, content="and a hotel?"))
    follow_up = await inbox.next()
    assert follow_up.mentioned and follow_up.chat == mention.chat and follow_up.text == "and a hotel?"
    await discord_adapter.send_text(follow_up.chat, "Sure.")
    assert len(fake.calls("POST", f"/api/v10/channels/{CHANNEL_ID}/messages/{mention.message_id}/threads")) == 1


async def test_the_bots_own_messages_are_ignored(fake, adapter):
    _, inbox = adapter
    await fake.dispatch("MESSAGE_CREATE", message(channel_id=DM_ID, content="from the bot", author=BOT, guild=False))
    await fake.dispatch("MESSAGE_CREATE", message(channel_id=DM_ID, content="from alice", guild=False))
    assert (await inbox.next()).text == "from alice"
    assert [m.text for m in inbox.messages] == ["from alice"]


async def test_attachments_in_and_files_out(fake, adapter):
    discord_adapter, inbox = adapter
    attachment = {"id": "300000000000000001", "filename": "notes.txt", "size": 22, "url": f"{fake.url}/attachments/notes.txt",
                  "proxy_url": f"{fake.url}/attachments/notes.txt", "content_type": "text/plain"}
    await fake.dispatch("MESSAGE_CREATE", message(channel_id=DM_ID, content="", guild=False, attachments=(attachment,)))
    inbound = await inbox.next()
    file = inbound.files[0]
    assert (file.name, file.size, file.content_type) == ("notes.txt", 22, "text/plain")
    assert await file.read() == b"contents of notes.txt"
    await discord_adapter.send_file(inbound.chat, "chart.png", b"\x89PNG chart")
    upload = fake.calls("POST", f"/api/v10/channels/{DM_ID}/messages")[-1].form()
    assert upload["files[0]"] == ("chart.png", b"\x89PNG chart")
    assert json.loads(upload["payload_json"][1])["attachments"][0]["filename"] == "chart.png"
    with pytest.raises(PlatformError, match="up to 10 MB"):
        await discord_adapter.send_file(inbound.chat, "big.bin", b"x" * (10 * 1024 * 1024 + 1))


async def test_a_failed_edit_names_the_platform_error(fake, adapter):
    discord_adapter, _ = adapter
    with pytest.raises(PlatformError, match="discord edit failed: 404"):
        await discord_adapter.edit_text(SentMessage(chat=ChatRef(provider="discord", workspace="", chat="1"), message_id="2"), "x")


async def test_a_message_the_bot_starts_opens_the_users_dm(fake, adapter):
    discord_adapter, _ = adapter
    chat = await discord_adapter.direct_chat(ALICE["id"])
    assert chat == ChatRef(provider="discord", workspace="", chat=DM_ID)
    assert str(fake.calls("POST", "/api/v10/users/@me/channels")[0].json()["recipient_id"]) == ALICE["id"]
    await discord_adapter.send_text(chat, "Your scheduled report is ready.")
    assert fake.calls("POST", f"/api/v10/channels/{DM_ID}/messages")[-1].json()["content"] == "Your scheduled report is ready."


async def test_the_gateway_connection_resumes_after_an_outage(fake, adapter):
    _, inbox = adapter
    await fake.dispatch("MESSAGE_CREATE", message(channel_id=DM_ID, content="before", guild=False))
    assert (await inbox.next()).text == "before"
    await fake.drop()
    await fake.dispatch("MESSAGE_CREATE", message(channel_id=DM_ID, content="after", guild=False))
    assert (await inbox.next(timeout=30)).text == "after"
    assert fake.resumes[0]["session_id"] == "session_1" and fake.resumes[0]["token"] == "bot-token-1"


async def test_a_question_shows_buttons_and_a_press_arrives_as_the_presser(fake, adapter):
    from apps.channels.base import Choice

    adapter_, inbox = adapter
    chat = ChatRef(provider="discord", workspace="", chat=DM_ID)
    sent = await adapter_.send_choices(chat, "Which format?", [Choice("PDF", "dfq:1:abc:0"), Choice("Markdown", "dfq:1:abc:1")])
    [posted] = [r.json() for r in fake.calls("POST", f"/api/v10/channels/{DM_ID}/messages")]
    assert posted["content"] == "Which format?"
    assert [(b["label"], b["custom_id"]) for b in posted["components"][0]["components"]] == [("PDF", "dfq:1:abc:0"),
                                                                                            ("Markdown", "dfq:1:abc:1")]
    interaction_id = await fake.press(sent.message_id, "Markdown")
    pressed = await inbox.next()
    assert (pressed.data, pressed.sender_id, pressed.chat.chat, pressed.reply_to) == ("dfq:1:abc:1", ALICE["id"], DM_ID, sent.message_id)
    assert pressed.message_id == f"ix-{interaction_id}"
    await fake.wait_for("POST", f"/api/v10/interactions/{interaction_id}/tok-{interaction_id}/callback")
    assert fake.interaction_callbacks[0]["type"] == 6  # acknowledged: the button stops spinning
