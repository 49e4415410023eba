"""DingTalk Stream-mode robot through dingtalk-stream.

The SDK's frame protocol (``CallbackMessage``/``ChatbotMessage`` parsing, acknowledgements,
the ``disconnect`` system topic) runs unchanged through ``DingTalkStreamClient.route_message``.
Its connection loop and HTTP helpers are replaced: they use blocking ``requests`` on the event
loop, a fixed endpoint from an environment variable, and a UDP probe of a public address to
find the local IP. Here the open-connection call, the access token, file downloads and the
replies go through the SSRF guard with httpx, and reconnects back off.

Replies are markdown messages posted to the conversation's session webhook (valid for about
an hour after the user's message); past that, or for a message nobody prompted (a scheduled
run), the robot's OpenAPI send endpoints are used. DingTalk cannot edit those messages, so the
manager sends the finished answer once (``capabilities.edit`` is false).

With ``card_template_id`` (an AI card template made in DingTalk's card platform, with a
``content`` variable) an answer streams instead: an AI card is created and delivered into the
chat when the run starts, its ``content`` is replaced as the answer grows, and the last update
finalizes it. A card that cannot be created or finished falls back to the markdown message.

A question or an approval (apps/channels/questions.py) goes out, when ``card_template_id`` is
set, as an interactive card with one callback button per answer: DingTalk's published
markdown-with-buttons template (the one dingtalk-stream's ``MarkdownButtonCardInstance`` sends),
each button's id being the ``dfq:`` data. A press arrives over the same Stream connection as a
card callback (topic ``/v1.0/card/instances/callback``, parsed by the SDK's
``CardCallbackMessage``) and goes to the manager as an ``InboundAction``. Without a template, or
when the card is refused, the answers are numbered lines.

Presented files go out through the media upload (``oapi.dingtalk.com/media/upload``) and the
robot's ``sampleImageMsg``/``sampleFile`` messages, up to 20 MB.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote_plus

import dingtalk_stream
import websockets
from dingtalk_stream import AckMessage, CardCallbackMessage, ChatbotMessage
from dingtalk_stream.card_callback import Card_Callback_Router_Topic
from dingtalk_stream.version import VERSION_STRING

from apps.channels.base import (
    Capabilities, ChannelAdapter, ChatRef, Choice, InboundAction, InboundFile, InboundMessage, SentMessage,
)
from apps.channels.common import PlatformError, direct_chat_hint, download, guard_policy, is_image, run_with_backoff
from apps.channels.registry import register
from apps.channels.turns import split_text
from harness.net import GuardError, guarded_client

log = logging.getLogger(__name__)

OPENAPI = "https://api.dingtalk.com"
OAPI = "https://oapi.dingtalk.com"  # the older API: media uploads
MAX_DOWNLOAD = 50 * 1024 * 1024
MAX_UPLOAD = 20 * 1024 * 1024
CARD = "card:"  # a SentMessage id naming an AI card (its outTrackId) rather than a message
USER_CHAT = "user:"  # a ChatRef.chat naming a person rather than a conversation (direct_chat)
# DingTalk's published markdown card with a button row (``markdown``, ``tips``, and
# ``sys_full_json_obj.msgButtons``); a button with ``request: true`` calls back with its id.
BUTTON_CARD_TEMPLATE = "1366a1eb-bc54-4859-ac88-517c56a9acb1.schema"
CHOICE_CARDS_KEPT = 500  # question cards whose chat is remembered for their presses


@dataclass
class _Conversation:
    webhook: str
    expires_at: float  # epoch seconds
    is_direct: bool
    user_id: str  # the staff id a one-to-one fallback message is addressed to


class _Client(dingtalk_stream.DingTalkStreamClient):
    def get_host_ip(self) -> str:  # the SDK probes 8.8.8.8 for this; the gateway does not need it
        return ""


class _Handler(dingtalk_stream.ChatbotHandler):
    def __init__(self, adapter: DingTalkAdapter) -> None:
        super().__init__()
        self.adapter = adapter

    async def process(self, callback: dingtalk_stream.CallbackMessage) -> tuple[int, str]:
        try:
            incoming = ChatbotMessage.from_dict(callback.data)
        except Exception as exc:  # malformed: acknowledged (so it is not redelivered) and logged
            log.warning("dingtalk: malformed robot message ignored: %s", exc)
            self.adapter.spawn(self.adapter.hooks.error(f"malformed robot message ignored: {exc}"))
            return AckMessage.STATUS_OK, "ignored"
        message = self.adapter.translate(incoming)
        if message is not None:
            # The ack goes back at once; the answer follows through the session webhook.
            self.adapter.spawn(self.adapter.deliver(message))
        return AckMessage.STATUS_OK, "OK"


class _CardHandler(dingtalk_stream.CallbackHandler):
    """Presses of a question card's buttons (the card callback topic)."""

    def __init__(self, adapter: DingTalkAdapter) -> None:
        super().__init__()
        self.adapter = adapter

    async def process(self, callback: dingtalk_stream.CallbackMessage) -> tuple[int, str]:
        data = callback.data if isinstance(callback.data, dict) else {}
        try:
            card = CardCallbackMessage.from_dict(data)
        except (ValueError, TypeError, AttributeError) as exc:  # malformed: acknowledged (so it is not redelivered) and logged
            log.warning("dingtalk: malformed card callback ignored: %s", exc)
            self.adapter.spawn(self.adapter.hooks.error(f"malformed card callback ignored: {exc}"))
            return AckMessage.STATUS_OK, "{}"
        pressed = self.adapter.pressed(card, space_type=str(data.get("spaceType") or ""),
                                       space_id=str(data.get("spaceId") or ""), press_id=callback.headers.message_id or "")
        if pressed is not None:
            self.adapter.spawn(self.adapter.deliver(pressed))
        # An empty answer leaves the card as it is; the manager replies in the chat.
        return AckMessage.STATUS_OK, "{}"


