"""A thread's own MCP processes (``session_scope: thread``) opened by a run on a Celery worker
end when the thread is deleted through a server: the delete reaches every process over Redis."""

import json
import re
import sys
import time
from pathlib import Path

import pytest

from harness.testing import Reply, call, loopback_config_text, tool_reply
from tests.sdk.conftest import LOCAL_SANDBOX
from tests.support.live import start_live_server

pytestmark = [pytest.mark.redis]

SERVERS = str(Path(__file__).parents[2] / "harness" / "mcp" / "servers.py")


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_deleting_a_thread_closes_its_mcp_process_on_the_celery_worker(tmp_path_factory, model_server, script, own_redis_url):
    from langgraph_sdk import get_sync_client

    home = tmp_path_factory.mktemp("mcp-celery")
    extensions = home / "extensions_config.json"
    # A long idle timeout: only the delete can end the worker's process within the test.
    extensions.write_text(json.dumps({"mcpServers": {"st": {
        "command": sys.executable, "args": [SERVERS, "stdio", "stateful"],
        "session_scope": "thread", "session_idle_timeout": 3600}}}))
    # A Redis database of its own: the SDK's distributed stack keeps a Celery worker on the shared
    # one, and it took this test's run once (and ran it against its own database).
    redis_url = own_redis_url
    env = {"RUN_EXECUTOR": "celery", "REDIS_URL": redis_url, "CELERY_BROKER_URL": redis_url,
           "DEER_FLOW_EXTENSIONS_CONFIG_PATH": str(extensions)}
    config = loopback_config_text(model_server.base_url, timeout=30, extra_yaml=LOCAL_SANDBOX)
    server = start_live_server(home, config_text=config, extra_env=env, celery_workers=1)
    try:
        token = server.create_user_token("mcp-celery-user")
        sdk = get_sync_client(url=f"{server.url}/api", headers={"Authorization": f"Bearer {token}"})
        script(tool_reply(call("count", {})), Reply(text="counted"))
        tid = sdk.threads.create()["thread_id"]
        run = sdk.runs.wait(tid, "lead_agent", input={"messages": [{"role": "user", "content": "count"}]})
        assert "messages" in run, f"the run did not finish with a state: {run}\n{server.log()[-4000:]}"
        tool_output = next(m["content"] for m in run["messages"] if m["type"] == "tool")
        pid = int(re.search(r"pid=(\d+)", str(tool_output)).group(1))
        executed_by = server.shell(f"from apps.runs.models import Run; print(Run.objects.get(thread_id='{tid}').lease_owner)")
        assert not executed_by.endswith(f":{server.process.pid}")  # the worker ran it, not the server
        assert _alive(pid)

        sdk.threads.delete(tid)
        end = time.monotonic() + 60  # the close is asynchronous; the deadline only ends a hang
        while _alive(pid):
            assert time.monotonic() < end, "the Celery worker kept the deleted thread's MCP process"
            time.sleep(0.1)
    finally:
        server.stop()
