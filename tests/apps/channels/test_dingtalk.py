"""DingTalk Stream mode against a fake gateway: the open-connection endpoint hands out a
websocket endpoint and ticket, and the websocket speaks the Stream protocol's JSON frames
(CALLBACK frames in, acks back), parsed by dingtalk-stream's own classes. Replies go to a fake
session webhook and the robot OpenAPI, over HTTP on loopback."""

from __future__ import annotations

import asyncio
import json
import time
import uuid

import pytest
from aiohttp import WSMsgType, web
from channels.db import database_sync_to_async

from apps.channels.base import ChatRef, Choice, InboundAction
from apps.channels.common import PlatformError
from apps.channels.adapters.dingtalk import BUTTON_CARD_TEMPLATE, DingTalkAdapter
from apps.channels.registry import ADAPTER_MODULES, get_adapter
from harness.testing import call, tool_reply
from tests.apps.channels.fake_platform import FakePlatform, Inbox, RecordingHooks, json_answer
from tests.apps.channels.test_questions import gated_config  # noqa: F401 (the fixture)


class FakeDingTalk(FakePlatform):
    def __init__(self) -> None:
        super().__init__()
        self.to_push: asyncio.Queue[dict] = asyncio.Queue()
        self.acks: list[dict] = []
        self.acked = asyncio.Event()
        self.connections = 0
        self.open_fails = 0
        self.webhook_answer = {"errcode": 0, "errmsg": "ok"}
        self.route("POST", "/v1.0/gateway/connections/open", self._open)
        self.route("GET", "/connect", self._ws)
        self.json_route("POST", "/v1.0/oauth2/accessToken", {"accessToken": "dt-token", "expireIn": 7200})
        self.json_route("POST", "/v1.0/robot/messageFiles/download", lambda r: {"downloadUrl": f"{self.url}/files/photo"})
        self.route("GET", "/files/photo", _photo)
        self.json_route("POST", "/robot/sendBySession", lambda r: self.webhook_answer)
        self.json_route("POST", "/v1.0/robot/groupMessages/send", {"processQueryKey": "pq-group"})
        self.json_route("POST", "/v1.0/robot/oToMessages/batchSend", {"processQueryKey": "pq-direct"})
        # AI cards and media uploads.
        self.card_answer: tuple[int, dict] = (200, {"success": True, "result": {"outTrackId": "x"}})
        self.route("POST", "/v1.0/card/instances/createAndDeliver", self._card)
        self.json_route("PUT", "/v1.0/card/streaming", {"success": True})
        self.json_route("POST", "/media/upload", lambda r: {"errcode": 0, "errmsg": "ok", "type": r.query["type"],
                                                             "media_id": f"@media-{r.query['type']}"})

    async def until(self, predicate, bound: float = 60.0) -> None:
        """Until ``predicate()`` holds, re-checked as requests (or acks) arrive; ``bound`` only
        turns a hang into a failure."""
        deadline = time.monotonic() + bound
        while not predicate():
            if time.monotonic() > deadline:
                raise AssertionError(f"fake DingTalk: condition not met; markdown sent: {self.markdown_texts()}")
            self.arrived.clear()
            try:
                await asyncio.wait_for(self.arrived.wait(), timeout=0.5)
            except TimeoutError:
                pass

    def markdown_texts(self) -> list[str]:
        return [r.json()["markdown"]["text"] for r in self.calls("POST", "/robot/sendBySession")]

    def button_cards(self) -> list[dict]:
        """The question cards sent: the published markdown-with-buttons template."""
        return [b for b in (r.json() for r in self.calls("POST", "/v1.0/card/instances/createAndDeliver"))
                if b["cardTemplateId"] == BUTTON_CARD_TEMPLATE]

    def card_press(self, card: dict, label: str, *, user: str = "staff_alice") -> dict:
        """The card callback DingTalk pushes when ``user`` presses the button ``label``."""
        buttons = json.loads(card["cardData"]["cardParamMap"]["sys_full_json_obj"])["msgButtons"]
        [pressed] = [b["id"] for b in buttons if b["text"] == label]
        space_type, _, space_id = card["openSpaceId"].removeprefix("dtv1.card//").partition(".")
        data = {"extension": "{}", "corpId": "corp_1", "type": "actionCallback", "userId": user, "userIdType": 1,
                "outTrackId": card["outTrackId"], "spaceType": space_type, "spaceId": space_id,
                "content": json.dumps({"cardPrivateData": {"actionIds": [pressed], "params": {}}})}
        return {"specVersion": "1.0", "type": "CALLBACK",
                "headers": {"appId": "app_1", "connectionId": "conn_1", "contentType": "application/json",
                            "messageId": f"frame_{uuid.uuid4().hex}", "time": str(int(time.time() * 1000)),
                            "topic": "/v1.0/card/instances/callback"},
                "data": json.dumps(data)}

    async def _card(self, request: web.Request) -> web.Response:
        status, body = self.card_answer
        return json_answer(body, status)

    async def _open(self, request: web.Request) -> web.Response:
        if self.open_fails:
            self.open_fails -= 1
            return web.json_response({"code": "ServiceUnavailable", "message": "busy"}, status=503)
        return web.json_response({"endpoint": f"ws{self.url[4:]}/connect", "ticket": "ticket/1+2"})

    async def _ws(self, request: web.Request) -> web.WebSocketResponse:
        assert request.query["ticket"] == "ticket/1+2"
        self.connections += 1
        ws = web.WebSocketResponse()
        await ws.prepare(request)

        async def push() -> None:
            while True:
                await ws.send_str(json.dumps(await self.to_push.get()))

        pusher = asyncio.create_task(push())
        try:
            async for msg in ws:
                if msg.type == WSMsgType.TEXT:
                    self.acks.append(json.loads(msg.data))
                    self.acked.set()
        finally:
            pusher.cancel()
        return ws

    def robot_frame(self, **fields) -> dict:
        data = {"conversationId": "cid_direct", "chatbotCorpId": "corp_1", "chatbotUserId": "bot_1", "msgId": uuid.uuid4().hex,
                "senderNick": "Alice", "isAdmin": False, "senderStaffId": "staff_alice", "senderId": "$:LWCP_v1:$alice",
                "sessionWebhookExpiredTime": int(time.time() * 1000) + 3_600_000, "createAt": int(time.time() * 1000),
                "senderCorpId": "corp_1", "conversationType": "1", "isInAtList": True,
                "sessionWebhook": f"{self.url}/robot/sendBySession?session=s1", "robotCode": "ding_client",
                "msgtype": "text", "text": {"content": " hello deer "}}
        data.update(fields)
        return {"specVersion": "1.0", "type": "CALLBACK",
                "headers": {"appId": "app_1", "connectionId": "conn_1", "contentType": "application/json",
                            "messageId": f"frame_{data['msgId']}", "time": str(int(time.time() * 1000)),
                            "topic": "/v1.0/im/bot/messages/get"},
                "data": json.dumps(data)}


