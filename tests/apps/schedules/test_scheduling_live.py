"""A run that beat fires on `make run`'s stack (Daphne and a Celery worker with beat, SQLite,
no Redis) streams live to a user who opens its thread, like any other run."""

import asyncio
import json
import threading
import time

import httpx
import pytest
import websockets

from harness.testing import Reply, loopback_config_text
from tests.support.live import start_live_server

pytestmark = [pytest.mark.slow]

ANSWER = "a scheduled answer, token by token, while you watch"


@pytest.fixture(scope="module")
def stack(tmp_path_factory, model_server):
    config = loopback_config_text(model_server.base_url, timeout=30, extra_yaml="sandbox:\n  use: local\n")
    server = start_live_server(tmp_path_factory.mktemp("sched-live"), config_text=config, celery_workers=1)
    yield server
    server.stop()


def session_cookie(live, username: str) -> str:
    return live.shell(
        "from apps.accounts.models import User\n"
        "from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY\n"
        "from importlib import import_module\nfrom django.conf import settings\n"
        f"u = User.objects.get(username={username!r})\n"
        "s = import_module(settings.SESSION_ENGINE).SessionStore()\n"
        "s[SESSION_KEY] = str(u.pk); s[BACKEND_SESSION_KEY] = 'django.contrib.auth.backends.ModelBackend'\n"
        "s[HASH_SESSION_KEY] = u.get_session_auth_hash(); s.create(); print(s.session_key)"
    )


def fire_with_beat(live, task_id: str) -> None:
    """What beat does on its next tick for a task that is due, in a process of its own."""
    live.shell(
        "import datetime as dt\nfrom django.utils import timezone\n"
        "from django_celery_beat.models import PeriodicTask\nfrom django_celery_beat.schedulers import DatabaseScheduler\n"
        "from apps.schedules.beat import entry_name\nfrom deerflow_site.celery import app\n"
        f"PeriodicTask.objects.filter(name=entry_name({task_id!r})).update(last_run_at=timezone.now() - dt.timedelta(minutes=5))\n"
        "DatabaseScheduler(app=app).tick()"
    )


async def follow(url: str, thread_id: str, run_id: str, cookie: str, on_first_event=None) -> list[dict]:
    ws_url = url.replace("http://", "ws://") + f"/ws/threads/{thread_id}/"
    async with websockets.connect(ws_url, additional_headers={"Cookie": f"sessionid={cookie}", "Origin": url}) as ws:
        await ws.send(json.dumps({"type": "subscribe", "run_id": run_id}))
        events = []
        while True:
            message = json.loads(await asyncio.wait_for(ws.recv(), 30))
            assert message["type"] == "event", message
            events.append(message)
            if len(events) == 1 and on_first_event is not None:
                on_first_event()
            if message["event"] == "end":
                return events


def test_a_beat_fired_run_streams_live_to_its_thread(stack, script):
    # The model answers only once the user is watching (the stream's first event has arrived),
    # so the run is still going when they open it, however slow the machine is.
    watching = threading.Event()

    def answer_once_watched(messages):
        watching.wait(60)
        return Reply(text=ANSWER, chunk_size=4)

    script(answer_once_watched)
    token = stack.create_user_token("sched-live")
    api = httpx.Client(base_url=f"{stack.url}/api", headers={"Authorization": f"Bearer {token}"}, timeout=30)
    task = api.post("/scheduled-tasks", json={"title": "Watch me", "prompt": "say something", "cron": "* * * * *"}).json()
    fire_with_beat(stack, task["id"])

    deadline = time.monotonic() + 30
    while True:
        rows = api.get(f"/scheduled-tasks/{task['id']}/runs").json()
        if rows and rows[0]["run_id"]:
            break
        assert time.monotonic() < deadline, f"beat's firing started no run: {rows}"
        time.sleep(0.1)
    run_id, thread_id = rows[0]["run_id"], rows[0]["thread_id"]
    assert rows[0]["trigger"] == "scheduled"
    assert api.get(f"/threads/{thread_id}/runs/{run_id}").json()["status"] in ("pending", "running")

    events = asyncio.run(follow(stack.url, thread_id, run_id, session_cookie(stack, "sched-live"), on_first_event=watching.set))
    chunks = [e["data"][0]["content"] for e in events if e["event"] == "messages" and e["data"][0]["type"] == "AIMessageChunk"]
    assert len(chunks) > 3, [e["event"] for e in events]  # token by token, not one final message
    assert "".join(chunks) == ANSWER
    assert events[0]["event"] == "metadata" and events[-1]["event"] == "end"
    assert api.get(f"/threads/{thread_id}/runs/{run_id}").json()["status"] == "success"
