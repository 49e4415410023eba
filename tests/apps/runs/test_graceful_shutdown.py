"""SIGTERM to a server (a deploy, a scale-down) loses no run and leaves none stuck.

Two real Daphne servers on one database and Redis, each executing the runs it admits, and a
loopback model whose answers the test releases. Server 1 is sent SIGTERM while it executes
two runs and streams a third that server 2 executes:

- from then on it admits no run (503, ``Retry-After``) and is not ready, yet still alive;
- the run that finishes within ``SHUTDOWN_GRACE_SECONDS`` finishes as usual, stream and all;
- the one that does not is handed to recovery before the process exits: settled as an error
  with what its checkpoint held, its thread free, no run left ``running`` under the dead
  process's lease;
- the stream of server 2's run is closed with a reconnect hint, and resumed on server 2 with
  ``Last-Event-ID`` it goes on to the end without losing an event; a websocket following the
  same run on server 1 (the chat page's way) is closed with 1012, "service restart".
"""

from __future__ import annotations

import json
import os
import signal
import threading

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from harness.testing import LoopbackOpenAIServer, Reply, loopback_config_text
from tests.sdk.conftest import LOCAL_SANDBOX
from tests.support.live import start_live_server
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.redis]

GRACE = "6"




class Stream:
    """An SSE stream read in a thread: the raw text, the events by name, the last id."""

    def __init__(self, url: str, token: str, *, last_event_id: str | None = None):
        self.text = ""
        self.closed = threading.Event()
        self.opened = threading.Event()
        headers = {"Authorization": f"Bearer {token}", "Accept": "text/event-stream"}
        if last_event_id:
            headers["Last-Event-ID"] = last_event_id
        self._thread = threading.Thread(target=self._read, args=(url, headers), daemon=True)
        self._thread.start()

    def _read(self, url: str, headers: dict) -> None:
        try:
            with httpx.stream("GET", url, headers=headers, timeout=httpx.Timeout(10, read=120)) as response:
                self.opened.set()
                for chunk in response.iter_text():
                    self.text += chunk
        except httpx.HTTPError:
            pass  # a connection the stopping server drops shows as what was read before it
        finally:
            self.opened.set()
            self.closed.set()

    @property
    def events(self) -> list[str]:
        return [line[len("event: "):] for line in self.text.splitlines() if line.startswith("event: ")]

    @property
    def last_id(self) -> str | None:
        ids = [line[len("id: "):] for line in self.text.splitlines() if line.startswith("id: ")]
        return ids[-1] if ids else None


class Socket:
    """The chat page's websocket on a thread, following one run, read in a thread until the
    server closes it: the events by name and the close code."""

    def __init__(self, base_url: str, thread_id: str, run_id: str, cookie: str):
        self.events: list[str] = []
        self.close_code: int | None = None
        self.closed = threading.Event()
        url = base_url.replace("http://", "ws://") + f"/ws/threads/{thread_id}/"
        self._ws = connect(url, origin=base_url, additional_headers={"Cookie": f"sessionid={cookie}"}, open_timeout=30)
        self._ws.send(json.dumps({"type": "subscribe", "run_id": run_id}))
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            for raw in self._ws:
                message = json.loads(raw)
                if message.get("type") == "event":
                    self.events.append(message["event"])
        except ConnectionClosed:
            pass
        finally:
            self.close_code = self._ws.close_code
            self.closed.set()


def _start_run(api: httpx.Client, prompt: str) -> tuple[str, str]:
    tid = api.post("/threads", json={}).json()["thread_id"]
    response = api.post(f"/threads/{tid}/runs", json={"input": {"messages": [{"role": "user", "content": prompt}]},
                                                      "stream_mode": ["values", "messages-tuple"]})
    assert response.status_code == 200, response.text
    return tid, response.json()["run_id"]


