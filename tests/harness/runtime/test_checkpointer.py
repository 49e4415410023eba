"""The server's checkpointers: SQLite's keeps LangGraph's saver behaviour with each operation on
its own thread and writers queued across processes; PostgreSQL's survives a dropped connection."""

import contextlib
import os
import uuid

import pytest

from harness.runtime.checkpointer import open_checkpointer

PG_URL = os.environ.get("DATABASE_URL", "")


def _graph(saver):
    from langgraph.graph import END, START, MessagesState, StateGraph

    def reply(state: MessagesState) -> dict:
        return {"messages": [("ai", f"reply {len(state['messages']) // 2 + 1}")]}

    builder = StateGraph(MessagesState)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    return builder.compile(checkpointer=saver)


async def test_the_sqlite_saver_keeps_state_history_and_deletes_threads(tmp_path):
    url = f"sqlite:///{tmp_path / 'checkpoints.sqlite3'}"
    config = {"configurable": {"thread_id": "t1"}}
    async with open_checkpointer(url) as saver:
        graph = _graph(saver)
        await graph.ainvoke({"messages": [("user", "one")]}, config)
        await graph.ainvoke({"messages": [("user", "two")]}, config)
        state = await graph.aget_state(config)
        assert [m.content for m in state.values["messages"]] == ["one", "reply 1", "two", "reply 2"]
        history = [snapshot async for snapshot in graph.aget_state_history(config)]
        assert len(history) == 6  # input and step checkpoints of both runs, newest first
        assert [len(s.values.get("messages", [])) for s in history] == [4, 3, 2, 2, 1, 0]
        older = [s async for s in graph.aget_state_history(config, before=history[1].config, limit=2)]
        assert [s.config["configurable"]["checkpoint_id"] for s in older] == [
            s.config["configurable"]["checkpoint_id"] for s in history[2:4]]
        await saver.adelete_thread("t1")
        assert await saver.aget_tuple(config) is None
        await graph.ainvoke({"messages": [("user", "kept")]}, {"configurable": {"thread_id": "t2"}})
    # On the file: a new saver (a restarted server) reads what the first one wrote.
    async with open_checkpointer(url) as saver:
        state = await _graph(saver).aget_state({"configurable": {"thread_id": "t2"}})
        assert [m.content for m in state.values["messages"]] == ["kept", "reply 1"]
        assert await saver.aget_tuple(config) is None


async def test_two_sqlite_savers_on_one_file_write_without_locking_errors(tmp_path):
    """As two server processes do: each saver has its own connection and queue lock."""
    import asyncio

    url = f"sqlite:///{tmp_path / 'checkpoints.sqlite3'}"
    async with open_checkpointer(url) as first, open_checkpointer(url) as second:
        async def runs(saver, prefix: str) -> None:
            graph = _graph(saver)
            for i in range(15):
                await graph.ainvoke({"messages": [("user", "hi")]}, {"configurable": {"thread_id": f"{prefix}{i % 3}"}})

        await asyncio.gather(runs(first, "a"), runs(second, "b"))
        for prefix, saver in (("a", second), ("b", first)):  # each reads what the other wrote
            state = await _graph(saver).aget_state({"configurable": {"thread_id": f"{prefix}0"}})
            assert len(state.values["messages"]) == 10


