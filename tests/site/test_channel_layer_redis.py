"""The distributed stack's channel layer keeps an idle websocket open.

channels_redis waits for a consumer's messages with a blocking pop of ``brpop_timeout`` (5 s);
redis-py 8 gives every read a 5 s socket timeout by default, so an idle consumer's pop used to
end in ``TimeoutError``, and its websocket closed with 1011 about every five seconds. The layer
is built here from the settings a server with ``REDIS_URL`` has, in a process of its own, and
left waiting on an empty channel through two of its pops before a message arrives."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.waiting import HANG_SECONDS

pytestmark = pytest.mark.redis

ROOT = Path(__file__).resolve().parents[2]

WAIT_ON_AN_EMPTY_CHANNEL = """
import asyncio, json, django
django.setup()
from channels.layers import get_channel_layer

async def main():
    layer = get_channel_layer()
    channel = await layer.new_channel()
    receiving = asyncio.ensure_future(layer.receive(channel))
    # Two blocking pops pass with nothing to read; a pop that failed ends the receive.
    done, _ = await asyncio.wait([receiving], timeout=2 * layer.brpop_timeout + 1)
    failed = repr(receiving.exception()) if done else None
    if not done:
        await layer.send(channel, {"type": "chat.message", "text": "still here"})
    message = None if done else await asyncio.wait_for(receiving, %(hang)s)
    await layer.flush()
    print(json.dumps({"failed": failed, "message": message}))

asyncio.run(main())
"""


def test_an_idle_consumer_outlives_the_layers_blocking_pop(tmp_path, redis_url):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_URL", "REDIS_URL", "CELERY_"))}
    env.update(DJANGO_SETTINGS_MODULE="deerflow_site.settings", DJANGO_DEBUG="true", DEER_FLOW_HOME=str(tmp_path),
               REDIS_URL=redis_url)
    result = subprocess.run([sys.executable, "-c", WAIT_ON_AN_EMPTY_CHANNEL % {"hang": HANG_SECONDS}], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=HANG_SECONDS + 60)
    assert result.returncode == 0, result.stderr
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    assert outcome["failed"] is None
    assert outcome["message"] == {"type": "chat.message", "text": "still here"}
