"""Ctrl-C in the console, whichever comes first: the worker's cancellation or the end of the
stream the server closed when it stopped the run. CI saw the second order on a busy machine
(the run was interrupted on the server; the console said "Done.")."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from textual.widgets import Static

from deerflow_cli.app import DeerFlowConsole
from deerflow_cli.backend import Choice, Loaded, ThreadInfo
from deerflow_cli.events import Event, Started, Text


class StoppableBackend:
    """A server whose cancel route stops the run and ends its stream before it answers."""

    label = "a fake server"

    def __init__(self, stream_ends_first: bool) -> None:
        self.stream_ends_first = stream_ends_first
        self.stopped = asyncio.Event()
        self.stream_ended = asyncio.Event()
        self.cancelled: list[str | None] = []

    async def threads(self) -> list[ThreadInfo]:
        return []

    async def load(self, thread_id: str) -> Loaded:
        return Loaded(title="", messages=[], asks=[])

    async def new_thread(self) -> str:
        return "t-1"

    async def turn(self, thread_id: str, *, text: str | None = None, resume: Any = None, model: str | None = None,
                   agent: str | None = None) -> AsyncIterator[Event]:
        try:
            yield Started("r-1")
            yield Text("m-1", "Once upon")
            await self.stopped.wait()
        finally:
            self.stream_ended.set()

    async def cancel(self, thread_id: str, run_id: str | None) -> None:
        self.cancelled.append(run_id)
        self.stopped.set()
        if self.stream_ends_first:
            await self.stream_ended.wait()

    async def models(self) -> list[Choice]:
        return []

    async def agents(self) -> list[Choice]:
        return []

    async def skills(self) -> list[Choice]:
        return []

    async def upload(self, thread_id: str, path: Any) -> str:
        return ""

    async def close(self) -> None:
        pass


def notices(app: DeerFlowConsole) -> list[str]:
    return [str(widget.render()) for widget in app.query(".notice").results(Static)]


async def notices_once_stopped(app: DeerFlowConsole, pilot: Any, backend: StoppableBackend) -> list[str]:
    while not backend.cancelled or app.running:
        await pilot.pause()
    await pilot.pause()
    return notices(app)


def assert_cancelled_once(backend: StoppableBackend, scenario: Any) -> None:
    shown = asyncio.run(asyncio.wait_for(scenario(), 60))
    assert backend.cancelled == ["r-1"]
    assert shown.count("Cancelled.") == 1, shown


@pytest.mark.parametrize("stream_ends_first", [True, False], ids=["stream ends first", "worker cancelled first"])
def test_ctrl_c_reads_cancelled_however_the_turn_ended(stream_ends_first):
    backend = StoppableBackend(stream_ends_first)

    async def scenario() -> list[str]:
        app = DeerFlowConsole(backend)
        async with app.run_test() as pilot:
            await pilot.press(*"Write a long essay", "enter")
            while app.run_id is None:
                await pilot.pause()
            await pilot.press("ctrl+c")
            return await notices_once_stopped(app, pilot, backend)

    assert_cancelled_once(backend, scenario)


class SlowToNameBackend(StoppableBackend):
    """A server whose run's stream is slow to name the run."""

    def __init__(self) -> None:
        super().__init__(stream_ends_first=False)
        self.run_named = asyncio.Event()
        self.stream_opened = asyncio.Event()

    async def turn(self, thread_id: str, **kwargs: Any) -> AsyncIterator[Event]:
        self.stream_opened.set()
        await self.run_named.wait()
        async for event in super().turn(thread_id, **kwargs):
            yield event


@pytest.mark.parametrize("pressed", ["with the message", "before the run is named"])
def test_ctrl_c_before_the_server_names_the_run_cancels_it_once_named(pressed):
    """CI pressed Ctrl-C as the turn began, and the console took it for a key with nothing to
    cancel: the run went on. A Ctrl-C before the run's id is known is carried out on it."""
    backend = SlowToNameBackend()

    async def scenario() -> list[str]:
        app = DeerFlowConsole(backend)
        async with app.run_test() as pilot:
            if pressed == "with the message":  # the turn's worker may not have started yet
                await pilot.press(*"Write a long essay", "enter", "ctrl+c")
            else:
                await pilot.press(*"Write a long essay", "enter")
                await backend.stream_opened.wait()
                await pilot.press("ctrl+c")
            backend.run_named.set()
            return await notices_once_stopped(app, pilot, backend)

    assert_cancelled_once(backend, scenario)
