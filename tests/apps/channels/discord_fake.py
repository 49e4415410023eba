"""A fake Discord: the REST API under /api/v10 and a gateway websocket speaking Discord's
JSON protocol (HELLO, IDENTIFY, heartbeats, READY, GUILD_CREATE, MESSAGE_CREATE dispatches)."""

from __future__ import annotations

import asyncio
import itertools
import json
from datetime import datetime, timezone

from aiohttp import WSMsgType, web

from tests.apps.channels.fake_platform import FakePlatform, json_answer

BOT_ID, GUILD_ID, CHANNEL_ID, DM_ID = "900000000000000001", "800000000000000001", "700000000000000001", "600000000000000001"
_ids = itertools.count(500000000000000001)


def snowflake() -> str:
    return str(next(_ids))


def user(uid: str, name: str, *, bot: bool = False) -> dict:
    return {"id": uid, "username": name, "discriminator": "0", "global_name": name.title(), "avatar": None, "bot": bot}


BOT = user(BOT_ID, "deerflow", bot=True)
ALICE = user("400000000000000001", "alice")


def now() -> str:
    return datetime.now(timezone.utc).isoformat()


def message(*, channel_id: str, content: str, author: dict = ALICE, guild: bool = True, mentions: tuple = (),
            attachments: tuple = (), message_id: str | None = None) -> dict:
    data = {"id": message_id or snowflake(), "channel_id": channel_id, "author": author, "content": content, "timestamp": now(),
            "edited_timestamp": None, "tts": False, "mention_everyone": False, "mentions": list(mentions), "mention_roles": [],
            "attachments": list(attachments), "embeds": [], "pinned": False, "type": 0}
    if guild:
        data["guild_id"] = GUILD_ID
        data["member"] = {"roles": [], "joined_at": now(), "deaf": False, "mute": False, "flags": 0}
    return data


def guild() -> dict:
    channel = {"id": CHANNEL_ID, "type": 0, "guild_id": GUILD_ID, "name": "general", "position": 0, "permission_overwrites": [],
               "nsfw": False, "parent_id": None}
    return {"id": GUILD_ID, "name": "Deer Lab", "icon": None, "owner_id": ALICE["id"], "afk_timeout": 300, "verification_level": 0,
            "default_message_notifications": 0, "explicit_content_filter": 0, "mfa_level": 0, "nsfw_level": 0, "premium_tier": 0,
            "roles": [{"id": GUILD_ID, "name": "@everyone", "permissions": "1071698660929", "position": 0, "color": 0,
                       "hoist": False, "managed": False, "mentionable": False}],
            "emojis": [], "stickers": [], "features": [], "channels": [channel], "threads": [], "members": [], "voice_states": [],
            "presences": [], "member_count": 2, "large": False, "unavailable": False, "preferred_locale": "en-US",
            "system_channel_flags": 0, "premium_progress_bar_enabled": False}


