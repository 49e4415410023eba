"""One channel turn: files into the thread's uploads, a run through ``start_run()``, the
answer streamed back (edits at the platform's pace, or one reply), presented files sent back.

The run executes wherever the executor puts it; its events come through the stream bridge and
its final answer from the run journal, so this works the same embedded and distributed.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any

from channels.db import database_sync_to_async
from django.core.files.base import ContentFile

from apps.channels import questions
from apps.channels.base import ChannelAdapter, ChatRef, InboundFile, SentMessage
from apps.errors import DomainError, ThreadBusy
from apps.runs.lifecycle import ACTIVE_RUN_STATUSES, RunStatus
from apps.runs.selectors import run_answer_events, run_outcome, run_with_thread
from apps.runs.schemas import RunCreate

logger = logging.getLogger(__name__)

ORIGIN = "channel"
WORKING = "Working on it…"
# A web run (or a scheduled one) may hold the thread: wait for it rather than refuse.
BUSY_POLL_SECONDS = 1.0
BUSY_WAIT_LIMIT = 30 * 60


def split_text(text: str, limit: int) -> list[str]:
    """Chunks of at most ``limit`` characters, cut at a line break or space where one is near."""
    chunks = []
    while len(text) > limit:
        cut = text.rfind("\n", limit // 2, limit)
        if cut <= 0:
            cut = text.rfind(" ", limit // 2, limit)
        if cut <= 0:
            cut = limit
        chunks.append(text[:cut])
        text = text[cut:].lstrip("\n ")
    chunks.append(text)
    return chunks


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") if isinstance(b, dict) and b.get("type") == "text" else (b if isinstance(b, str) else "")
                       for b in content)
    return ""


def final_answer(run_id: str) -> str:
    """The run's last answer as the user sees it in the chat: the last AI text, or the
    question the agent asked (ask_clarification) when it stopped for input."""
    for event_type, content in run_answer_events(run_id=run_id, newest_first=True, limit=50):
        if event_type == "llm.tool.result":
            if content.get("name") == "ask_clarification":
                return _text_of(content.get("content"))
            continue
        text = _text_of(content.get("content")).strip()
        if text:
            return text
    return ""


def _run_outcome(run_id: str) -> tuple[str, str, str]:
    run = run_outcome(run_id=run_id)
    return run["status"], run["error"] or "", final_answer(run_id)


def _presented(run_id: str) -> list[tuple[str, bytes, str]]:
    from apps.chat.artifacts import artifact_get, run_presented_paths

    run = run_with_thread(run_id=run_id)
    if run is None:
        return []
    files = []
    for virtual in run_presented_paths(run=run):
        try:
            artifact = artifact_get(thread=run.thread, path=virtual.lstrip("/"))
        except DomainError as exc:
            logger.info("Run %s: presented file %s not sent: %s", run_id, virtual, exc.detail)
            continue
        if artifact.data is not None:
            files.append((artifact.name, artifact.data, artifact.content_type))
        else:
            files.append((artifact.name, artifact.real.read_bytes(), artifact.content_type))
    return files


def _upload(thread, name: str, data: bytes) -> None:
    from apps.threads.uploads import IncomingFile, upload_files

    upload_files(thread=thread, files=[IncomingFile(name=name, file=ContentFile(data, name=name))])


def _size_text(n: int) -> str:
    return f"{n / 1_000_000:.1f} MB" if n >= 1_000_000 else f"{n} bytes"


def file_limit(adapter: ChannelAdapter) -> int:
    from apps.threads.uploads import upload_limits

    limit = upload_limits()["max_file_size"]
    platform = adapter.capabilities.max_file_in
    return min(limit, platform) if platform else limit


async def receive_files(adapter: ChannelAdapter, chat: ChatRef, thread, files: tuple[InboundFile, ...],
                        reply_to: str | None) -> list[str]:
    """Save the message's files into the thread's uploads (converted as usual); the names
    saved. A file over the limit, or one the upload service refuses, gets a reply saying why."""
    saved = []
    limit = await database_sync_to_async(file_limit)(adapter)
    for item in files:
        if item.size is not None and item.size > limit:
            await adapter.send_text(chat, f"“{item.name}” is {_size_text(item.size)}; files can be at most {_size_text(limit)}. "
                                          "It was not saved.", reply_to=reply_to)
            continue
        try:
            data = await item.read()
            if len(data) > limit:
                raise ValueError(f"“{item.name}” is {_size_text(len(data))}; files can be at most {_size_text(limit)}")
            await database_sync_to_async(_upload)(thread, item.name, data)
        except DomainError as exc:
            await adapter.send_text(chat, f"“{item.name}” was not saved: {exc.detail}", reply_to=reply_to)
            continue
        except ValueError as exc:
            await adapter.send_text(chat, f"{exc}. It was not saved.", reply_to=reply_to)
            continue
        except Exception as exc:  # the platform failed to hand the file over
            logger.warning("Channel %s: could not fetch %s: %s", chat.provider, item.name, exc)
            await adapter.send_text(chat, f"“{item.name}” could not be downloaded from {adapter.display_name}.", reply_to=reply_to)
            continue
        saved.append(item.name)
    return saved


def _start(user, thread_id: str, text: str, assistant_id: str | None, chat: ChatRef, context: dict | None = None,
           config: dict | None = None):
    from apps.runs.services import start_run

    request = RunCreate(
        assistant_id=assistant_id or None,
        input={"messages": [{"role": "user", "content": text}]},
        metadata={"origin": ORIGIN, "channel": chat.provider},
        multitask_strategy="reject",
        stream_mode=["messages-tuple", "values"],
        context=context or None,  # channels.session.context (DeerFlow's run defaults)
        config=config or None,
    )
    return start_run(user=user, thread_id=thread_id, request=request)


async def start_when_free(user, thread, text: str, assistant_id: str | None, chat: ChatRef, *, context: dict | None = None,
                          config: dict | None = None) -> str:
    """Start the run; while another run (from the web, a schedule) holds the thread, wait."""
    deadline = time.monotonic() + BUSY_WAIT_LIMIT
    while True:
        try:
            admitted = await database_sync_to_async(_start)(user, thread.pk, text, assistant_id, chat, context, config)
            return str(admitted.run.pk)
        except ThreadBusy:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(BUSY_POLL_SECONDS)


@dataclass
class _Streamer:
    """Edits one message with the answer so far, at most once per ``edit_interval``."""

    adapter: ChannelAdapter
    chat: ChatRef
    reply_to: str | None
    sent: SentMessage | None = None
    shown: str = ""
    last_edit: float = 0.0

    async def begin(self) -> None:
        self.sent = await self.adapter.begin_answer(self.chat, WORKING, reply_to=self.reply_to)
        self.last_edit = time.monotonic()

    async def progress(self, text: str) -> None:
        caps = self.adapter.capabilities
        if self.sent is None or not text.strip() or text == self.shown:
            return
        if time.monotonic() - self.last_edit < self.adapter.edit_interval_for(self.chat):
            return
        shown = text if len(text) <= caps.max_text else text[: caps.max_text - 1] + "…"
        try:
            await self.adapter.edit_text(self.sent, shown)
            self.shown = text
        except Exception as exc:  # a rate limit or a transient error: the final edit catches up
            logger.info("Channel %s: edit skipped: %s", self.chat.provider, exc)
        self.last_edit = time.monotonic()

    async def finish(self, text: str) -> None:
        try:
            if await self.adapter.finish_answer(self.chat, self.sent, text or "(no answer)", reply_to=self.reply_to):
                return
        except Exception as exc:  # the rich form failed: the plain one below still reaches the user
            logger.info("Channel %s: rich final answer failed (%s); sending plain text", self.chat.provider, exc)
        chunks = split_text(text or "(no answer)", self.adapter.capabilities.max_text)
        if self.sent is not None:
            if chunks[0] != self.shown:
                try:
                    await self.adapter.edit_text(self.sent, chunks[0])
                except Exception as exc:
                    logger.info("Channel %s: final edit failed (%s); sending instead", self.chat.provider, exc)
                    await self.adapter.send_text(self.chat, chunks[0], reply_to=self.reply_to)
            rest = chunks[1:]
        else:
            rest = chunks
        for chunk in rest:
            await self.adapter.send_text(self.chat, chunk, reply_to=self.reply_to)


def _stream_text(item_data: Any, text: str) -> str:
    """Add a ``messages`` event's AI chunk to the answer so far (a new AI message restarts it:
    the text before a tool call is not the answer)."""
    if not isinstance(item_data, list) or not item_data or not isinstance(item_data[0], dict):
        return text
    message = item_data[0]
    if message.get("type") not in ("AIMessageChunk", "ai"):
        return text
    return text + _text_of(message.get("content"))


async def follow_run(adapter: ChannelAdapter, chat: ChatRef, run_id: str, *, reply_to: str | None) -> str:
    """Stream the run's answer to the chat and send its presented files; returns its status."""
    from apps.runs.runtime import get_runtime

    streamer = _Streamer(adapter, chat, reply_to)
    await streamer.begin()
    text, last_id, error = "", None, ""
    async for item in get_runtime().bridge.subscribe(run_id, heartbeat=15.0):
        if item.event == "messages":
            new_id = item.data[0].get("id") if isinstance(item.data, list) and item.data and isinstance(item.data[0], dict) else None
            if new_id and new_id != last_id:
                text, last_id = "", new_id
            text = _stream_text(item.data, text)
            await streamer.progress(text)
        elif item.event == "error" and isinstance(item.data, dict):
            error = str(item.data.get("message") or item.data.get("error") or "")
    status, row_error, answer = await _settled(run_id)
    if status == RunStatus.ERROR:
        await streamer.finish(f"The run failed: {error or row_error or 'unknown error'}")
        return status
    if status == RunStatus.INTERRUPTED:
        waiting = await database_sync_to_async(questions.pending_for_run)(run_id=run_id)
        if waiting is not None:
            # The run stopped for the person: what it said so far, then the question with its
            # answers (buttons where the platform has them). The answer resumes it (manager).
            user_id, pending = waiting
            said = answer if answer and answer.strip() != pending.question.strip() else ""
            await streamer.finish(said or "The agent needs your answer to go on.")
            offered = questions.choices(pending, user_id)
            if offered:
                await adapter.send_choices(chat, questions.prompt_text(pending), offered, reply_to=reply_to)
            else:
                await adapter.send_text(chat, questions.prompt_text(pending), reply_to=reply_to)
            return status
    if status == RunStatus.INTERRUPTED and not answer:
        answer = "Stopped."
    await streamer.finish(answer)
    if adapter.capabilities.files_out:
        for name, data, content_type in await database_sync_to_async(_presented)(run_id):
            try:
                await adapter.send_file(chat, name, data, content_type=content_type, reply_to=reply_to)
            except Exception as exc:
                logger.warning("Channel %s: could not send %s: %s", chat.provider, name, exc)
                await adapter.send_text(chat, f"“{name}” could not be sent: {exc}", reply_to=reply_to)
    return status


async def _settled(run_id: str) -> tuple[str, str, str]:
    """The run's outcome once its row is terminal (the stream ends just before that, or a
    bridge gap ended it early)."""
    delay = 0.05
    while True:
        status, error, answer = await database_sync_to_async(_run_outcome)(run_id)
        if status not in ACTIVE_RUN_STATUSES:
            return status, error, answer
        await asyncio.sleep(delay)
        delay = min(delay * 2, 2.0)  # after a gap the run may go on for long: poll gently
