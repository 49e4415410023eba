"""The server's checkpointer survives a broken database connection."""

import contextlib
import os

import pytest

from harness.runtime.checkpointer import open_checkpointer

PG_URL = os.environ.get("DATABASE_URL", "")
pytestmark = [pytest.mark.postgres, pytest.mark.skipif(not PG_URL.startswith("postgres"), reason="needs PostgreSQL: runs in the second tier of `make test`")]


async def test_a_postgres_saver_replaces_a_connection_the_database_dropped():
    import psycopg

    config = {"configurable": {"thread_id": "survivor", "checkpoint_ns": ""}}
    async with open_checkpointer(PG_URL) as saver:
        assert await saver.aget_tuple(config) is None
        # What a database restart, a failover or a query cut off mid-way leaves behind.
        with psycopg.connect(PG_URL, autocommit=True) as admin:
            admin.execute("select pg_terminate_backend(pid) from pg_stat_activity "
                          "where datname = current_database() and pid <> pg_backend_pid() and application_name = ''")
        with contextlib.suppress(psycopg.OperationalError):
            await saver.aget_tuple(config)  # the call that meets the dead connection may fail
        assert await saver.aget_tuple(config) is None  # the next one gets a fresh connection
