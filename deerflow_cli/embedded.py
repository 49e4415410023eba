"""The agent in this process: ``DeerFlowClient`` behind the console's backend protocol.

Threads persist in a LangGraph checkpointer (a SQLite file under
``$DEER_FLOW_HOME/console/`` unless ``--checkpoints`` names another URL), so a thread can be
resumed in a later session. Threads, skills and uploads come from the client's own methods
(the ones the server's routes match); the pending questions of a thread are read from the
checkpointer's pending writes, which the client does not expose.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from harness.client import DeerFlowClient, serialize_message
from harness.config.paths import deer_flow_home
from harness.errors import DomainError
from harness.runtime.checkpointer import open_checkpointer

from deerflow_cli.backend import DEFAULT_AGENT, BackendError, Choice, Loaded, ThreadInfo
from deerflow_cli.events import Ask, Event, Started, Text, Title, ToolCall, ToolResult, content_text

THREAD_LIST_LIMIT = 50


def default_checkpoints_url() -> str:
    return f"sqlite:///{deer_flow_home() / 'console' / 'checkpoints.sqlite'}"


class EmbeddedBackend:
    label = "the embedded agent"

    def __init__(self, *, user_id: str = "default", checkpoints: str | None = None, **client_options: Any) -> None:
        self.user_id = user_id
        self.checkpoints = checkpoints or default_checkpoints_url()
        self.client_options = client_options
        self._stack = contextlib.AsyncExitStack()
        self._client: DeerFlowClient | None = None
        self._saver: Any = None

    async def client(self) -> DeerFlowClient:
        if self._client is None:
            self._saver = await self._stack.enter_async_context(open_checkpointer(self.checkpoints))
            self._client = DeerFlowClient(checkpointer=self._saver, user_id=self.user_id, **self.client_options)
        return self._client

    async def threads(self) -> list[ThreadInfo]:
        client = await self.client()
        listed = await asyncio.to_thread(client.list_threads, THREAD_LIST_LIMIT)
        return [ThreadInfo(t["thread_id"], str(t.get("title") or ""), "", str(t.get("updated_at") or ""))
                for t in listed["thread_list"]]

    async def load(self, thread_id: str) -> Loaded:
        client = await self.client()
        item = await self._saver.aget_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})
        if item is None:
            raise BackendError(f"no thread {thread_id} in {self.checkpoints}")
        # A checkpoint holds only the channels its step changed: the graph assembles the state.
        values = await asyncio.to_thread(client.get_state, thread_id)
        messages = [serialize_message(m) for m in values.get("messages") or []]
        asks = []
        for _task, channel, value in item.pending_writes or []:
            if channel == "__interrupt__":
                for it in value if isinstance(value, list | tuple) else [value]:
                    v = getattr(it, "value", it)
                    if isinstance(v, dict) and v.get("type") in ("clarification", "approval"):
                        asks.append(v)
        return Loaded(str(values.get("title") or ""), messages, asks)

    async def new_thread(self) -> str:
        return str(uuid.uuid4())

    async def turn(self, thread_id: str, *, text: str | None = None, resume: Any = None, model: str | None = None,
                   agent: str | None = None) -> AsyncIterator[Event]:
        client = await self.client()
        title = None
        yield Started(None)
        try:
            async for event in client.astream(text, thread_id, resume=resume, model_name=model,
                                              agent_name=None if agent in (None, DEFAULT_AGENT) else agent):
                data = event.data
                if event.type == "messages-tuple" and data.get("type") == "ai":
                    if data.get("content"):
                        yield Text(str(data["id"]), content_text(data["content"]))
                    for tc in data.get("tool_calls") or []:
                        yield ToolCall(str(tc.get("id")), str(tc.get("name")), dict(tc.get("args") or {}))
                elif event.type == "messages-tuple" and data.get("type") == "tool":
                    yield ToolResult(str(data.get("tool_call_id")), str(data.get("name") or ""), content_text(data.get("content")),
                                     str(data.get("status") or "success"))
                elif event.type == "values" and data.get("title") and data["title"] != title:
                    title = data["title"]
                    yield Title(title)
                elif event.type == "end":
                    for value in data.get("interrupts") or []:
                        if isinstance(value, dict) and value.get("type") in ("clarification", "approval"):
                            yield Ask(value)
        except (ValueError, RuntimeError, OSError) as exc:
            raise BackendError(f"{type(exc).__name__}: {exc}") from exc

    async def cancel(self, thread_id: str, run_id: str | None) -> None:
        """Nothing to ask anyone: cancelling the console's worker stops the graph in this process."""

    async def models(self) -> list[Choice]:
        client = await self.client()
        return [Choice(m["name"], str(m.get("display_name") or "")) for m in client.list_models()["models"]]

    async def agents(self) -> list[Choice]:
        # Custom agents are rows on a server; the embedded agent has only the default one.
        return [Choice(DEFAULT_AGENT, "the default agent")]

    async def skills(self) -> list[Choice]:
        client = await self.client()
        listed = await asyncio.to_thread(client.list_skills, True)
        return [Choice(s["name"], str(s.get("description") or "")) for s in listed["skills"]]

    async def upload(self, thread_id: str, path: Path) -> str:
        client = await self.client()
        if path.name.startswith(".") or not path.is_file():
            raise BackendError(f"{path}: not a file that can be uploaded (dot-files and directories are not)")
        try:
            result = await asyncio.to_thread(client.upload_files, thread_id, [path])
        except (OSError, DomainError) as exc:
            raise BackendError(f"cannot upload {path}: {exc}") from exc
        return result["files"][0]["virtual_path"]

    async def close(self) -> None:
        await self._stack.aclose()