async def test_operations_asked_together_share_one_thread_hop_and_keep_their_own_outcomes(tmp_path):
    """A run's exit asks for its checkpoint and its writes at once: one hand-off to the
    saver's thread serves them all, in order, each with its own result or error."""
    import asyncio

    async with open_checkpointer(f"sqlite:///{tmp_path / 'checkpoints.sqlite3'}") as saver:
        graph = _graph(saver)
        await graph.ainvoke({"messages": [("user", "hi")]}, {"configurable": {"thread_id": "t1"}})
        hops = []
        submit = saver._executor.submit
        saver._executor.submit = lambda *a, **k: hops.append(1) or submit(*a, **k)
        order = []

        def step(name):
            order.append(name)
            if name == "bad":
                raise ValueError("this one fails")
            return name

        results = await asyncio.gather(saver.aget_tuple({"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}),
                                       saver.run(step, "first"), saver.run(step, "bad"), saver.run(step, "last"),
                                       return_exceptions=True)
        assert len(hops) == 1
        assert order == ["first", "bad", "last"]
        assert [m.content for m in results[0].checkpoint["channel_values"]["messages"]] == ["hi", "reply 1"]
        assert results[1] == "first" and results[3] == "last"
        assert isinstance(results[2], ValueError)
        assert await saver.run(step, "alone") == "alone"  # later calls get hops of their own
        assert len(hops) == 2


async def test_a_primed_read_answers_the_next_read_of_the_same_checkpoint_once(tmp_path):
    """The run's pre-run read of a thread's head answers LangGraph's read of it as the run
    starts; a read of another checkpoint, or a second read, goes to the database."""
    async with open_checkpointer(f"sqlite:///{tmp_path / 'checkpoints.sqlite3'}") as saver:
        graph = _graph(saver)
        config = {"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}
        await graph.ainvoke({"messages": [("user", "hi")]}, config)
        head = await saver.aget_tuple(config)
        saver.prime(config, head)
        await saver.adelete_thread("t1")  # what the database says from here on
        assert await saver.aget_tuple(config) is head
        assert await saver.aget_tuple(config) is None
        saver.prime(config, head)
        assert await saver.aget_tuple({"configurable": {"thread_id": "t2", "checkpoint_ns": ""}}) is None
        assert await saver.aget_tuple(config) is None  # the mismatched read used the priming up


@pytest.mark.postgres
@pytest.mark.skipif(not PG_URL.startswith("postgres"), reason="needs PostgreSQL: runs in the second tier of `make test`")
async def test_a_postgres_saver_replaces_a_connection_the_database_dropped():
    import psycopg

    config = {"configurable": {"thread_id": "survivor", "checkpoint_ns": ""}}
    # Only this saver's connection is cut: the other xdist worker's runs use the same database.
    name = f"checkpointer-survivor-{uuid.uuid4().hex[:12]}"
    async with open_checkpointer(f"{PG_URL}{'&' if '?' in PG_URL else '?'}application_name={name}") as saver:
        assert await saver.aget_tuple(config) is None
        # What a database restart, a failover or a query cut off mid-way leaves behind.
        with psycopg.connect(PG_URL, autocommit=True) as admin:
            killed = admin.execute("select pg_terminate_backend(pid) from pg_stat_activity where application_name = %s", [name]).fetchall()
        assert killed == [(True,)]
        with contextlib.suppress(psycopg.OperationalError):
            await saver.aget_tuple(config)  # the call that meets the dead connection may fail
        assert await saver.aget_tuple(config) is None  # the next one gets a fresh connection


@pytest.mark.postgres
@pytest.mark.skipif(not PG_URL.startswith("postgres"), reason="needs PostgreSQL: runs in the second tier of `make test`")
async def test_servers_starting_together_on_a_new_database_all_get_their_tables():
    import asyncio
    from urllib.parse import urlsplit, urlunsplit

    import psycopg

    # A database nobody has set up yet, as a new deployment's servers and workers find it.
    name = f"ckpt_race_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(PG_URL, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    url = urlunsplit(urlsplit(PG_URL)._replace(path=f"/{name}"))
    try:
        async def start_and_write(i: int) -> None:
            async with open_checkpointer(url) as saver:
                graph = _graph(saver)
                config = {"configurable": {"thread_id": f"starter-{i}", "checkpoint_ns": ""}}
                await graph.ainvoke({"messages": [("user", "hi")]}, config)
                assert (await saver.aget_tuple(config)) is not None

        await asyncio.gather(*(start_and_write(i) for i in range(6)))
    finally:
        with psycopg.connect(PG_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
