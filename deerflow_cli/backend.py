"""The two sides the console talks to, behind one small protocol.

``ServerBackend`` speaks to a DeerFlow server with a personal access token: the
LangGraph-compatible routes through the official ``langgraph-sdk`` client (threads, runs,
streams, cancel) and the REST routes with plain ``httpx`` (models, agents, skills, uploads).
``EmbeddedBackend`` (``deerflow_cli.embedded``) runs the agent in this process through
``DeerFlowClient``. Both turn a turn's stream into ``deerflow_cli.events``.
"""

from __future__ import annotations

import asyncio
import mimetypes
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import httpx
from langgraph_sdk import get_client

from deerflow_cli.events import Ask, Event, Failed, Started, Text, Title, ToolCall, ToolResult, content_text, is_hidden, pending_asks

STREAM_MODES = ["messages-tuple", "updates"]
DEFAULT_AGENT = "lead_agent"


class BackendError(Exception):
    """A refusal the user should read (bad token, busy thread, unknown model, ...)."""


@dataclass(frozen=True)
class Choice:
    name: str
    label: str = ""


@dataclass(frozen=True)
class ThreadInfo:
    thread_id: str
    title: str
    status: str = ""
    updated_at: str = ""


@dataclass
class Loaded:
    title: str
    messages: list[dict[str, Any]]
    asks: list[dict[str, Any]]


class Backend(Protocol):
    label: str

    async def threads(self) -> list[ThreadInfo]: ...

    async def load(self, thread_id: str) -> Loaded: ...

    async def new_thread(self) -> str: ...

    def turn(self, thread_id: str, *, text: str | None = None, resume: Any = None, model: str | None = None,
             agent: str | None = None) -> AsyncIterator[Event]: ...

    async def cancel(self, thread_id: str, run_id: str | None) -> None: ...

    async def models(self) -> list[Choice]: ...

    async def agents(self) -> list[Choice]: ...

    async def skills(self) -> list[Choice]: ...

    async def upload(self, thread_id: str, path: Path) -> str: ...

    async def close(self) -> None: ...


def _detail(response: httpx.Response) -> str:
    try:
        detail = response.json().get("detail")
    except ValueError:
        detail = None
    return f"{response.status_code}: {detail or response.reason_phrase}"


def _sdk_error(exc: Exception) -> BackendError:
    response = getattr(exc, "response", None)
    return BackendError(_detail(response) if isinstance(response, httpx.Response) else str(exc) or type(exc).__name__)


class _TurnState:
    """Pairs the stream's two views of a turn: text deltas (``messages``) and whole messages
    (``updates``), so a message whose text never streamed is still shown once."""

    def __init__(self) -> None:
        self.streamed: set[str] = set()
        self.calls: set[str] = set()
        self.results: set[str] = set()

    def chunk(self, message: dict[str, Any]) -> list[Event]:
        kind = message.get("type")
        if kind == "tool":
            return self.whole(message)
        if kind not in ("AIMessageChunk", "ai") or is_hidden(message):
            return []
        msg_id = str(message.get("id") or "")
        if kind == "ai" and msg_id in self.streamed:
            return []
        text = content_text(message.get("content"))
        if not text:
            return []
        self.streamed.add(msg_id)
        return [Text(msg_id, text)]

    def whole(self, message: dict[str, Any]) -> list[Event]:
        if is_hidden(message):
            return []
        out: list[Event] = []
        kind = message.get("type")
        if kind in ("ai", "AIMessageChunk"):
            msg_id = str(message.get("id") or "")
            if msg_id not in self.streamed and (text := content_text(message.get("content"))):
                self.streamed.add(msg_id)
                out.append(Text(msg_id, text))
            for tc in message.get("tool_calls") or []:
                if tc.get("id") and tc["id"] not in self.calls:
                    self.calls.add(tc["id"])
                    out.append(ToolCall(tc["id"], str(tc.get("name")), dict(tc.get("args") or {})))
        elif kind == "tool":
            call_id = str(message.get("tool_call_id") or "")
            if call_id not in self.results:
                self.results.add(call_id)
                out.append(ToolResult(call_id, str(message.get("name") or ""), content_text(message.get("content")),
                                      str(message.get("status") or "success")))
        return out

    def update(self, data: dict[str, Any]) -> list[Event]:
        out: list[Event] = []
        for node, value in data.items():
            if node == "__interrupt__":
                out += [Ask(it["value"]) for it in value or [] if isinstance(it, dict) and isinstance(it.get("value"), dict)]
            elif isinstance(value, dict):
                if isinstance(value.get("title"), str) and value["title"]:
                    out.append(Title(value["title"]))
                for m in value.get("messages") or []:
                    if isinstance(m, dict):
                        out += self.whole(m)
        return out


