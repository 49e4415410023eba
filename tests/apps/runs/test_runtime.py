"""The process's runs runtime: one checkpointer however the first runs arrive."""

import asyncio

from apps.runs.runtime import RunsRuntime


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
