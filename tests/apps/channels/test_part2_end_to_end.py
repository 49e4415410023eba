"""Feishu, DingTalk, WeCom and Discord wired to the real channel manager, as the worker wires
them: a stranger gets the connect hint, /connect binds the sender, a direct message starts a
real run (start_run, scripted agent) whose answer reaches the fake platform (streamed card
patches / message edits where the platform can edit), commands answer, files land in the
thread's uploads, and two users in one group chat never share a thread."""

from __future__ import annotations

import asyncio
import json
import uuid

import discord.gateway
import discord.http
import pytest
from channels.db import database_sync_to_async
from django.test import AsyncClient

from apps.channels.adapters.dingtalk import DingTalkAdapter
from apps.channels.adapters.discord_bot import DiscordAdapter
from apps.channels.adapters.feishu import FeishuAdapter
from apps.channels.adapters.wecom import WeComAdapter
from apps.runs.models import Run
from tests.apps.channels import discord_fake as fake_discord
from tests.apps.channels.discord_fake import BOT, BOT_ID, CHANNEL_ID, DM_ID, FakeDiscord
from tests.apps.channels.feishu_fake import BOT_OPEN_ID, FakeFeishu, message_event
from tests.apps.channels.test_dingtalk import FakeDingTalk
from tests.apps.channels.test_wecom import AES_KEY, CORP_ID, TOKEN, FakeWeCom, signed, text_message
from tests.support.channels import make_manager

pytestmark = [pytest.mark.django_db(transaction=True)]

ANSWER = "The answer is forty-two."


def _runs() -> list[Run]:
    return list(Run.objects.select_related("thread").order_by("created_at"))


async def issue_code(user, provider: str) -> str:
    from apps.channels.connections import connect_code_issue

    return (await database_sync_to_async(connect_code_issue)(user=user, provider=provider, ttl_seconds=600)).code


@pytest.fixture
async def wired():
    """Start a (manager, adapter) pair; everything is closed when the test ends."""
    started = []

    async def wire(adapter_cls, settings):
        manager, adapter = make_manager(adapter_cls, adapter_settings=settings)
        await adapter.start()
        started.append((manager, adapter))
        return manager, adapter

    yield wire
    for manager, adapter in started:
        await adapter.stop()
        await manager.close()


# --- Feishu ---------------------------------------------------------------------------------

def feishu_cards(fake: FakeFeishu) -> dict[str, str]:
    """What each bot message shows now: its card's text after the patches."""
    shown: dict[str, str] = {}
    for index, request in enumerate(fake.requests):
        if request.method == "POST" and request.path.endswith("/reply"):
            body = request.json()
            if body["msg_type"] == "interactive":
                # The fake numbers replies in arrival order: om_out_1, om_out_2, ...
                number = sum(1 for r in fake.requests[:index + 1] if r.method == "POST" and r.path.startswith("/open-apis/im/v1/messages")
                             and (r.path.endswith("/reply") or r.path == "/open-apis/im/v1/messages"))
                shown[f"om_out_{number}"] = json.loads(body["content"])["elements"][0]["content"]
        elif request.method == "PATCH":
            shown[request.path.rsplit("/", 1)[1]] = json.loads(request.json()["content"])["elements"][0]["content"]
    return shown


@pytest.fixture
async def feishu_fake():
    server = await FakeFeishu().start()
    yield server
    await server.stop()


async def feishu_say(fake, manager, **event) -> str:
    event.setdefault("message_id", f"om_{uuid.uuid4().hex[:10]}")
    await fake.to_push.put(message_event(**event))
    await fake.wait_for("POST", f"/open-apis/im/v1/messages/{event['message_id']}/reply")
    await manager.idle()
    return event["message_id"]