async def _photo(request: web.Request) -> web.Response:
    return web.Response(body=b"\x89PNG dingtalk photo", content_type="image/png")


@pytest.fixture
async def fake():
    server = await FakeDingTalk().start()
    yield server
    await server.stop()


@pytest.fixture
async def adapter(fake):
    inbox = Inbox()
    adapter = DingTalkAdapter({"client_id": "ding_client", "client_secret": "ding_secret", "openapi_base": fake.url,
                               "allowed_networks": ["127.0.0.0/8"]}, inbox, RecordingHooks())
    await adapter.start()
    yield adapter, inbox
    await adapter.stop()


async def test_registered():
    assert ADAPTER_MODULES["dingtalk"] == "apps.channels.adapters.dingtalk"
    assert get_adapter("dingtalk") is DingTalkAdapter
    assert DingTalkAdapter.missing_settings({"client_id": "x"}) == ["client_secret"]
    assert DingTalkAdapter.capabilities.edit is False and DingTalkAdapter.capabilities.files_out is True
    assert DingTalkAdapter.connect_hint("ABCD2345")[1].endswith("DingTalk bot in a direct chat: /connect ABCD2345")


async def test_stream_connection_delivers_a_direct_message_and_acks_the_frame(fake, adapter):
    _, inbox = adapter
    frame = fake.robot_frame()
    await fake.to_push.put(frame)
    message = await inbox.next()
    assert message.is_direct and message.mentioned
    assert message.text == "hello deer" and message.sender_id == "staff_alice" and message.sender_name == "Alice"
    assert message.chat == ChatRef(provider="dingtalk", workspace="corp_1", chat="cid_direct")
    opened = fake.calls("POST", "/v1.0/gateway/connections/open")[0].json()
    assert opened["clientId"] == "ding_client" and opened["clientSecret"] == "ding_secret"
    assert opened["subscriptions"] == [{"type": "CALLBACK", "topic": "/v1.0/im/bot/messages/get"},
                                       {"type": "CALLBACK", "topic": "/v1.0/card/instances/callback"}]
    await asyncio.wait_for(fake.acked.wait(), 20)
    ack = fake.acks[0]
    assert ack["code"] == 200 and ack["headers"]["messageId"] == frame["headers"]["messageId"]