class ServerBackend:
    def __init__(self, url: str, token: str) -> None:
        base = url.rstrip("/")
        self.label = base
        headers = {"Authorization": f"Bearer {token}"}
        self.sdk = get_client(url=f"{base}/api", headers=headers, api_key=None)
        self.http = httpx.AsyncClient(base_url=f"{base}/api", headers=headers, timeout=30)

    async def _get(self, path: str) -> Any:
        try:
            response = await self.http.get(path)
        except httpx.HTTPError as exc:
            raise BackendError(f"cannot reach {self.label}: {exc}") from exc
        if response.status_code >= 400:
            raise BackendError(_detail(response))
        return response.json()

    async def check(self) -> str:
        """Who the token belongs to; a bad token or an unreachable server raises here, before the screen opens."""
        me = await self._get("/me")
        return str(me.get("username") or me.get("email") or me.get("id"))

    async def threads(self) -> list[ThreadInfo]:
        try:
            found = await self.sdk.threads.search(limit=50, sort_by="updated_at", sort_order="desc")
        except Exception as exc:
            raise _sdk_error(exc) from exc
        return [ThreadInfo(t["thread_id"], str((t.get("values") or {}).get("title") or ""), str(t.get("status") or ""),
                           str(t.get("updated_at") or "")) for t in found]

    async def load(self, thread_id: str) -> Loaded:
        try:
            state = await self.sdk.threads.get_state(thread_id)
        except Exception as exc:
            raise _sdk_error(exc) from exc
        values = state.get("values") or {}
        return Loaded(str(values.get("title") or ""), list(values.get("messages") or []), pending_asks(state.get("tasks")))

    async def new_thread(self) -> str:
        try:
            return (await self.sdk.threads.create())["thread_id"]
        except Exception as exc:
            raise _sdk_error(exc) from exc

    async def turn(self, thread_id: str, *, text: str | None = None, resume: Any = None, model: str | None = None,
                   agent: str | None = None) -> AsyncIterator[Event]:
        kwargs: dict[str, Any] = {"stream_mode": STREAM_MODES}
        if resume is not None:
            kwargs["command"] = {"resume": resume}
        else:
            kwargs["input"] = {"messages": [{"role": "user", "content": text or ""}]}
        if model:
            kwargs["context"] = {"model_name": model}
        state = _TurnState()
        try:
            async for part in self.sdk.runs.stream(thread_id, agent or DEFAULT_AGENT, **kwargs):
                data = part.data
                if part.event == "metadata" and isinstance(data, dict):
                    yield Started(data.get("run_id"))
                elif part.event == "messages" and isinstance(data, list) and data and isinstance(data[0], dict):
                    for event in state.chunk(data[0]):
                        yield event
                elif part.event == "updates" and isinstance(data, dict):
                    for event in state.update(data):
                        yield event
                elif part.event == "error":
                    yield Failed(str((data or {}).get("message") or (data or {}).get("error") or "the run failed"))
        except httpx.HTTPStatusError as exc:
            raise _sdk_error(exc) from exc
        except httpx.HTTPError as exc:
            raise BackendError(f"the stream broke: {exc}") from exc

    async def cancel(self, thread_id: str, run_id: str | None) -> None:
        if not run_id:
            return
        try:
            await self.sdk.runs.cancel(thread_id, run_id, action="interrupt")
        except Exception as exc:
            # Already finished: nothing to cancel, which is what the user wanted.
            if getattr(getattr(exc, "response", None), "status_code", None) not in (404, 409):
                raise _sdk_error(exc) from exc

    async def models(self) -> list[Choice]:
        data = await self._get("/models")
        return [Choice(m["name"], str(m.get("display_name") or "")) for m in data.get("models") or []]

    async def agents(self) -> list[Choice]:
        data = await self._get("/agents")
        return [Choice(DEFAULT_AGENT, "the default agent")] + [
            Choice(a["name"], str(a.get("description") or a.get("display_name") or "")) for a in data.get("agents") or []]

    async def skills(self) -> list[Choice]:
        data = await self._get("/skills")
        return [Choice(s["name"], str(s.get("description") or "")) for s in data.get("skills") or [] if s.get("enabled")]

    async def upload(self, thread_id: str, path: Path) -> str:
        kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        try:
            body = await asyncio.to_thread(path.read_bytes)
        except OSError as exc:
            raise BackendError(f"cannot read {path}: {exc.strerror}") from exc
        try:
            response = await self.http.post(f"/threads/{thread_id}/uploads", files=[("files", (path.name, body, kind))])
        except httpx.HTTPError as exc:
            raise BackendError(f"upload failed: {exc}") from exc
        if response.status_code >= 400:
            raise BackendError(_detail(response))
        files = response.json().get("files") or [{}]
        return str(files[0].get("virtual_path") or files[0].get("path") or path.name)

    async def close(self) -> None:
        await self.http.aclose()
        await self.sdk.http.client.aclose()