async def test_feishu_connect_dm_streamed_card_commands_and_files(feishu_fake, wired, scripted_agent, user):
    from apps.threads.uploads import uploads_dir

    scripted_agent(ANSWER, loop=True)
    manager, _ = await wired(FeishuAdapter, {"app_id": f"cli_{uuid.uuid4().hex[:8]}", "app_secret": "s", "base_url": feishu_fake.url})
    await feishu_say(feishu_fake, manager, text="hello?")
    assert list(feishu_cards(feishu_fake).values())[-1].startswith("Connect your account first")
    code = await issue_code(user, "feishu")
    await feishu_say(feishu_fake, manager, text=f"/connect {code}")
    assert list(feishu_cards(feishu_fake).values())[-1].startswith("Connected to DeerFlow as alice")
    await feishu_say(feishu_fake, manager, text="what is the answer?")
    cards = feishu_cards(feishu_fake)
    assert list(cards.values())[-1] == ANSWER
    assert feishu_fake.calls("PATCH", f"/open-apis/im/v1/messages/{list(cards)[-1]}"), "the card is patched as the answer streams"
    [run] = await database_sync_to_async(_runs)()
    assert run.owner_id == user.pk and run.status == "success"
    await feishu_say(feishu_fake, manager, text="/help")
    assert "/new" in list(feishu_cards(feishu_fake).values())[-1]
    await feishu_say(feishu_fake, manager, message_type="image", content={"image_key": "img_key_1"})
    runs = await database_sync_to_async(_runs)()
    assert len(runs) == 2 and runs[1].thread_id == run.thread_id
    directory = await database_sync_to_async(uploads_dir)(runs[1].thread)
    assert (directory / "img_key_1.png").read_bytes() == b"\x89PNG fake image"


async def test_feishu_two_users_in_one_group_never_share_a_thread(feishu_fake, wired, scripted_agent, user, other_user):
    scripted_agent("noted", loop=True)
    manager, _ = await wired(FeishuAdapter, {"app_id": f"cli_{uuid.uuid4().hex[:8]}", "app_secret": "s", "base_url": feishu_fake.url})
    await feishu_say(feishu_fake, manager, text=f"/connect {await issue_code(user, 'feishu')}", sender="ou_alice")
    await feishu_say(feishu_fake, manager, text=f"/connect {await issue_code(other_user, 'feishu')}", sender="ou_bob")
    bot = {"key": "@_user_1", "id": {"open_id": BOT_OPEN_ID}, "name": "DeerFlow", "tenant_key": "tenant_1"}
    for sender in ("ou_alice", "ou_bob"):
        await feishu_say(feishu_fake, manager, text="@_user_1 remember my plan", chat_type="group", chat_id="oc_team",
                         mentions=[bot], sender=sender)
    runs = await database_sync_to_async(_runs)()
    assert [r.owner_id for r in runs] == [user.pk, other_user.pk]
    assert runs[0].thread_id != runs[1].thread_id


async def test_feishu_callback_mode_end_to_end(feishu_fake, wired, scripted_agent, user, channels_config, channel_layer):
    scripted_agent(ANSWER, loop=True)
    settings = {"app_id": f"cli_{uuid.uuid4().hex[:8]}", "app_secret": "s", "base_url": feishu_fake.url, "mode": "webhook",
                "verification_token": "vtoken"}
    channels_config(feishu=settings)
    manager, _ = await wired(FeishuAdapter, settings)
    code = await issue_code(user, "feishu")
    client = AsyncClient()
    for text, mid in ((f"/connect {code}", "om_cb_1"), ("question", "om_cb_2")):
        response = await client.post("/api/channels/feishu/events", data=json.dumps(message_event(text=text, message_id=mid)),
                                     content_type="application/json")
        assert response.status_code == 200
        await feishu_fake.wait_for("POST", f"/open-apis/im/v1/messages/{mid}/reply")
        await manager.idle()
    assert list(feishu_cards(feishu_fake).values())[-1] == ANSWER


# --- DingTalk -------------------------------------------------------------------------------

@pytest.fixture
async def dingtalk_fake():
    server = await FakeDingTalk().start()
    yield server
    await server.stop()


def dingtalk_texts(fake) -> list[str]:
    return [r.json()["markdown"]["text"] for r in fake.calls("POST", "/robot/sendBySession")]


async def dingtalk_say(fake, manager, **fields) -> None:
    before = len(fake.calls("POST", "/robot/sendBySession"))
    await fake.to_push.put(fake.robot_frame(**fields))
    await fake.wait_for("POST", "/robot/sendBySession", before + 1)
    await manager.idle()


