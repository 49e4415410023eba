"""The process's runs runtime: one checkpointer however the first runs arrive."""

import asyncio
import subprocess
import sys

from apps.runs.runtime import RunsRuntime
from tests.support.live import ROOT, live_env
from tests.support.waiting import HANG_SECONDS


def test_runs_starting_together_share_one_open_checkpointer(tmp_path, settings):
    settings.RUN_STREAM_BRIDGE = "memory"
    runtime = RunsRuntime(f"sqlite:///{tmp_path / 'checkpoints.sqlite3'}")

    async def first_runs():
        savers = await asyncio.gather(*(runtime.checkpointer() for _ in range(3)))
        try:
            # A second saver opened and dropped would close the connection under the others.
            await asyncio.sleep(0.05)
            assert await savers[0].aget_tuple({"configurable": {"thread_id": "t", "checkpoint_ns": ""}}) is None
            return savers
        finally:
            await runtime._stack.aclose()

    savers = asyncio.run(first_runs())
    assert savers[0] is savers[1] is savers[2]


def test_stopping_the_runtime_ends_its_loop_and_background_tasks(tmp_path, settings):
    settings.RUN_STREAM_BRIDGE = "memory"
    runtime = RunsRuntime(f"sqlite:///{tmp_path / 'checkpoints.sqlite3'}")
    loop = runtime.loop  # starts the thread, the recovery sweep and the lease keeper
    thread = runtime._thread

    async def open_saver():
        return await runtime.checkpointer()

    runtime.call(open_saver)
    background = list(runtime._background)
    assert thread.is_alive() and background
    runtime.stop()
    assert not thread.is_alive() and not loop.is_running()
    assert all(task.done() for task in background)


def test_the_runs_loop_is_uvloop_and_runs_work_on_it(tmp_path, settings):
    import uvloop

    settings.RUN_STREAM_BRIDGE = "memory"
    runtime = RunsRuntime(f"sqlite:///{tmp_path / 'checkpoints.sqlite3'}")
    try:
        assert isinstance(runtime.loop, uvloop.Loop)

        async def save_and_read() -> object:
            saver = await runtime.checkpointer()  # the saver's thread hand-offs on this loop
            return await saver.aget_tuple({"configurable": {"thread_id": "t", "checkpoint_ns": ""}})

        assert runtime.call(save_and_read, timeout=10) is None
    finally:
        runtime.stop()


EXITING = """\
import atexit, threading
import django
django.setup()
from apps.runs.runtime import get_runtime

def report():  # registered first, so it runs after anything registered later
    running = [t.name for t in threading.enumerate() if t.name == "deerflow-runs"]
    print("runs loop at exit:", "running" if running else "stopped", flush=True)

atexit.register(report)
get_runtime().call(get_runtime().checkpointer)  # the loop, its timers and the saver, as a run leaves them
"""


def test_a_process_that_exits_stops_its_runs_loop_first(tmp_path):
    # uvloop wakes the loop's thread for a timer from C; woken late in the interpreter's
    # finalization it crashed the exiting process (SIGSEGV instead of its exit code, seen on a
    # stopped server under load). The loop must be gone before finalization begins.
    env = live_env(tmp_path, config_text="config_version: 1\nmodels: []\nsandbox:\n  use: local\n")
    result = subprocess.run([sys.executable, "-c", EXITING], cwd=ROOT, env=env, capture_output=True, text=True, timeout=HANG_SECONDS)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "runs loop at exit: stopped", result.stdout + result.stderr
    assert "did not stop" not in result.stderr and "Traceback" not in result.stderr, result.stderr
