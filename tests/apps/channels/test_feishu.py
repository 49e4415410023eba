"""Feishu/Lark adapter against a fake Open API server, driven through lark-oapi's own parsing:
the long-connection client's protobuf frames, the webhook dispatcher (plain and encrypted),
and the SDK's HTTP client for replies, card patches, uploads and downloads."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest
from django.test import AsyncClient

from apps.channels.base import ChatRef, SentMessage
from apps.channels.common import PlatformError
from apps.channels.adapters.feishu import FeishuAdapter, base_url
from apps.channels.registry import ADAPTER_MODULES, get_adapter
from tests.apps.channels.fake_platform import Inbox, RecordingHooks
from tests.apps.channels.feishu_fake import BOT_OPEN_ID, TOKEN, FakeFeishu, encrypt, message_event, signed_headers

pytestmark = pytest.mark.asyncio(loop_scope="function")


@pytest.fixture
async def fake():
    server = await FakeFeishu().start()
    yield server
    await server.stop()


def settings_for(fake, **extra):
    # A fresh app id per test: lark-oapi caches tenant tokens per app id for the whole process.
    return {"app_id": f"cli_{uuid.uuid4().hex[:8]}", "app_secret": "secret_test", "base_url": fake.url, **extra}


@pytest.fixture
async def adapter_ws(fake):
    inbox = Inbox()
    adapter = FeishuAdapter(settings_for(fake), inbox, RecordingHooks())
    await adapter.start()
    yield adapter, inbox
    await adapter.stop()


async def test_registered_and_domains():
    assert ADAPTER_MODULES["feishu"] == "apps.channels.adapters.feishu"
    assert get_adapter("feishu") is FeishuAdapter
    assert base_url({"domain": "lark"}) == "https://open.larksuite.com"
    assert base_url({}) == "https://open.feishu.cn"
    assert FeishuAdapter.missing_settings({"domain": "wechat"}) == ["app_id", "app_secret", "domain (feishu or lark)"]
    assert FeishuAdapter.missing_settings({"app_id": "a", "app_secret": "b", "domain": "lark"}) == []


async def test_long_connection_delivers_a_direct_message_and_acknowledges_it(fake, adapter_ws):
    adapter, inbox = adapter_ws
    await fake.to_push.put(message_event(text="what is deer flow?"))
    message = await inbox.next()
    assert message.is_direct and message.mentioned
    assert message.text == "what is deer flow?"
    assert message.sender_id == "ou_alice"
    assert message.chat == ChatRef(provider="feishu", workspace="tenant_1", chat="oc_chat", topic="")
    await asyncio.wait_for(fake.acked.wait(), 20)
    assert fake.acks[0]["code"] == 200
    endpoint = fake.calls("POST", "/callback/ws/endpoint")[0].json()
    assert endpoint == {"AppID": adapter.settings["app_id"], "AppSecret": "secret_test"}


async def test_the_long_connection_comes_back_after_an_outage(fake, adapter_ws):
    adapter, inbox = adapter_ws
    await fake.to_push.put(message_event(text="before", message_id="om_before"))
    assert (await inbox.next()).text == "before"
    await adapter.hooks.until(lambda: adapter.hooks.connected_as)
    assert adapter.hooks.connected_as == ["DeerFlow"] and adapter.hooks.events == 1
    await fake.drop()
    # The SDK redials (the endpoint is asked for a fresh URL) and messages flow again.
    await fake.wait_for("POST", "/callback/ws/endpoint", 2)
    await fake.to_push.put(message_event(text="after", message_id="om_after"))
    assert (await inbox.next()).text == "after"
    await adapter.hooks.until(lambda: len(adapter.hooks.connected_as) == 2)
    assert any("reconnecting" in e for e in adapter.hooks.errors)


async def test_group_mentions(fake, adapter_ws):
    adapter, inbox = adapter_ws
    bot = {"key": "@_user_1", "id": {"open_id": BOT_OPEN_ID}, "name": "DeerFlow", "tenant_key": "tenant_1"}
    carol = {"key": "@_user_2", "id": {"open_id": "ou_carol"}, "name": "Carol", "tenant_key": "tenant_1"}
    await fake.to_push.put(message_event(text="@_user_1 summarise for @_user_2", chat_type="group", mentions=[bot, carol],
                                         message_id="om_g1", thread_id="omt_1"))
    addressed = await inbox.next()
    assert not addressed.is_direct and addressed.mentioned
    assert addressed.text == "summarise for @Carol"
    assert addressed.chat.topic == "omt_1"
    await fake.to_push.put(message_event(text="@_user_2 not for the bot", chat_type="group", mentions=[carol], message_id="om_g2"))
    other = await inbox.next()
    assert not other.mentioned


async def test_reply_card_is_patched_as_the_answer_streams(fake):
    adapter = FeishuAdapter(settings_for(fake), Inbox())
    chat = ChatRef(provider="feishu", workspace="tenant_1", chat="oc_chat")
    sent = await adapter.send_text(chat, "Deer", reply_to="om_in_1")
    await adapter.edit_text(sent, "Deer Flow is a **super agent**.")
    token_call = fake.calls("POST", "/open-apis/auth/v3/tenant_access_token/internal")[0].json()
    assert token_call == {"app_id": adapter.settings["app_id"], "app_secret": "secret_test"}
    reply = fake.calls("POST", "/open-apis/im/v1/messages/om_in_1/reply")[0]
    assert reply.headers["Authorization"] == f"Bearer {TOKEN}"
    body = reply.json()
    assert body["msg_type"] == "interactive" and body["reply_in_thread"] is False
    assert json.loads(body["content"])["elements"][0]["content"] == "Deer"
    patch = fake.calls("PATCH", f"/open-apis/im/v1/messages/{sent.message_id}")[0].json()
    card = json.loads(patch["content"])
    assert card["config"]["update_multi"] is True
    assert card["elements"][0]["content"] == "Deer Flow is a **super agent**."


async def test_a_new_message_goes_to_the_chat_and_a_topic_reply_stays_in_its_thread(fake):
    adapter = FeishuAdapter(settings_for(fake), Inbox())
    await adapter.send_text(ChatRef(provider="feishu", workspace="t", chat="oc_chat"), "hi")
    create = fake.calls("POST", "/open-apis/im/v1/messages")[0]
    assert create.query == {"receive_id_type": "chat_id"} and create.json()["receive_id"] == "oc_chat"
    await adapter.send_text(ChatRef(provider="feishu", workspace="t", chat="oc_chat", topic="omt_1"), "in topic", reply_to="om_g1")
    assert fake.calls("POST", "/open-apis/im/v1/messages/om_g1/reply")[0].json()["reply_in_thread"] is True


async def test_a_message_the_bot_starts_goes_to_the_person_by_open_id(fake):
    adapter = FeishuAdapter(settings_for(fake), Inbox())
    chat = await adapter.direct_chat("ou_alice", "tenant_1")
    await adapter.send_text(chat, "Your scheduled report is ready.")
    create = fake.calls("POST", "/open-apis/im/v1/messages")[0]
    assert create.query == {"receive_id_type": "open_id"} and create.json()["receive_id"] == "ou_alice"


async def test_api_errors_raise_with_the_platform_reason(fake):
    adapter = FeishuAdapter(settings_for(fake), Inbox())
    fake.patch_answer = {"code": 230001, "msg": "message not found"}
    with pytest.raises(PlatformError, match="card update failed: code 230001: message not found"):
        await adapter.edit_text(SentMessage(chat=ChatRef(provider="feishu", workspace="", chat="oc"), message_id="om_gone"), "x")


async def test_files_in_image_and_file_are_downloaded_through_the_api(fake, adapter_ws):
    adapter, inbox = adapter_ws
    await fake.to_push.put(message_event(message_type="image", content={"image_key": "img_key_1"}, message_id="om_img"))
    image = (await inbox.next()).files[0]
    assert await image.read() == b"\x89PNG fake image"
    download = fake.calls("GET", "/open-apis/im/v1/messages/om_img/resources/img_key_1")[0]
    assert download.query == {"type": "image"}
    await fake.to_push.put(message_event(message_type="file", content={"file_key": "file_key_1", "file_name": "report.pdf"},
                                         message_id="om_file"))
    file = (await inbox.next()).files[0]
    assert file.name == "report.pdf" and await file.read() == b"%PDF-1.4 fake"
    post = {"title": "Look", "content": [[{"tag": "text", "text": "at this "}, {"tag": "img", "image_key": "img_key_1"}]]}
    await fake.to_push.put(message_event(message_type="post", content=post, message_id="om_post"))
    rich = await inbox.next()
    assert rich.text == "Look\nat this"
    assert len(rich.files) == 1


async def test_files_out_upload_then_send(fake):
    adapter = FeishuAdapter(settings_for(fake), Inbox())
    chat = ChatRef(provider="feishu", workspace="t", chat="oc_chat")
    await adapter.send_file(chat, "chart.png", b"\x89PNG chart", reply_to="om_in_1")
    form = fake.calls("POST", "/open-apis/im/v1/images")[0].form()
    assert form["image_type"][1] == b"message" and form["image"][1] == b"\x89PNG chart"
    sent = fake.calls("POST", "/open-apis/im/v1/messages/om_in_1/reply")[0].json()
    assert sent["msg_type"] == "image" and json.loads(sent["content"]) == {"image_key": "img_out_1"}
    await adapter.send_file(chat, "summary.pdf", b"%PDF out")
    form = fake.calls("POST", "/open-apis/im/v1/files")[0].form()
    assert form["file_type"][1] == b"pdf" and form["file_name"][1] == b"summary.pdf" and form["file"][1] == b"%PDF out"
    assert json.loads(fake.calls("POST", "/open-apis/im/v1/messages")[0].json()["content"]) == {"file_key": "file_out_1"}


# --- HTTP callback mode -----------------------------------------------------------------------

@pytest.fixture
async def webhook_adapter(fake, channels_config, channel_layer):
    def configure(**keys):
        settings = settings_for(fake, mode="webhook", **keys)
        channels_config(feishu=settings)
        return settings

    inbox = Inbox()
    started = []

    async def start(**keys):
        adapter = FeishuAdapter(configure(**keys), inbox)
        await adapter.start()
        started.append(adapter)
        return adapter

    yield start, inbox
    for adapter in started:
        await adapter.stop()


URL = "/api/channels/feishu/events"


async def test_callback_not_configured_is_404(channels_config):
    channels_config()
    response = await AsyncClient().post(URL, data="{}", content_type="application/json")
    assert response.status_code == 404 and "not configured" in response.json()["detail"]


async def test_callback_plain_event_with_token(webhook_adapter):
    start, inbox = webhook_adapter
    await start(verification_token="vtoken")
    client = AsyncClient()
    challenge = await client.post(URL, data=json.dumps({"type": "url_verification", "challenge": "c-123", "token": "vtoken"}),
                                  content_type="application/json")
    assert challenge.status_code == 200 and challenge.json() == {"challenge": "c-123"}
    ok = await client.post(URL, data=json.dumps(message_event(text="via callback")), content_type="application/json")
    assert ok.status_code == 200
    message = await inbox.next()
    assert message.text == "via callback" and message.sender_id == "ou_alice"
    bad = await client.post(URL, data=json.dumps(message_event(text="forged", token="wrong")), content_type="application/json")
    assert bad.status_code == 401 and "verification_token" in bad.json()["detail"]
    unknown = dict(message_event(), header={**message_event()["header"], "event_type": "im.chat.updated_v1"})
    ignored = await client.post(URL, data=json.dumps(unknown), content_type="application/json")
    assert ignored.status_code == 200 and ignored.json()["detail"].startswith("ignored")
    # Only the verified message reached the adapter.
    await client.post(URL, data=json.dumps(message_event(text="second")), content_type="application/json")
    assert (await inbox.next()).text == "second"
    assert [m.text for m in inbox.messages] == ["via callback", "second"]


async def test_callback_encrypted_event_and_signature(webhook_adapter):
    start, inbox = webhook_adapter
    await start(verification_token="vtoken", encrypt_key="ekey-123")
    client = AsyncClient()
    body = json.dumps({"encrypt": encrypt("ekey-123", json.dumps(message_event(text="secret hello")))}).encode()
    ok = await client.post(URL, data=body, content_type="application/json", **signed_headers("ekey-123", body))
    assert ok.status_code == 200
    assert (await inbox.next()).text == "secret hello"
    forged = await client.post(URL, data=body, content_type="application/json", **signed_headers("other-key", body))
    assert forged.status_code == 401 and "signature" in forged.json()["detail"]
    wrong_key = json.dumps({"encrypt": encrypt("not-our-key", json.dumps(message_event()))}).encode()
    refused = await client.post(URL, data=wrong_key, content_type="application/json", **signed_headers("ekey-123", wrong_key))
    assert refused.status_code == 401
    assert len(inbox.messages) == 1


async def test_a_question_card_has_buttons_and_a_press_comes_back_over_the_long_connection(fake, adapter_ws):
    from apps.channels.base import Choice
    from tests.apps.channels.feishu_fake import card_action_event

    adapter, inbox = adapter_ws
    await adapter.send_choices(ChatRef(provider="feishu", workspace="tenant_1", chat="oc_chat"), "Approve?",
                               [Choice("Approve once", "dfq:1:abc:0"), Choice("Deny", "dfq:1:abc:2")])
    card = json.loads(fake.calls("POST", "/open-apis/im/v1/messages")[0].json()["content"])
    [action] = [e for e in card["elements"] if e["tag"] == "action"]
    assert [(b["text"]["content"], b["value"]) for b in action["actions"]] == [("Approve once", {"dfq": "dfq:1:abc:0"}),
                                                                            ("Deny", {"dfq": "dfq:1:abc:2"})]
    await fake.to_push.put(card_action_event({"dfq": "dfq:1:abc:2"}))
    pressed = await inbox.next()
    assert (pressed.data, pressed.sender_id, pressed.chat, pressed.reply_to) == (
        "dfq:1:abc:2", "ou_alice", ChatRef(provider="feishu", workspace="tenant_1", chat="oc_chat"), "om_card")
    await asyncio.wait_for(fake.acked.wait(), 20)
    assert fake.acks[-1]["code"] == 200  # answered (with a toast) inside Feishu's 3 s


async def test_a_card_press_through_the_callback_route(webhook_adapter):
    from tests.apps.channels.feishu_fake import card_action_event

    start, inbox = webhook_adapter
    await start(verification_token="vtoken")
    client = AsyncClient()
    ok = await client.post(URL, data=json.dumps(card_action_event({"dfq": "dfq:1:abc:0"})), content_type="application/json")
    assert ok.status_code == 200 and ok.json()["toast"]["content"] == "Got it"
    assert (await inbox.next()).data == "dfq:1:abc:0"
    forged = await client.post(URL, data=json.dumps(card_action_event({"dfq": "dfq:1:abc:0"}, token="wrong")),
                               content_type="application/json")
    assert forged.status_code == 401