async def test_dingtalk_connect_dm_commands_and_isolation(dingtalk_fake, wired, scripted_agent, user, other_user):
    scripted_agent(ANSWER, loop=True)
    manager, _ = await wired(DingTalkAdapter, {"client_id": "ding_client", "client_secret": "s", "openapi_base": dingtalk_fake.url,
                                               "allowed_networks": ["127.0.0.0/8"]})
    await dingtalk_say(dingtalk_fake, manager, text={"content": "hi"})
    assert dingtalk_texts(dingtalk_fake)[-1].startswith("Connect your account first")
    await dingtalk_say(dingtalk_fake, manager, text={"content": f"/connect {await issue_code(user, 'dingtalk')}"})
    assert dingtalk_texts(dingtalk_fake)[-1].startswith("Connected to DeerFlow as alice")
    await dingtalk_say(dingtalk_fake, manager, text={"content": "what is the answer?"})
    # No edits on DingTalk: the finished answer arrives as one markdown message.
    assert dingtalk_texts(dingtalk_fake)[-1] == ANSWER
    await dingtalk_say(dingtalk_fake, manager, text={"content": "/help"})
    assert "/status" in dingtalk_texts(dingtalk_fake)[-1]
    bob = {"senderStaffId": "staff_bob", "senderId": "$:LWCP_v1:$bob", "senderNick": "Bob"}
    await dingtalk_say(dingtalk_fake, manager, text={"content": f"/connect {await issue_code(other_user, 'dingtalk')}"}, **bob)
    group = {"conversationType": "2", "conversationId": "cid_team", "isInAtList": True}
    await dingtalk_say(dingtalk_fake, manager, text={"content": "alice's plan"}, **group)
    await dingtalk_say(dingtalk_fake, manager, text={"content": "bob's plan"}, **group, **bob)
    runs = await database_sync_to_async(_runs)()
    assert [r.owner_id for r in runs] == [user.pk, user.pk, other_user.pk]
    assert len({r.thread_id for r in runs}) == 3


# --- WeCom ----------------------------------------------------------------------------------

@pytest.fixture
async def wecom_fake():
    server = await FakeWeCom().start()
    yield server
    await server.stop()


def wecom_texts(fake) -> list[str]:
    return [r.json()["markdown"]["content"] for r in fake.calls("POST", "/cgi-bin/message/send") if r.json()["msgtype"] == "markdown"]


async def wecom_say(fake, manager, xml: str) -> None:
    before = len(fake.calls("POST", "/cgi-bin/message/send"))
    query, body = signed(xml)
    response = await AsyncClient().post(f"/api/channels/wecom/callback?{'&'.join(f'{k}={v}' for k, v in query.items())}",
                                        data=body, content_type="text/xml")
    assert response.status_code == 200
    await fake.wait_for("POST", "/cgi-bin/message/send", before + 1)
    await manager.idle()


async def test_wecom_connect_dm_commands_and_isolation(wecom_fake, wired, scripted_agent, user, other_user, channels_config, channel_layer):
    scripted_agent(ANSWER, loop=True)
    settings = {"corp_id": CORP_ID, "agent_id": "1000002", "secret": "x", "token": TOKEN, "encoding_aes_key": AES_KEY,
                "api_base": wecom_fake.url, "allowed_networks": ["127.0.0.0/8"]}
    channels_config(wecom=settings)
    manager, _ = await wired(WeComAdapter, settings)
    await wecom_say(wecom_fake, manager, text_message("hello", msg_id="1"))
    assert wecom_texts(wecom_fake)[-1].startswith("Connect your account first")
    await wecom_say(wecom_fake, manager, text_message(f"/connect {await issue_code(user, 'wecom')}", msg_id="2"))
    assert wecom_texts(wecom_fake)[-1].startswith("Connected to DeerFlow as alice")
    await wecom_say(wecom_fake, manager, text_message("what is the answer?", msg_id="3"))
    assert wecom_texts(wecom_fake)[-1] == ANSWER
    await wecom_say(wecom_fake, manager, text_message("/help", msg_id="4"))
    assert "/stop" in wecom_texts(wecom_fake)[-1]
    await wecom_say(wecom_fake, manager, text_message(f"/connect {await issue_code(other_user, 'wecom')}", sender="lisi", msg_id="5"))
    await wecom_say(wecom_fake, manager, text_message("my own question", sender="lisi", msg_id="6"))
    runs = await database_sync_to_async(_runs)()
    assert [r.owner_id for r in runs] == [user.pk, other_user.pk] and runs[0].thread_id != runs[1].thread_id
    assert wecom_fake.calls("POST", "/cgi-bin/message/send")[-1].json()["touser"] == "lisi"


