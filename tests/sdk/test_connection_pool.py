"""PostgreSQL connections are pooled per process and always given back.

A request's sync code runs in a fresh thread under ASGI, and stream bodies read the database
from executor threads: a thread that kept its connection would drain a small pool and the
next request would time out waiting. Many runs through a server with a 2-connection pool prove
every path returns what it takes.
"""

import pytest
from langgraph_sdk import get_sync_client

from harness.testing import loopback_config_text
from tests.sdk.conftest import LOCAL_SANDBOX
from tests.support.live import start_live_server

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def test_a_two_connection_pool_serves_many_runs(tmp_path, model_server, script):
    script(*["pooled answer"] * 24)
    server = start_live_server(tmp_path / "pool", config_text=loopback_config_text(model_server.base_url, timeout=30, extra_yaml=LOCAL_SANDBOX),
                               extra_env={"DB_POOL_MAX_SIZE": "2", "DB_POOL_TIMEOUT": "5"})
    try:
        sdk = get_sync_client(url=f"{server.url}/api", headers={"Authorization": f"Bearer {server.create_user_token('pool-user')}"})
        for _ in range(12):
            tid = sdk.threads.create()["thread_id"]
            assert sdk.runs.wait(tid, "lead_agent", input={"messages": [{"role": "user", "content": "hi"}]})["messages"][-1]["content"] == "pooled answer"
            assert [p.event for p in sdk.runs.stream(tid, "lead_agent", input={"messages": [{"role": "user", "content": "again"}]})][-1] == "end"
        assert "couldn't get a connection" not in server.log()
    finally:
        server.stop()