class FakeDiscord(FakePlatform):
    def __init__(self) -> None:
        super().__init__()
        self.to_dispatch: asyncio.Queue[tuple[str, dict]] = asyncio.Queue()
        self.identified: list[dict] = []
        self.ready = asyncio.Event()
        self.threads: dict[str, dict] = {}
        self.sent_ids: set[str] = set()
        self.resumes: list[dict] = []
        self.current_ws: web.WebSocketResponse | None = None
        self.current_pumper: asyncio.Task | None = None
        self.sequence = 0
        self.json_route("GET", "/api/v10/users/@me", BOT)
        self.json_route("GET", "/api/v10/oauth2/applications/@me", {
            "id": BOT_ID, "name": "DeerFlow", "description": "", "icon": None, "bot_public": True,
            "bot_require_code_grant": False, "owner": ALICE, "verify_key": "0" * 64, "flags": 0})
        self.route("POST", "/api/v10/channels/{cid}/messages", self._send)
        self.route("PATCH", "/api/v10/channels/{cid}/messages/{mid}", self._edit)
        self.route("POST", "/api/v10/channels/{cid}/messages/{mid}/threads", self._thread)
        self.route("GET", "/attachments/{name}", self._attachment)
        self.route("POST", "/api/v10/users/@me/channels", self._open_dm)
        self.route("GET", "/gateway", self._gateway)
        self.route("POST", "/api/v10/interactions/{iid}/{token}/callback", self._interaction_callback)
        self.interaction_callbacks: list[dict] = []
        self.components: dict[str, list[dict]] = {}  # sent message id -> its buttons

    async def _send(self, request: web.Request) -> web.Response:
        cid = request.match_info["cid"]
        recorded = self.requests[-1]
        if recorded.headers.get("Content-Type", "").startswith("multipart/"):
            payload = json.loads(recorded.form()["payload_json"][1])
        else:
            payload = recorded.json()
        sent = message(channel_id=cid, content=payload.get("content") or "", author=BOT, guild=cid != DM_ID)
        self.sent_ids.add(sent["id"])
        if payload.get("components"):
            sent["components"] = payload["components"]
            self.components[sent["id"]] = [b for row in payload["components"] for b in row["components"]]
        return json_answer(sent)

    async def _edit(self, request: web.Request) -> web.Response:
        if request.match_info["mid"] not in self.sent_ids:
            return json_answer({"code": 10008, "message": "Unknown Message"}, status=404)
        payload = self.requests[-1].json()
        data = message(channel_id=request.match_info["cid"], content=payload["content"], author=BOT,
                       message_id=request.match_info["mid"])
        data["edited_timestamp"] = now()
        return json_answer(data)

    async def _thread(self, request: web.Request) -> web.Response:
        mid = request.match_info["mid"]
        if mid in self.threads:
            return json_answer({"code": 160004, "message": "A thread has already been created for this message"}, status=400)
        thread = {"id": mid, "type": 11, "guild_id": GUILD_ID, "parent_id": request.match_info["cid"], "owner_id": BOT_ID,
                  "name": self.requests[-1].json()["name"], "rate_limit_per_user": 0, "message_count": 0, "member_count": 1,
                  "thread_metadata": {"archived": False, "auto_archive_duration": 1440, "archive_timestamp": now(), "locked": False}}
        self.threads[mid] = thread
        await self.dispatch("THREAD_CREATE", {**thread, "newly_created": True})
        return json_answer(thread, status=201)

    async def _open_dm(self, request: web.Request) -> web.Response:
        recipient = self.requests[-1].json()["recipient_id"]
        return json_answer({"id": DM_ID, "type": 1, "last_message_id": None, "recipients": [user(str(recipient), "alice")]})

    async def _attachment(self, request: web.Request) -> web.Response:
        return web.Response(body=f"contents of {request.match_info['name']}".encode(), content_type="text/plain")

    async def _interaction_callback(self, request: web.Request) -> web.Response:
        self.interaction_callbacks.append({"id": request.match_info["iid"], **self.requests[-1].json()})
        if request.query.get("with_response"):  # the interaction callback response object
            return json_answer({"interaction": {"id": request.match_info["iid"], "type": 3, "response_message_loading": False,
                                                "response_message_ephemeral": False}})
        return web.Response(status=204)

    async def press(self, message_id: str, label: str, *, presser: dict = ALICE, channel_id: str = DM_ID) -> str:
        """A click on one of a sent message's buttons: an INTERACTION_CREATE (type 3, component)."""
        button = next(b for b in self.components[message_id] if b["label"] == label)
        interaction_id = snowflake()
        sent = message(channel_id=channel_id, content="", author=BOT, guild=channel_id != DM_ID, message_id=message_id)
        data = {"id": interaction_id, "application_id": BOT_ID, "type": 3, "token": f"tok-{interaction_id}", "version": 1,
                "channel_id": channel_id, "data": {"custom_id": button["custom_id"], "component_type": 2},
                "message": sent, "app_permissions": "0", "locale": "en-US", "entitlements": [], "authorizing_integration_owners": {},
                "attachment_size_limit": 10485760}
        if channel_id == DM_ID:
            data["user"] = presser
            data["channel"] = {"id": DM_ID, "type": 1}
        else:
            data["guild_id"] = GUILD_ID
            data["member"] = {"user": presser, "roles": [], "joined_at": now(), "deaf": False, "mute": False, "flags": 0,
                              "permissions": "0"}
        await self.dispatch("INTERACTION_CREATE", data)
        return interaction_id

    async def dispatch(self, event: str, data: dict) -> None:
        await self.to_dispatch.put((event, data))

    async def drop(self) -> None:
        """An outage: the gateway closes the socket with 4000 (unknown error), which clients resume from."""
        # Stop feeding this socket first, so no queued dispatch is lost on it while it closes.
        self.current_pumper.cancel()
        await self.current_ws.close(code=4000)

    async def _gateway(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        self.current_ws = ws
        await ws.send_str(json.dumps({"op": 10, "d": {"heartbeat_interval": 41250}, "s": None, "t": None}))

        async def send_dispatch(event: str, data: dict) -> None:
            self.sequence += 1
            await ws.send_str(json.dumps({"op": 0, "t": event, "s": self.sequence, "d": data}))

        async def pump() -> None:
            while True:
                event, data = await self.to_dispatch.get()
                await send_dispatch(event, data)

        pumper: asyncio.Task | None = None
        try:
            async for msg in ws:
                if msg.type != WSMsgType.TEXT:
                    continue
                frame = json.loads(msg.data)
                if frame["op"] == 1:
                    await ws.send_str(json.dumps({"op": 11, "d": None, "s": None, "t": None}))
                elif frame["op"] == 2:
                    self.identified.append(frame["d"])
                    await send_dispatch("READY", {
                        "v": 10, "user": BOT, "guilds": [{"id": GUILD_ID, "unavailable": True}], "session_id": "session_1",
                        "resume_gateway_url": f"ws{self.url[4:]}/gateway", "shard": [0, 1],
                        "application": {"id": BOT_ID, "flags": 0}, "private_channels": [], "relationships": []})
                    await send_dispatch("GUILD_CREATE", guild())
                    self.ready.set()
                    pumper = self.current_pumper = asyncio.create_task(pump())
                elif frame["op"] == 6:  # RESUME: replay nothing, say so, carry on
                    self.resumes.append(frame["d"])
                    await send_dispatch("RESUMED", {})
                    pumper = self.current_pumper = asyncio.create_task(pump())
        finally:
            if pumper is not None:
                pumper.cancel()
        return ws