# --- Discord --------------------------------------------------------------------------------

@pytest.fixture
async def discord_fake(monkeypatch):
    monkeypatch.setattr(discord.http.Route, "BASE", discord.http.Route.BASE)
    monkeypatch.setattr(discord.gateway.DiscordWebSocket, "DEFAULT_GATEWAY", discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY)
    server = await FakeDiscord().start()
    yield server
    await server.stop()


def discord_texts(fake) -> dict[str, str]:
    """Each bot message's content after its edits, keyed by message id."""
    shown: dict[str, str] = {}
    for request in fake.requests:
        if request.method == "PATCH":
            shown[request.path.rsplit("/", 1)[1]] = request.json()["content"]
    return shown


async def discord_say(fake, manager, channel_id: str, content: str, **kwargs) -> str:
    before = len([r for r in fake.requests if r.method == "POST" and r.path.endswith("/messages")])
    data = fake_discord.message(channel_id=channel_id, content=content, **kwargs)
    await fake.dispatch("MESSAGE_CREATE", data)
    while len([r for r in fake.requests if r.method == "POST" and r.path.endswith("/messages")]) <= before:
        fake.arrived.clear()
        await fake.arrived.wait()
    await manager.idle()
    return data["id"]


def discord_last_post(fake) -> dict:
    return [r for r in fake.requests if r.method == "POST" and r.path.endswith("/messages")][-1].json()


async def test_discord_connect_dm_streamed_edits_threads_and_isolation(discord_fake, wired, scripted_agent, user, other_user):
    scripted_agent(ANSWER, loop=True)
    manager, _ = await wired(DiscordAdapter, {"bot_token": "t", "api_base": f"{discord_fake.url}/api/v10",
                                              "gateway_url": f"ws{discord_fake.url[4:]}/gateway", "allowed_networks": ["127.0.0.0/8"]})
    await asyncio.wait_for(discord_fake.ready.wait(), 30)
    await discord_say(discord_fake, manager, DM_ID, "hello?", guild=False)
    assert discord_last_post(discord_fake)["content"].startswith("Connect your account first")
    await discord_say(discord_fake, manager, DM_ID, f"/connect {await issue_code(user, 'discord')}", guild=False)
    assert discord_last_post(discord_fake)["content"].startswith("Connected to DeerFlow as alice")
    await discord_say(discord_fake, manager, DM_ID, "what is the answer?", guild=False)
    assert list(discord_texts(discord_fake).values())[-1] == ANSWER  # the placeholder was edited into the answer
    await discord_say(discord_fake, manager, DM_ID, "/help", guild=False)
    assert "/goal" in discord_last_post(discord_fake)["content"]
    bob = fake_discord.user("400000000000000002", "bob")
    await discord_say(discord_fake, manager, DM_ID, f"/connect {await issue_code(other_user, 'discord')}", guild=False, author=bob)
    # Both mention the bot in #general: each mention opens its own thread and its own DeerFlow thread.
    alice_mid = await discord_say(discord_fake, manager, CHANNEL_ID, f"<@{BOT_ID}> my plan", mentions=(BOT,))
    bob_mid = await discord_say(discord_fake, manager, CHANNEL_ID, f"<@{BOT_ID}> my plan", mentions=(BOT,), author=bob)
    assert set(discord_fake.threads) == {alice_mid, bob_mid}
    # A follow-up inside Alice's thread continues her conversation.
    await discord_say(discord_fake, manager, alice_mid, "and then?")
    runs = await database_sync_to_async(_runs)()
    assert [r.owner_id for r in runs] == [user.pk, user.pk, other_user.pk, user.pk]
    assert runs[1].thread_id != runs[2].thread_id and runs[3].thread_id == runs[1].thread_id


