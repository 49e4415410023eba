"""The agent in this process: ``DeerFlowClient`` behind the console's backend protocol.

Threads persist in a LangGraph checkpointer (a SQLite file under
``$DEER_FLOW_HOME/console/`` unless ``--checkpoints`` names another URL), so a thread can be
resumed in a later session. What the client has no method for yet is read here from the
same places the harness uses: the thread list and pending questions from the checkpointer,
skills from ``resolve_skill_set``, uploads written into the thread's ``uploads/`` directory
(the uploads middleware tells the agent about them at the next turn).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from harness.client import DeerFlowClient, serialize_message
from harness.config.paths import deer_flow_home, thread_user_data_dir
from harness.runtime.checkpointer import open_checkpointer
from harness.skills.state import resolve_skill_set
from harness.uploads import STAGING_PREFIXES, STAGING_SUFFIX

from deerflow_cli.backend import DEFAULT_AGENT, BackendError, Choice, Loaded, ThreadInfo
from deerflow_cli.events import Ask, Event, Started, Text, Title, ToolCall, ToolResult, content_text

THREAD_LIST_LIMIT = 50


def default_checkpoints_url() -> str:
    return f"sqlite:///{deer_flow_home() / 'console' / 'checkpoints.sqlite'}"


def _copy_upload(source: Path, uploads: Path) -> Path:
    if source.name.startswith(".") or not source.is_file():
        raise BackendError(f"{source}: not a file that can be uploaded (dot-files and directories are not)")
    uploads.mkdir(parents=True, exist_ok=True)
    staging = uploads / f"{STAGING_PREFIXES[0]}{uuid.uuid4().hex}{STAGING_SUFFIX}"
    shutil.copyfile(source, staging)
    target = uploads / source.name
    os.replace(staging, target)  # the agent never sees half a file
    return target


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
        await self.client()
        latest: dict[str, str] = {}
        titles: dict[str, str] = {}
        # Newest checkpoint first (their ids are time-ordered): a thread's first is its latest.
        # A checkpoint holds only the channels its step wrote, so the title is the newest one
        # any of the thread's checkpoints holds.
        async for item in self._saver.alist(None):
            thread_id = item.config["configurable"]["thread_id"]
            if thread_id not in latest:
                if len(latest) >= THREAD_LIST_LIMIT:
                    break
                latest[thread_id] = str(item.checkpoint.get("ts") or "")
            title = (item.checkpoint.get("channel_values") or {}).get("title")
            if title and thread_id not in titles:
                titles[thread_id] = str(title)
        return [ThreadInfo(tid, titles.get(tid, ""), "", ts) for tid, ts in latest.items()]

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
        skill_set = await asyncio.to_thread(resolve_skill_set, self.user_id)
        return [Choice(s.name, s.meta.description) for s in skill_set.enabled()]

    async def upload(self, thread_id: str, path: Path) -> str:
        uploads = thread_user_data_dir(self.user_id, thread_id) / "uploads"
        try:
            target = await asyncio.to_thread(_copy_upload, path, uploads)
        except OSError as exc:
            raise BackendError(f"cannot upload {path}: {exc.strerror}") from exc
        return f"/mnt/user-data/uploads/{target.name}"

    async def close(self) -> None:
        await self._stack.aclose()
