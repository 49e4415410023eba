"""`manage.py run_channels` as a real process: a live server's database and config, the real
lead agent on the loopback model, Telegram through the fake Bot API server. Stopping and
starting the worker again resumes polling after the last update it handled; a run it executes
is followed live from the web chat."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import threading
import time

import httpx
import pytest

from harness.testing import Reply, loopback_config_text
from tests.support.fake_telegram import FakeTelegram
from tests.support.live import ROOT, start_live_server

pytestmark = [pytest.mark.slow]


class ThreadedFake:
    """The fake Bot API server on its own event loop in a thread (this test is synchronous)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.fake = self.call(FakeTelegram().start)

    def call(self, fn, *args, **kwargs):
        async def run():
            result = fn(*args, **kwargs)
            return await result if asyncio.iscoroutine(result) else result

        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(timeout=30)

    def stop(self) -> None:
        self.call(self.fake.stop)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)


def _until(predicate, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def _start_worker(live) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "manage.py", "run_channels"], cwd=ROOT, env=live.env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _stop_worker(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=60) == 0


def test_the_worker_process_answers_and_resumes_after_a_restart(tmp_path, model_server):
    threaded = ThreadedFake()
    fake = threaded.fake
    settings = fake.settings
    channels = ("channels:\n  enabled: true\n  telegram:\n    enabled: true\n"
                f"    bot_token: '{settings['bot_token']}'\n    base_url: {settings['base_url']}\n"
                f"    base_file_url: {settings['base_file_url']}\n    allowed_private_networks: ['127.0.0.0/8']\n"
                "    poll_timeout: 1\n    edit_interval: 0\n")
    live = start_live_server(tmp_path / "home", config_text=loopback_config_text(model_server.base_url, extra_yaml=channels))
    worker = None
    try:
        model_server.reset(*["The worker answers."] * 6)
        code = live.shell("from apps.accounts.models import User; from apps.channels.connections import connect_code_issue\n"
                          "u = User.objects.create_user(username='ann', password='pw-ann-12345')\n"
                          "print(connect_code_issue(user=u, provider='telegram', ttl_seconds=600).code)")
        worker = _start_worker(live)
        threaded.call(fake.user_says, f"/start {code}")
        _until(lambda: any(t.startswith("Connected to DeerFlow as ann") for t in fake.texts(501)), "the connect reply")
        threaded.call(fake.user_says, "first question")
        _until(lambda: fake.texts(501).count("The worker answers.") == 1, "the first answer")

        # A run the channel started, followed live from the web chat: the server asks the
        # worker process, which executes it (the stream relay of the embedded stack).
        model_server.reset(Reply(text="A slow answer the web chat follows.", delay=8), *["The worker answers."] * 6)
        threaded.call(fake.user_says, "second question")
        running = "from apps.runs.models import Run\nr = Run.objects.filter(status='running').first()\nprint(f'{r.thread_id} {r.pk}' if r else '')"
        found: list[str] = []
        _until(lambda: found.append(live.shell(running)) or found[-1] != "", "the channel's run to be running")
        thread_id, run_id = found[-1].split()
        token = live.create_user_token("ann")
        followed = httpx.get(f"{live.url}/api/threads/{thread_id}/runs/{run_id}/stream", headers={"Authorization": f"Bearer {token}"},
                             timeout=60).text
        assert "A slow answer the web chat follows." in followed and followed.strip().split("\n\n")[-1].startswith("event: end\n")
        _until(lambda: "A slow answer the web chat follows." in fake.texts(501), "the slow answer in Telegram")
        _stop_worker(worker)
        worker = None

        threaded.call(fake.user_says, "asked while the worker was down")
        worker = _start_worker(live)
        _until(lambda: fake.texts(501).count("The worker answers.") == 2, "the answer after the restart")
        out = live.shell("from apps.runs.models import Run\n"
                         "print([r.kwargs['input']['messages'][0]['content'] for r in Run.objects.order_by('created_at')])")
        assert out == "['first question', 'second question', 'asked while the worker was down']"
        status = live.shell("from apps.channels.models import ChannelStatus\n"
                            "s = ChannelStatus.objects.get(provider='telegram'); print(s.state, s.bot_name)")
        assert status == "connected deerflow_bot"
    finally:
        if worker is not None:
            _stop_worker(worker)
        live.stop()
        threaded.stop()