async def test_discord_an_oversize_attachment_is_answered_with_the_limit_unread(discord_fake, wired, scripted_agent, user):
    scripted_agent("got the rest", loop=True)
    manager, _ = await wired(DiscordAdapter, {"bot_token": "t", "api_base": f"{discord_fake.url}/api/v10",
                                              "gateway_url": f"ws{discord_fake.url[4:]}/gateway", "allowed_networks": ["127.0.0.0/8"]})
    await asyncio.wait_for(discord_fake.ready.wait(), 30)
    await discord_say(discord_fake, manager, DM_ID, f"/connect {await issue_code(user, 'discord')}", guild=False)
    huge = {"id": "300000000000000009", "filename": "huge.zip", "size": 60 * 1024 * 1024,
            "url": f"{discord_fake.url}/attachments/huge.zip", "proxy_url": f"{discord_fake.url}/attachments/huge.zip",
            "content_type": "application/zip"}
    await discord_say(discord_fake, manager, DM_ID, "here is the archive", guild=False, attachments=(huge,))
    posted = [r.json()["content"] for r in discord_fake.requests if r.method == "POST" and r.path.endswith("/messages")]
    assert any(text.startswith("“huge.zip” is") and "files can be at most" in text for text in posted)
    assert not discord_fake.calls("GET", "/attachments/huge.zip")  # refused before downloading


def _report_script() -> tuple:
    from harness.testing import call, tool_reply

    return (tool_reply(call("write_file", description="write", path="/mnt/user-data/outputs/report.md", content="# Report\n")),
            tool_reply(call("present_files", filepaths=["/mnt/user-data/outputs/report.md"])),
            "Your report is attached.")


async def test_feishu_presented_files_are_uploaded_and_sent(feishu_fake, wired, scripted_lead, user):
    scripted_lead(*_report_script())
    manager, _ = await wired(FeishuAdapter, {"app_id": f"cli_{uuid.uuid4().hex[:8]}", "app_secret": "s", "base_url": feishu_fake.url})
    await feishu_say(feishu_fake, manager, text=f"/connect {await issue_code(user, 'feishu')}")
    await feishu_say(feishu_fake, manager, text="write a report", message_id="om_report")
    upload = feishu_fake.calls("POST", "/open-apis/im/v1/files")[0].form()
    assert upload["file_name"][1] == b"report.md" and upload["file"][1] == b"# Report\n" and upload["file_type"][1] == b"stream"
    replies = [r.json() for r in feishu_fake.calls("POST", "/open-apis/im/v1/messages/om_report/reply")]
    assert {"msg_type": "file", "content": json.dumps({"file_key": "file_out_1"}), "reply_in_thread": False} in replies
    assert "Your report is attached." in feishu_cards(feishu_fake).values()


async def test_wecom_presented_files_are_uploaded_and_sent(wecom_fake, wired, scripted_lead, user, channels_config, channel_layer):
    scripted_lead(*_report_script())
    settings = {"corp_id": CORP_ID, "agent_id": "1000002", "secret": "x", "token": TOKEN, "encoding_aes_key": AES_KEY,
                "api_base": wecom_fake.url, "allowed_networks": ["127.0.0.0/8"]}
    channels_config(wecom=settings)
    manager, _ = await wired(WeComAdapter, settings)
    await wecom_say(wecom_fake, manager, text_message(f"/connect {await issue_code(user, 'wecom')}", msg_id="11"))
    await wecom_say(wecom_fake, manager, text_message("write a report", msg_id="12"))
    await wecom_fake.wait_for("POST", "/cgi-bin/media/upload")
    await manager.idle()
    assert wecom_fake.calls("POST", "/cgi-bin/media/upload")[0].form()["media"] == ("report.md", b"# Report\n")
    sent = [r.json() for r in wecom_fake.calls("POST", "/cgi-bin/message/send")]
    assert {"touser": "zhangsan", "msgtype": "file", "agentid": 1000002, "file": {"media_id": "media_out_1"}} in sent
    assert wecom_texts(wecom_fake)[-1] == "Your report is attached."
