"""Memory updates a server still holds when it is stopped are not lost.

The site is started as ``make run`` starts it (``deerflow_site.server.web_processes``: two Daphne
servers on one port, or one as WEB_PROCESSES=1 gives, SQLite, runs in the servers), with a loopback OpenAI server as the model
for the chat and the memory updater alike, and a debounce far away, so the update a run leaves
is still pending when the launcher is sent SIGTERM.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from harness.testing import LoopbackOpenAIServer, Reply, loopback_config_text
from tests.support.live import ROOT, ShellSession, free_port, live_env
from tests.support.zygote import ForkedProcess, start_module

pytestmark = [pytest.mark.slow]

FACT = "Keeps bees on a rooftop in Lyon"
UPDATE = json.dumps({"user": {"personalContext": "Beekeeper in Lyon"},
                     "newFacts": [{"content": FACT, "category": "identity", "confidence": 0.9}]})
# web_processes kills the servers this long after SIGTERM; a stop must be over well before.
STOP_GRACE_SECONDS = 15


def _text(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")


def _is_memory_update(messages: list[dict]) -> bool:
    return bool(messages) and messages[0].get("role") == "system" and "long-term memory an assistant keeps" in _text(messages[0])


class Model:
    """The loopback model: the memory updater's requests get ``update_reply()``, the rest a chat answer."""

    def __init__(self):
        self.update_reply = lambda: UPDATE
        self.updates_asked = 0
        self.server = LoopbackOpenAIServer([self._answer], loop=True)

    def _answer(self, messages):
        if _is_memory_update(messages):
            self.updates_asked += 1
            return self.update_reply()
        return "Noted: bees it is."


@pytest.fixture
def model():
    m = Model()
    with m.server:
        yield m


class Site:
    """``make run``'s web processes on a home of their own."""

    def __init__(self, home: Path, env: dict, processes: int):
        self.home, self.env, self.processes = home, env, processes
        self._shell = ShellSession(env)  # manage.py shell -c, without a Django start-up per call
        self.process: ForkedProcess | None = None
        self.url = ""

    def start(self) -> None:
        port, ready = free_port(), self.home / "web.ready"
        # The launcher is forked from the zygote (python -m without its imports' start-up); the
        # Daphne servers it starts are its own, from scratch, as under `make run`.
        self.process = start_module(
            "deerflow_site.server.web_processes", ["-b", "127.0.0.1", "-p", str(port), "--processes", str(self.processes),
                                                   "--ready-file", str(ready), "deerflow_site.asgi:application"],
            cwd=ROOT, env=self.env, stdout=open(self.home / "site.log", "a"), stderr=subprocess.STDOUT)
        self.url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while not ready.exists():
            assert self.process.poll() is None and time.monotonic() < deadline, f"the site did not start: {self.log()}"
            time.sleep(0.1)

    def stop(self) -> tuple[int, float]:
        """SIGTERM, as Ctrl-C or `kill` of `make run` sends it; (exit code, seconds to exit)."""
        assert self.process is not None
        began = time.monotonic()
        self.process.terminate()
        code = self.process.wait(60)
        return code, time.monotonic() - began

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        self._shell.close()

    def log(self) -> str:
        return (self.home / "site.log").read_text(errors="replace")

    def shell(self, code: str) -> str:
        return self._shell.run(code)

    def stored(self, username: str) -> tuple[list[str], list[str]]:
        """From the database, with the site stopped: the user's facts, and the threads whose
        memory updates are saved for the next start."""
        return tuple(json.loads(self.shell(
            "import json; from apps.memory.models import MemoryFact, PendingMemoryUpdate\n"
            f"facts = MemoryFact.objects.filter(profile__owner__username={username!r}).values_list('content', flat=True)\n"
            "print(json.dumps([list(facts), list(PendingMemoryUpdate.objects.values_list('thread_id', flat=True))]))")))

    def api(self, token: str) -> httpx.Client:
        return httpx.Client(base_url=f"{self.url}/api", headers={"Authorization": f"Bearer {token}"}, timeout=60)

    def token(self, username: str) -> str:
        return self.shell(
            "from apps.accounts.models import User; from apps.accounts.services import token_create\n"
            f"u, _ = User.objects.get_or_create(username={username!r})\n"
            "print(token_create(owner=u, name='tests', scopes=['threads:read', 'threads:write', 'runs:read', 'runs:create']).token)")