def test_sigterm_drains_the_server_and_hands_the_rest_to_recovery(tmp_path):
    finish_in_time, never_in_time, elsewhere = threading.Event(), threading.Event(), threading.Event()
    with LoopbackOpenAIServer() as model:
        model.reset(Reply(text="Finished within the grace.", hold=finish_in_time),
                    Reply(text="Too late for this server.", hold=never_in_time),
                    Reply(text="Answered on the server that stays, " + "word " * 40, hold=elsewhere))
        redis_url = os.environ["DEERFLOW_TEST_REDIS_URL"]
        stack = start_live_server(tmp_path / "home", config_text=loopback_config_text(model.base_url, timeout=300, extra_yaml=LOCAL_SANDBOX),
                                  extra_env={"REDIS_URL": redis_url, "CELERY_BROKER_URL": redis_url, "SHUTDOWN_GRACE_SECONDS": GRACE},
                                  servers=2)
        try:
            token = stack.create_user_token("drained")
            one, two = stack.urls
            auth = {"Authorization": f"Bearer {token}"}
            with httpx.Client(base_url=f"{one}/api", headers=auth, timeout=30) as api_one, \
                    httpx.Client(base_url=f"{two}/api", headers=auth, timeout=30) as api_two:
                quick_tid, quick_run = _start_run(api_one, "A question answered in time.")
                wait_until(lambda: len(model.requests) == 1, "the first run to ask the model")
                slow_tid, slow_run = _start_run(api_one, "A question answered too late.")
                wait_until(lambda: len(model.requests) == 2, "the second run to ask the model")
                other_tid, other_run = _start_run(api_two, "A question for the other server.")
                wait_until(lambda: len(model.requests) == 3, "the third run to ask the model")

                quick_stream = Stream(f"{one}/api/threads/{quick_tid}/runs/{quick_run}/stream", token)
                slow_stream = Stream(f"{one}/api/threads/{slow_tid}/runs/{slow_run}/stream", token)
                other_stream = Stream(f"{one}/api/threads/{other_tid}/runs/{other_run}/stream", token)
                for stream in (quick_stream, slow_stream, other_stream):
                    wait_until(lambda: "event: metadata" in stream.text, "each stream to begin")
                cookie = stack.shell(
                    "from django.test import Client; from apps.accounts.models import User\n"
                    "c = Client(); c.force_login(User.objects.get(username='drained')); print(c.cookies['sessionid'].value)")
                other_socket = Socket(one, other_tid, other_run, cookie)
                wait_until(lambda: "metadata" in other_socket.events, "the websocket to follow the run")

                stack.process.send_signal(signal.SIGTERM)

                # Draining: alive, not ready, and a new run is refused with a retry hint.
                refused = wait_until(lambda: (r := api_one.post("/runs/wait", json={"input": {"messages": [{"role": "user", "content": "hi"}]}}))
                                    .status_code == 503 and r, "the stopping server to refuse runs")
                assert refused.headers["Retry-After"] == "5"
                assert "shutting down" in refused.json()["detail"]
                ready = httpx.get(f"{one}/api/health/ready", timeout=10)
                assert ready.status_code == 503 and ready.json()["status"] == "draining"
                assert httpx.get(f"{one}/api/health/live", timeout=10).status_code == 200
                assert httpx.get(f"{two}/api/health/ready", timeout=10).status_code == 200

                # The run that can finish in the grace does, and its stream ends as usual.
                finish_in_time.set()
                assert quick_stream.closed.wait(60), "the finished run's stream did not end"
                assert quick_stream.events[-1] == "end" and "error" not in quick_stream.events
                assert "Finished within the grace." in quick_stream.text

                # The server exits once the grace is over and the rest is handed over.
                assert stack.process.wait(90) == 0, stack.log()

                # The run past the grace: settled by recovery, its followers told.
                assert slow_stream.closed.is_set()
                assert slow_stream.events[-2:] == ["error", "end"] and "orphan_recovered" in slow_stream.text
                slow = api_two.get(f"/threads/{slow_tid}/runs/{slow_run}").json()
                assert slow["status"] == "error"
                quick = api_two.get(f"/threads/{quick_tid}/runs/{quick_run}").json()
                assert quick["status"] == "success"
                # What the user asked is in the history (journaled from the checkpoint by recovery).
                history = api_two.get(f"/threads/{slow_tid}/runs/{slow_run}/messages").text
                assert "A question answered too late." in history
                # Nothing left active under the dead process's lease; the thread takes runs again.
                assert stack.shell(
                    "from apps.runs.models import Run\n"
                    f"print(Run.slots.filter(status__in=Run.ACTIVE_STATUSES).exclude(pk={other_run!r}).count())") == "0"
                model.add(Reply(text="A second answer."))
                again = api_two.post(f"/threads/{slow_tid}/runs/wait", json={"input": {"messages": [{"role": "user", "content": "again"}]}})
                assert again.status_code == 200, again.text

                # The stream of the run the other server executes: closed with a reconnect hint...
                assert other_stream.closed.is_set()
                assert "reconnect with Last-Event-ID" in other_stream.text and "retry: 1000" in other_stream.text
                assert "end" not in other_stream.events
                assert other_socket.closed.is_set() and other_socket.close_code == 1012
                assert "end" not in other_socket.events
                seen = other_stream.last_id
                assert seen is not None
                # ... and resumed on the server that stays, to the end, with nothing lost.
                resumed = Stream(f"{two}/api/threads/{other_tid}/runs/{other_run}/stream", token, last_event_id=seen)
                assert resumed.opened.wait(30)
                elsewhere.set()
                assert resumed.closed.wait(60)
                assert resumed.events[-1] == "end"
                answer = "".join(line for line in (other_stream.text + resumed.text).splitlines() if line.startswith("data: "))
                assert "Answered on the server that stays" in answer
                assert api_two.get(f"/threads/{other_tid}/runs/{other_run}").json()["status"] == "success"
        finally:
            for event in (finish_in_time, never_in_time, elsewhere):
                event.set()
            stack.stop()