async def test_group_message_mention_flag(fake, adapter):
    _, inbox = adapter
    await fake.to_push.put(fake.robot_frame(conversationType="2", conversationId="cid_group", isInAtList=False))
    message = await inbox.next()
    assert not message.is_direct and not message.mentioned


async def test_reply_is_markdown_through_the_session_webhook(fake, adapter):
    dingtalk, inbox = adapter
    await fake.to_push.put(fake.robot_frame())
    message = await inbox.next()
    await dingtalk.send_text(message.chat, "# Answer\nDeer Flow **works**.", reply_to=message.message_id)
    posted = fake.calls("POST", "/robot/sendBySession")[0]
    assert posted.query == {"session": "s1"}
    assert posted.json() == {"msgtype": "markdown", "markdown": {"title": "# Answer", "text": "# Answer\nDeer Flow **works**."}}
    fake.webhook_answer = {"errcode": 300001, "errmsg": "session expired"}
    with pytest.raises(PlatformError, match="errcode 300001: session expired"):
        await dingtalk.send_text(message.chat, "again")


async def test_without_a_live_session_webhook_the_robot_api_sends(fake, adapter):
    dingtalk, inbox = adapter
    await fake.to_push.put(fake.robot_frame(sessionWebhookExpiredTime=int(time.time() * 1000) - 1000))
    direct = await inbox.next()
    await dingtalk.send_text(direct.chat, "later")
    sent = fake.calls("POST", "/v1.0/robot/oToMessages/batchSend")[0]
    assert sent.headers["x-acs-dingtalk-access-token"] == "dt-token"
    body = sent.json()
    assert body["userIds"] == ["staff_alice"] and body["msgKey"] == "sampleMarkdown"
    assert json.loads(body["msgParam"]) == {"title": "later", "text": "later"}
    await dingtalk.send_text(ChatRef(provider="dingtalk", workspace="corp_1", chat="cid_unknown_group"), "scheduled")
    assert fake.calls("POST", "/v1.0/robot/groupMessages/send")[0].json()["openConversationId"] == "cid_unknown_group"
    assert len(fake.calls("POST", "/v1.0/oauth2/accessToken")) == 1  # the token is reused


async def test_a_message_the_bot_starts_goes_to_the_user(fake, adapter):
    dingtalk, _ = adapter
    chat = await dingtalk.direct_chat("staff_carol", "corp_1")
    await dingtalk.send_text(chat, "Your scheduled report is ready.")
    assert fake.calls("POST", "/v1.0/robot/oToMessages/batchSend")[0].json()["userIds"] == ["staff_carol"]


async def test_pictures_and_files_in(fake, adapter):
    _, inbox = adapter
    await fake.to_push.put(fake.robot_frame(msgtype="picture", content={"downloadCode": "code_pic"}, text=None))
    message = await inbox.next()
    assert message.text == ""
    assert await message.files[0].read() == b"\x89PNG dingtalk photo"
    download = fake.calls("POST", "/v1.0/robot/messageFiles/download")[0]
    assert download.json() == {"robotCode": "ding_client", "downloadCode": "code_pic"}
    await fake.to_push.put(fake.robot_frame(msgtype="file", content={"downloadCode": "code_doc", "fileName": "plan.docx"}))
    doc = await inbox.next()
    assert doc.files[0].name == "plan.docx"
    rich = {"richText": [{"text": "see"}, {"downloadCode": "code_rich", "type": "picture"}, {"text": "this"}]}
    await fake.to_push.put(fake.robot_frame(msgtype="richText", content=rich))
    message = await inbox.next()
    assert message.text == "see\nthis" and len(message.files) == 1


