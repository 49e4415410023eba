"""Several servers that execute the runs they admit (no Celery): any server serves any run's
stream and cancels it, as with Celery workers. With REDIS_URL set the events travel through
Redis; without it (the embedded stack with WEB_PROCESSES > 1) through the servers' stream relay
(deerflow_site/server/stream_relay.py)."""

import os

import pytest

from harness.testing import Reply, loopback_config_text
from tests.sdk.conftest import LOCAL_SANDBOX
from tests.sdk.test_langgraph_sdk import USER, cancel_through_another_server, first_event_ids, resume_a_long_answer_anywhere
from tests.support.live import start_live_server


@pytest.fixture(scope="module", params=["relay", pytest.param("redis", marks=pytest.mark.redis)])
def two_servers(request, tmp_path_factory, model_server):
    config = loopback_config_text(model_server.base_url, timeout=30, extra_yaml=LOCAL_SANDBOX)
    env = {}
    if request.param == "redis":
        redis_url = os.environ["DEERFLOW_TEST_REDIS_URL"]
        env = {"REDIS_URL": redis_url, "CELERY_BROKER_URL": redis_url}
    server = start_live_server(tmp_path_factory.mktemp(f"live-servers-{request.param}"), config_text=config, extra_env=env, servers=2)
    yield server
    server.stop()


def test_a_run_executed_by_one_server_is_joined_and_cancelled_through_the_other(two_servers, script, model_server):
    from langgraph_sdk import get_sync_client

    token = two_servers.create_user_token("servers-user")
    headers = {"Authorization": f"Bearer {token}"}
    first = get_sync_client(url=f"{two_servers.urls[0]}/api", headers=headers)
    second = get_sync_client(url=f"{two_servers.urls[1]}/api", headers=headers)

    script(Reply(text="one two three four five six seven eight", chunk_size=4))
    tid = first.threads.create()["thread_id"]
    parts = list(first.runs.stream(tid, "lead_agent", input=USER, stream_mode=["messages-tuple"]))
    run_id = parts[0].data["run_id"]
    full = [(p.event, p.data) for p in parts]
    ids = first_event_ids(f"{two_servers.urls[1]}/api", headers, tid, run_id, 2)
    assert [(p.event, p.data) for p in second.runs.join_stream(tid, run_id, last_event_id=ids[-1])] == full[2:]
    executed_by = two_servers.shell(f"from apps.runs.models import Run; print(Run.objects.get(pk='{run_id}').lease_owner)")
    assert executed_by.endswith(f":{two_servers.process.pid}")  # the server that admitted it

    cancel_through_another_server(first, second, tid, script, model_server)


def test_a_websocket_on_the_other_server_follows_a_live_run(two_servers, script):
    """The chat's socket reconnecting to the server that does not execute its run (as after a
    network blip behind one port) still gets the run's events to the end."""
    import asyncio

    from langgraph_sdk import get_sync_client

    from tests.apps.schedules.test_scheduling_live import follow, session_cookie

    token = two_servers.create_user_token("socket-user")
    first = get_sync_client(url=f"{two_servers.urls[0]}/api", headers={"Authorization": f"Bearer {token}"})
    script(Reply(text="streamed to the other server", delay=1.0, chunk_size=4))
    tid = first.threads.create()["thread_id"]
    run = first.runs.create(tid, "lead_agent", input=USER, stream_mode=["values"])
    events = asyncio.run(follow(two_servers.urls[1], tid, run["run_id"], session_cookie(two_servers, "socket-user")))
    assert events[-1]["event"] == "end"
    last_values = [e["data"] for e in events if e["event"] == "values"][-1]
    assert last_values["messages"][-1]["content"] == "streamed to the other server"


def test_a_long_answer_admitted_by_one_server_resumes_on_the_other_without_loss(two_servers, script):
    from langgraph_sdk import get_sync_client

    headers = {"Authorization": f"Bearer {two_servers.create_user_token('long-answer-user')}"}
    first = get_sync_client(url=f"{two_servers.urls[0]}/api", headers=headers)
    resume_a_long_answer_anywhere(first, f"{two_servers.urls[0]}/api", f"{two_servers.urls[1]}/api", headers, script)