@pytest.fixture
def site(tmp_path, model):
    def make(memory_yaml: str = "", *, processes: int = 2) -> Site:
        config = loopback_config_text(model.server.base_url, timeout=60,
                                      extra_yaml="memory:\n  enabled: true\n  debounce_seconds: 3600\n" + memory_yaml)
        home = tmp_path / "home"
        made = Site(home, live_env(home, config_text=config, extra_env={"CPU_PINNING_DIR": str(home / "cpus")}), processes)
        started.append(made)
        return made

    started: list[Site] = []
    yield make
    for s in started:
        s.kill()


def _chat(site: Site, token: str, text: str) -> str:
    with site.api(token) as api:
        tid = api.post("/threads", json={}).json()["thread_id"]
        response = api.post(f"/threads/{tid}/runs/wait", json={"input": {"messages": [{"role": "user", "content": text}]}})
        assert response.status_code == 200, response.text
        assert response.json()["messages"][-1]["content"] == "Noted: bees it is."
    return tid


def test_stopping_the_site_applies_the_memory_updates_it_still_holds(site, model):
    s = site()
    s.start()
    token = s.token("beekeeper")
    _chat(s, token, "I keep bees on my rooftop in Lyon, remember that")
    assert model.updates_asked == 0  # pending: the debounce is an hour away

    code, seconds = s.stop()
    assert code == 0, s.log()
    assert seconds < STOP_GRACE_SECONDS
    assert model.updates_asked == 1
    assert s.stored("beekeeper") == ([FACT], [])


def test_a_flush_bound_longer_than_the_launchers_grace_is_honoured(site, model):
    """DeerFlow's default bound is 30 s; the launcher kills servers 15 s after SIGTERM unless the
    bound needs longer. A model answering after 18 s is still applied within a 60 s bound."""
    s = site("  shutdown_flush_timeout_seconds: 60\n", processes=1)
    s.start()
    token = s.token("beekeeper")
    _chat(s, token, "I keep bees on my rooftop in Lyon, remember that")
    model.update_reply = lambda: Reply(text=UPDATE, delay=18)

    code, _ = s.stop()
    assert code == 0, s.log()
    assert model.updates_asked == 1
    assert s.stored("beekeeper") == ([FACT], [])


def test_an_update_the_stop_cannot_finish_in_time_is_saved_and_applied_at_the_next_start(site, model):
    s = site("  shutdown_flush_timeout_seconds: 1\n", processes=1)  # one server: the saved update is its own
    s.start()
    token = s.token("beekeeper")
    tid = _chat(s, token, "I keep bees on my rooftop in Lyon, remember that")
    model.update_reply = lambda: Reply(text=UPDATE, delay=120)  # a model too slow for the stop

    code, seconds = s.stop()
    assert code == 0, s.log()
    assert seconds < STOP_GRACE_SECONDS  # 1 s of flushing, not the model's two minutes
    assert model.updates_asked == 1
    assert "memory update(s) not applied within 1.0s, saved for the next start" in s.log()
    assert s.stored("beekeeper") == ([], [tid])

    model.update_reply = lambda: UPDATE
    s.start()
    deadline = time.monotonic() + 60
    with s.api(token) as api:  # the next start applies it: no run needed
        while [f["content"] for f in api.get("/memory").json()["facts"]] != [FACT]:
            assert time.monotonic() < deadline, f"the saved update was not applied: {s.log()}"
            time.sleep(0.2)
    code, _ = s.stop()
    assert code == 0 and model.updates_asked == 2
    assert s.stored("beekeeper") == ([FACT], [])