async def test_loopback_platform_urls_are_refused_without_allowed_networks(fake):
    inbox = Inbox()
    adapter = DingTalkAdapter({"client_id": "ding_client", "client_secret": "s", "openapi_base": fake.url}, inbox)
    with pytest.raises(PlatformError, match="refused"):
        await adapter._access_token()


async def test_outage_of_the_gateway_is_retried(fake, adapter):
    _, inbox = adapter
    await fake.to_push.put(fake.robot_frame(text={"content": "first"}))
    assert (await inbox.next()).text == "first"
    # The gateway tells the client to go away; the client reconnects through a failing open call.
    fake.open_fails = 1
    await fake.to_push.put({"specVersion": "1.0", "type": "SYSTEM", "headers": {"messageId": "sys_1", "topic": "disconnect",
                                                                                "contentType": "application/json"}, "data": "{}"})
    await fake.wait_for("POST", "/v1.0/gateway/connections/open", 3)
    await fake.to_push.put(fake.robot_frame(text={"content": "after the outage"}))
    assert (await inbox.next(timeout=30)).text == "after the outage"
    assert fake.connections == 2
    hooks = adapter[0].hooks
    assert len(hooks.connected_as) == 2 and hooks.events == 2
    assert any("HTTP 503" in e for e in hooks.errors)


# --- AI cards and files out, end to end through the manager ---------------------------------

def _card_updates(fake) -> list[dict]:
    return [r.json() for r in fake.calls("PUT", "/v1.0/card/streaming")]


@pytest.fixture
async def card_bot(fake, user):
    from channels.db import database_sync_to_async

    from apps.channels.connections import connect_code_issue
    from tests.support.channels import make_manager

    made = []

    async def make(**extra):
        settings = {"client_id": "ding_client", "client_secret": "s", "openapi_base": fake.url, "oapi_base": fake.url,
                    "allowed_networks": ["127.0.0.0/8"], **extra}
        manager, adapter = make_manager(DingTalkAdapter, adapter_settings=settings)
        await adapter.start()
        made.append((manager, adapter))
        issued = await database_sync_to_async(connect_code_issue)(user=user, provider="dingtalk", ttl_seconds=600)
        before = len(fake.calls("POST", "/robot/sendBySession"))
        await fake.to_push.put(fake.robot_frame(text={"content": f"/connect {issued.code}"}))
        await fake.wait_for("POST", "/robot/sendBySession", before + 1)
        return manager, adapter

    yield make
    for manager, adapter in made:
        await manager.idle()
        await adapter.stop()
        await manager.close()


@pytest.mark.django_db(transaction=True)
async def test_with_a_card_template_the_answer_streams_into_an_ai_card(fake, card_bot, scripted_agent):
    scripted_agent("The card holds the **whole** answer.")
    manager, _ = await card_bot(card_template_id="tpl.ai.card")
    await fake.to_push.put(fake.robot_frame(text={"content": "explain"}))
    await fake.wait_for("PUT", "/v1.0/card/streaming")
    await manager.idle()
    created = fake.calls("POST", "/v1.0/card/instances/createAndDeliver")[0]
    body = created.json()
    assert created.headers["x-acs-dingtalk-access-token"] == "dt-token"
    assert body["cardTemplateId"] == "tpl.ai.card" and body["cardData"] == {"cardParamMap": {"content": "Working on it…"}}
    assert body["openSpaceId"] == "dtv1.card//IM_ROBOT.staff_alice" and body["imRobotOpenDeliverModel"] == {"spaceType": "IM_ROBOT"}
    final = _card_updates(fake)[-1]
    assert final["outTrackId"] == body["outTrackId"] and final["key"] == "content" and final["isFull"] is True
    assert final["isFinalize"] is True and final["content"] == "The card holds the **whole** answer."
    markdown = [r.json()["markdown"]["text"] for r in fake.calls("POST", "/robot/sendBySession")]
    assert "The card holds the **whole** answer." not in markdown, "answered in the card, not again as markdown"