@register
class DingTalkAdapter(ChannelAdapter):
    provider = "dingtalk"
    display_name = "DingTalk"
    capabilities = Capabilities(edit=False, edit_interval=1.0, max_text=5000, files_out=True, max_file_in=MAX_DOWNLOAD)
    credential_fields = ("client_id", "client_secret")

    @classmethod
    def connect_hint(cls, code: str, *, bot_name: str = "", settings: Mapping[str, Any] | None = None) -> tuple[str, str]:
        return direct_chat_hint(cls.display_name, code)

    def __init__(self, settings: Mapping[str, Any], sink: Any, hooks: Any = None) -> None:
        super().__init__(settings, sink, hooks)
        self.base = str(settings.get("openapi_base") or OPENAPI).rstrip("/")
        self.oapi = str(settings.get("oapi_base") or OAPI).rstrip("/")
        self.card_template_id = str(settings.get("card_template_id") or "").strip()
        self.policy = guard_policy(settings)
        credential = dingtalk_stream.Credential(str(settings.get("client_id", "")), str(settings.get("client_secret", "")))
        self.client = _Client(credential, logger=logging.getLogger("dingtalk_stream.client"))
        self.client.register_callback_handler(ChatbotMessage.TOPIC, _Handler(self))
        self.client.register_callback_handler(Card_Callback_Router_Topic, _CardHandler(self))
        # outTrackId -> (chat, message answered) of the question cards sent since the start.
        self.choice_cards: OrderedDict[str, tuple[ChatRef, str]] = OrderedDict()
        self.conversations: dict[str, _Conversation] = {}
        self._token: tuple[str, float] | None = None
        self._stopping = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._ws: Any = None
        self._tasks: set[asyncio.Task] = set()

    # --- receiving ---------------------------------------------------------------------------

    async def deliver(self, message: InboundMessage | InboundAction) -> None:
        await self.hooks.event()
        await self.sink(message)

    def spawn(self, coro: Any) -> None:
        # The loop keeps only weak references to tasks: hold them until they finish.
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def start(self) -> None:
        self._stopping.clear()
        self.client.pre_start()
        self._task = asyncio.create_task(run_with_backoff("dingtalk", self._connect_once, self._stopping,
                                                          on_error=self.hooks.error))

    async def stop(self) -> None:
        self._stopping.set()
        if self._ws is not None:
            await self._ws.close()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _connect_once(self) -> None:
        body = {"clientId": self.client.credential.client_id, "clientSecret": self.client.credential.client_secret,
                "subscriptions": [{"type": "CALLBACK", "topic": ChatbotMessage.TOPIC},
                                  {"type": "CALLBACK", "topic": Card_Callback_Router_Topic}],
                "ua": f"deerflow dingtalk-stream/{VERSION_STRING}", "localIp": ""}
        connection = await self._post(f"{self.base}/v1.0/gateway/connections/open", body, "open connection")
        if not connection.get("endpoint") or not connection.get("ticket"):
            raise PlatformError(f"dingtalk open connection answered without an endpoint: {sorted(connection)}")
        uri = f"{connection['endpoint']}?ticket={quote_plus(connection['ticket'])}"
        async with websockets.connect(uri) as ws:
            self._ws = self.client.websocket = ws
            await self.hooks.connected()
            try:
                async for raw in ws:
                    try:
                        frame = json.loads(raw)
                    except ValueError:
                        log.warning("dingtalk: unreadable frame ignored")
                        continue
                    # route_message parses the frame, calls our handler and sends the ack.
                    self.spawn(self.client.background_task(frame))
            finally:
                self._ws = None

    def translate(self, incoming: ChatbotMessage) -> InboundMessage | None:
        if not incoming.conversation_id or not (incoming.sender_staff_id or incoming.sender_id):
            log.warning("dingtalk: robot message without conversation or sender ignored")
            return None
        is_direct = str(incoming.conversation_type) == "1"
        sender = incoming.sender_staff_id or incoming.sender_id
        if incoming.session_webhook:
            expires = (incoming.session_webhook_expired_time or 0) / 1000 or time.time() + 3600
            self.conversations[incoming.conversation_id] = _Conversation(incoming.session_webhook, expires, is_direct,
                                                                         incoming.sender_staff_id or "")
        text_parts = incoming.get_text_list() or []
        files = [self._download(code, f"image-{i + 1}.png", "image/png")
                 for i, code in enumerate(incoming.get_image_list() or [])]
        content = incoming.extensions.get("content") or {}
        if incoming.message_type in ("file", "audio", "video") and content.get("downloadCode"):
            name = content.get("fileName") or f"{incoming.message_type}-{incoming.message_id}"
            files.append(self._download(content["downloadCode"], name, None))
        if incoming.message_type == "audio" and content.get("recognition"):
            text_parts.append(content["recognition"])  # DingTalk's own speech-to-text of a voice note
        chat = ChatRef(provider=self.provider, workspace=incoming.chatbot_corp_id or incoming.sender_corp_id or "",
                       chat=incoming.conversation_id)
        return InboundMessage(chat=chat, sender_id=sender, sender_name=incoming.sender_nick or "",
                              text="\n".join(p.strip() for p in text_parts if p).strip(),
                              message_id=incoming.message_id or "", is_direct=is_direct,
                              mentioned=is_direct or bool(incoming.is_in_at_list), files=tuple(files),
                              extra={"conversation_title": incoming.conversation_title or ""})

    def _download(self, code: str, name: str, content_type: str | None) -> InboundFile:
        async def read() -> bytes:
            # A download code becomes a short-lived URL; both steps are the robot's OpenAPI.
            answer = await self._post(f"{self.base}/v1.0/robot/messageFiles/download",
                                      {"robotCode": self.client.credential.client_id, "downloadCode": code},
                                      "file download", token=True)
            url = answer.get("downloadUrl")
            if not url:
                raise PlatformError("dingtalk file download answered without a downloadUrl")
            return await download(self.policy, url, limit=MAX_DOWNLOAD, what="dingtalk file")

        return InboundFile(name=name, size=None, content_type=content_type, read=read)

    # --- answering ---------------------------------------------------------------------------

    async def direct_chat(self, external_id: str, workspace: str = "") -> ChatRef:
        # A user's one-to-one conversation id is not known ahead; the robot API sends by user id.
        return ChatRef(provider=self.provider, workspace=workspace, chat=f"{USER_CHAT}{external_id}")

    async def send_text(self, chat: ChatRef, text: str, *, reply_to: str | None = None) -> SentMessage:
        title = (text.strip().splitlines() or ["DeerFlow"])[0][:40] or "DeerFlow"
        conversation = self.conversations.get(chat.chat)
        if conversation is not None and conversation.expires_at > time.time() + 5:
            answer = await self._post(conversation.webhook, {"msgtype": "markdown", "markdown": {"title": title, "text": text}},
                                      "session webhook reply")
            if answer.get("errcode", 0) not in (0, None):
                raise PlatformError(f"dingtalk reply failed: errcode {answer.get('errcode')}: {answer.get('errmsg')}")
            return SentMessage(chat=chat, message_id=str(answer.get("processQueryKey") or reply_to or ""))
        # No live session webhook: the robot sends on its own (needs the robot's send permission).
        return await self._robot_send(chat, "sampleMarkdown", {"title": title, "text": text})

    def _direct_user(self, chat: ChatRef) -> str:
        """The staff id a direct chat's robot messages and cards go to; "" for a group."""
        if chat.chat.startswith(USER_CHAT):
            return chat.chat[len(USER_CHAT):]
        conversation = self.conversations.get(chat.chat)
        return conversation.user_id if conversation is not None and conversation.is_direct else ""

    async def _robot_send(self, chat: ChatRef, msg_key: str, param: dict[str, Any]) -> SentMessage:
        """A robot message of ``msg_key`` to the person (a direct chat) or the group."""
        robot = self.client.credential.client_id
        encoded = json.dumps(param, ensure_ascii=False)
        user_id = self._direct_user(chat)
        if user_id:
            answer = await self._post(f"{self.base}/v1.0/robot/oToMessages/batchSend",
                                      {"robotCode": robot, "userIds": [user_id], "msgKey": msg_key, "msgParam": encoded},
                                      "direct message", token=True)
        else:
            answer = await self._post(f"{self.base}/v1.0/robot/groupMessages/send",
                                      {"robotCode": robot, "openConversationId": chat.chat, "msgKey": msg_key,
                                       "msgParam": encoded}, "group message", token=True)
        return SentMessage(chat=chat, message_id=str(answer.get("processQueryKey") or ""))

    async def send_file(self, chat: ChatRef, name: str, data: bytes, *, content_type: str | None = None,
                        reply_to: str | None = None) -> SentMessage:
        if len(data) > MAX_UPLOAD:
            raise PlatformError(f"it is {len(data):,} bytes; DingTalk takes files up to {MAX_UPLOAD:,}")
        picture = is_image(name, content_type)
        media_id = await self._upload(name, data, "image" if picture else "file")
        if picture:
            return await self._robot_send(chat, "sampleImageMsg", {"photoURL": media_id})
        return await self._robot_send(chat, "sampleFile", {"mediaId": media_id, "fileName": name,
                                                           "fileType": Path(name).suffix.lstrip(".").lower() or "file"})

    async def _upload(self, name: str, data: bytes, kind: str) -> str:
        token = await self._access_token()
        try:
            async with guarded_client(self.policy, timeout=60.0) as client:
                response = await client.post(f"{self.oapi}/media/upload", params={"access_token": token, "type": kind},
                                             files={"media": (name, data)})
        except GuardError as exc:
            raise PlatformError(f"dingtalk media upload refused: {exc}") from None
        except Exception as exc:
            raise PlatformError(f"dingtalk media upload failed: {type(exc).__name__}: {exc}") from None
        try:
            answer = response.json()
        except ValueError:
            answer = {}
        if response.status_code >= 400 or answer.get("errcode", 0) != 0 or not answer.get("media_id"):
            raise PlatformError(f"dingtalk media upload failed: HTTP {response.status_code}: "
                                f"{answer.get('errmsg') or response.text[:200]}")
        return str(answer["media_id"])

    # --- AI cards (card_template_id) ---------------------------------------------------------------

    def _card_space(self, chat: ChatRef) -> dict[str, Any]:
        """Where a card is delivered: the person's robot chat, or the group."""
        user_id = self._direct_user(chat)
        if user_id:
            return {"openSpaceId": f"dtv1.card//IM_ROBOT.{user_id}", "imRobotOpenDeliverModel": {"spaceType": "IM_ROBOT"}}
        return {"openSpaceId": f"dtv1.card//IM_GROUP.{chat.chat}",
                "imGroupOpenDeliverModel": {"robotCode": self.client.credential.client_id}}

    async def _card_deliver(self, chat: ChatRef, template: str, params: dict[str, str], what: str) -> str:
        """Create a card from ``template`` in ``chat``; its outTrackId."""
        track = uuid.uuid4().hex
        body: dict[str, Any] = {
            "cardTemplateId": template, "outTrackId": track, "callbackType": "STREAM",
            "cardData": {"cardParamMap": params},
            "imGroupOpenSpaceModel": {"supportForward": True}, "imRobotOpenSpaceModel": {"supportForward": True},
            **self._card_space(chat)}
        await self._post(f"{self.base}/v1.0/card/instances/createAndDeliver", body, what, token=True)
        return track

    async def begin_answer(self, chat: ChatRef, placeholder: str, *, reply_to: str | None = None) -> SentMessage | None:
        if not self.card_template_id or chat.chat not in self.conversations:
            return None  # no card: the answer goes out once, as markdown
        try:
            track = await self._card_deliver(chat, self.card_template_id, {"content": placeholder}, "AI card")
        except PlatformError as exc:
            log.warning("dingtalk: the AI card could not be created (%s); the answer goes out as markdown", exc)
            await self.hooks.error(f"AI card not created, markdown instead: {exc}")
            return None
        return SentMessage(chat=chat, message_id=f"{CARD}{track}")

    async def _card_content(self, sent: SentMessage, text: str, *, final: bool) -> None:
        await self._post(f"{self.base}/v1.0/card/streaming", {
            "outTrackId": sent.message_id[len(CARD):], "guid": uuid.uuid4().hex, "key": "content", "content": text,
            "isFull": True, "isFinalize": final, "isError": False}, "AI card update", token=True, method="PUT")

    async def edit_text(self, sent: SentMessage, text: str) -> None:
        if not sent.message_id.startswith(CARD):
            raise NotImplementedError("dingtalk edits only AI cards")
        await self._card_content(sent, text, final=False)

    async def finish_answer(self, chat: ChatRef, sent: SentMessage | None, text: str, *, reply_to: str | None = None) -> bool:
        if sent is None or not sent.message_id.startswith(CARD):
            return False
        try:
            await self._card_content(sent, text, final=True)
        except PlatformError as exc:  # the card is gone or refused: the answer still arrives
            log.warning("dingtalk: the AI card could not be finished (%s); sending markdown", exc)
            for chunk in split_text(text, self.capabilities.max_text):
                await self.send_text(chat, chunk, reply_to=reply_to)
        return True

    # --- questions: a card with buttons --------------------------------------------------------

    async def send_choices(self, chat: ChatRef, text: str, choices: list[Choice], *, reply_to: str | None = None) -> SentMessage:
        if not self.card_template_id:
            return await super().send_choices(chat, text, choices, reply_to=reply_to)
        buttons = [{"text": choice.label, "color": "blue", "id": choice.data, "request": True} for choice in choices]
        params = {"markdown": text or " ", "tips": "",
                  "sys_full_json_obj": json.dumps({"msgButtons": buttons}, ensure_ascii=False)}
        try:
            track = await self._card_deliver(chat, BUTTON_CARD_TEMPLATE, params, "question card")
        except PlatformError as exc:
            log.warning("dingtalk: the question card could not be sent (%s); numbered answers instead", exc)
            await self.hooks.error(f"question card not sent, numbered answers instead: {exc}")
            return await super().send_choices(chat, text, choices, reply_to=reply_to)
        self.choice_cards[track] = (chat, reply_to or "")
        while len(self.choice_cards) > CHOICE_CARDS_KEPT:
            self.choice_cards.popitem(last=False)
        return SentMessage(chat=chat, message_id=f"{CARD}{track}")

    def pressed(self, card: CardCallbackMessage, *, space_type: str, space_id: str, press_id: str) -> InboundAction | None:
        private = card.content.get("cardPrivateData") if isinstance(card.content, dict) else None
        action_ids = private.get("actionIds") if isinstance(private, dict) else None
        data = next((a for a in action_ids or () if isinstance(a, str) and a.startswith("dfq:")), None)
        if not card.user_id or not press_id or data is None:
            log.warning("dingtalk: a card callback without user, id or choice was ignored")
            return None
        known = self.choice_cards.get(card.card_instance_id)
        if known is not None:
            chat, reply_to = known
        else:
            # A card sent before a restart: its group is named by the callback; a direct chat is
            # reached by the person's id (the manager then finds no open question there: stale).
            reply_to = ""
            chat = ChatRef(provider=self.provider, workspace=card.corp_id or "",
                           chat=space_id if space_type == "IM_GROUP" and space_id else f"{USER_CHAT}{card.user_id}")
        return InboundAction(chat=chat, sender_id=card.user_id, sender_name="", data=data,
                             message_id=f"card-{press_id}", reply_to=reply_to)

    # --- HTTP ----------------------------------------------------------------------------------

    async def _access_token(self) -> str:
        if self._token and self._token[1] > time.time():
            return self._token[0]
        answer = await self._post(f"{self.base}/v1.0/oauth2/accessToken",
                                  {"appKey": self.client.credential.client_id, "appSecret": self.client.credential.client_secret},
                                  "access token")
        if not answer.get("accessToken"):
            raise PlatformError("dingtalk access token answer has no accessToken")
        # Renewed five minutes early, as DingTalk advises.
        self._token = (answer["accessToken"], time.time() + int(answer.get("expireIn", 7200)) - 300)
        return self._token[0]

    async def _post(self, url: str, body: dict[str, Any], what: str, *, token: bool = False, method: str = "POST") -> dict[str, Any]:
        headers = {"Accept": "application/json"}
        if token:
            headers["x-acs-dingtalk-access-token"] = await self._access_token()
        try:
            async with guarded_client(self.policy, headers=headers) as client:
                response = await client.request(method, url, json=body)
        except GuardError as exc:
            raise PlatformError(f"dingtalk {what} refused: {exc}") from None
        except Exception as exc:
            raise PlatformError(f"dingtalk {what} failed: {type(exc).__name__}: {exc}") from None
        if response.status_code == 401 and token:
            self._token = None  # the next call fetches a fresh token
        try:
            answer = response.json()
        except ValueError:
            answer = {}
        if response.status_code >= 400:
            reason = answer.get("message") or answer.get("errmsg") or response.text[:200]
            raise PlatformError(f"dingtalk {what} failed: HTTP {response.status_code}: {reason}")
        return answer if isinstance(answer, dict) else {}