@pytest.mark.django_db(transaction=True)
async def test_a_card_that_cannot_be_created_falls_back_to_markdown(fake, card_bot, scripted_agent):
    scripted_agent("Plain markdown after all.")
    fake.card_answer = (400, {"code": "param.invalid", "message": "template not found"})
    manager, _ = await card_bot(card_template_id="tpl.missing")
    before = len(fake.calls("POST", "/robot/sendBySession"))
    await fake.to_push.put(fake.robot_frame(text={"content": "explain"}))
    await fake.wait_for("POST", "/robot/sendBySession", before + 1)
    await manager.idle()
    assert fake.calls("POST", "/robot/sendBySession")[-1].json()["markdown"]["text"] == "Plain markdown after all."
    assert _card_updates(fake) == []


@pytest.mark.django_db(transaction=True)
async def test_without_a_card_template_no_card_is_made(fake, card_bot, scripted_agent):
    scripted_agent("Markdown as before.")
    manager, _ = await card_bot()
    before = len(fake.calls("POST", "/robot/sendBySession"))
    await fake.to_push.put(fake.robot_frame(text={"content": "hi"}))
    await fake.wait_for("POST", "/robot/sendBySession", before + 1)
    await manager.idle()
    assert fake.calls("POST", "/robot/sendBySession")[-1].json()["markdown"]["text"] == "Markdown as before."
    assert fake.calls("POST", "/v1.0/card/instances/createAndDeliver") == []


async def test_files_go_out_through_the_media_upload(fake):
    adapter = DingTalkAdapter({"client_id": "ding_client", "client_secret": "s", "openapi_base": fake.url, "oapi_base": fake.url,
                               "allowed_networks": ["127.0.0.0/8"]}, Inbox())
    chat = await adapter.direct_chat("staff_carol", "corp_1")
    await adapter.send_file(chat, "report.md", b"# Report\n", content_type="text/markdown")
    upload = fake.calls("POST", "/media/upload")[0]
    assert upload.query == {"access_token": "dt-token", "type": "file"}
    assert upload.form()["media"] == ("report.md", b"# Report\n")
    sent = fake.calls("POST", "/v1.0/robot/oToMessages/batchSend")[0].json()
    assert sent["userIds"] == ["staff_carol"] and sent["msgKey"] == "sampleFile"
    assert json.loads(sent["msgParam"]) == {"mediaId": "@media-file", "fileName": "report.md", "fileType": "md"}
    group = ChatRef(provider="dingtalk", workspace="corp_1", chat="cid_team")
    await adapter.send_file(group, "chart.png", b"\x89PNG chart")
    image = fake.calls("POST", "/v1.0/robot/groupMessages/send")[0].json()
    assert image["msgKey"] == "sampleImageMsg" and json.loads(image["msgParam"]) == {"photoURL": "@media-image"}
    with pytest.raises(PlatformError, match="DingTalk takes files up to"):
        await adapter.send_file(chat, "huge.bin", b"0" * (20 * 1024 * 1024 + 1))


# --- questions and approvals: a card with buttons, pressed over the Stream connection -----------

async def test_without_a_template_or_when_the_card_is_refused_the_answers_are_numbered(fake):
    choices = [Choice("Approve once", "dfq:1:abc:0"), Choice("Deny", "dfq:1:abc:1")]
    numbered = "Approve?\n\n1. Approve once\n2. Deny\n\nReply with the number."
    settings = {"client_id": "ding_client", "client_secret": "s", "openapi_base": fake.url, "allowed_networks": ["127.0.0.0/8"]}
    plain = DingTalkAdapter(settings, Inbox())
    chat = await plain.direct_chat("staff_carol", "corp_1")
    await plain.send_choices(chat, "Approve?", choices)
    assert fake.calls("POST", "/v1.0/card/instances/createAndDeliver") == []
    assert json.loads(fake.calls("POST", "/v1.0/robot/oToMessages/batchSend")[0].json()["msgParam"])["text"] == numbered
    fake.card_answer = (403, {"code": "Forbidden.AccessDenied", "message": "no card permission"})
    hooks = RecordingHooks()
    refused = DingTalkAdapter({**settings, "card_template_id": "tpl.ai.card"}, Inbox(), hooks)
    await refused.send_choices(chat, "Approve?", choices)
    assert len(fake.button_cards()) == 1, "the card was tried"
    assert json.loads(fake.calls("POST", "/v1.0/robot/oToMessages/batchSend")[1].json()["msgParam"])["text"] == numbered
    assert any("no card permission" in e for e in hooks.errors)


async def test_a_press_on_a_card_from_before_a_restart_names_the_group(fake, adapter):
    _, inbox = adapter
    card = {"outTrackId": "track_old", "openSpaceId": "dtv1.card//IM_GROUP.cid_team",
            "cardData": {"cardParamMap": {"sys_full_json_obj": json.dumps({"msgButtons": [{"text": "Deny", "id": "dfq:7:abc:2"}]})}}}
    frame = fake.card_press(card, "Deny", user="staff_bob")
    await fake.to_push.put(frame)
    pressed = await inbox.next()
    assert isinstance(pressed, InboundAction)
    assert pressed.chat == ChatRef(provider="dingtalk", workspace="corp_1", chat="cid_team")
    assert pressed.sender_id == "staff_bob" and pressed.data == "dfq:7:abc:2"
    await fake.until(lambda: any(a["headers"]["messageId"] == frame["headers"]["messageId"] for a in fake.acks))


CMD = "rm -f /mnt/user-data/outputs/old.txt && echo tidied"


def _approval_runs():
    from apps.governance.models import ApprovalDecision
    from apps.runs.models import Run

    return ([r.status for r in Run.objects.order_by("created_at")],
            list(ApprovalDecision.objects.values_list("decision", "tool", "decided_by")))


def _finished_cards(fake) -> list[str]:
    return [u["content"] for u in _card_updates(fake) if u["isFinalize"]]


async def _approval_asked(fake, card_bot, scripted_lead, after: str):
    """A connected user asks for something the approval gate stops; (manager, question card).
    ``after`` is what the agent says once the run goes on."""
    scripted_lead(tool_reply(call("bash", command=CMD, description="tidy the outputs")), after)
    manager, _ = await card_bot(card_template_id="tpl.ai.card")
    await fake.to_push.put(fake.robot_frame(text={"content": "tidy my outputs"}))
    await fake.until(fake.button_cards)
    await manager.idle()
    [card] = fake.button_cards()
    return manager, card


@pytest.mark.django_db(transaction=True)
async def test_an_approval_round_trip_by_a_card_button(fake, card_bot, scripted_lead, gated_config, user):
    manager, card = await _approval_asked(fake, card_bot, scripted_lead, "All tidy.")
    params = card["cardData"]["cardParamMap"]
    assert "Approval needed" in params["markdown"] and "risky-shell" in params["markdown"]
    buttons = json.loads(params["sys_full_json_obj"])["msgButtons"]
    assert [b["text"] for b in buttons] == ["Approve once", "Approve always in this chat", "Deny"]
    assert all(b["request"] is True for b in buttons) and card["callbackType"] == "STREAM"
    assert card["openSpaceId"] == "dtv1.card//IM_ROBOT.staff_alice"
    assert (await database_sync_to_async(_approval_runs)())[0] == ["interrupted"]

    await fake.to_push.put(fake.card_press(card, "Approve once"))
    await fake.until(lambda: "All tidy." in _finished_cards(fake))
    await manager.idle()
    assert "Answer: Approve once" in fake.markdown_texts()
    statuses, decisions = await database_sync_to_async(_approval_runs)()
    assert statuses == ["interrupted", "success"] and decisions == [("approved", "bash", str(user.pk))]


@pytest.mark.django_db(transaction=True)
async def test_a_stale_press_and_someone_elses_press_change_nothing(fake, card_bot, scripted_lead, gated_config, user):
    manager, card = await _approval_asked(fake, card_bot, scripted_lead, "Not run, as you said.")

    await fake.to_push.put(fake.card_press(card, "Approve once", user="staff_mallory"))  # not connected, not asked
    await fake.until(lambda: any(t.startswith("Only the person who was asked") for t in fake.markdown_texts()))
    await fake.to_push.put(fake.card_press(card, "Deny"))
    await fake.until(lambda: "Not run, as you said." in _finished_cards(fake))
    await manager.idle()
    await fake.to_push.put(fake.card_press(card, "Approve once"))  # the run moved on: too late
    await fake.until(lambda: any(t.startswith("That question is no longer open") for t in fake.markdown_texts()))
    await manager.idle()
    statuses, decisions = await database_sync_to_async(_approval_runs)()
    assert statuses == ["interrupted", "success"] and decisions == [("denied", "bash", str(user.pk))]
