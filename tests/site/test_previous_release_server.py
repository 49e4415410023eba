"""Upgrades without downtime: the previous release's server works on this tree's schema.

A rolling upgrade migrates the database first (the compose file's `migrate` service, the
chart's pre-upgrade job) while the previous release's servers still serve, and then runs both
releases side by side until the last old server is gone. So every migration must leave a
schema the previous code still works on (docs/deployment.md, "Upgrades without downtime").

"The previous release" here is the code just before the latest commit that changed a
migration: the newest schema change is the one under test. Its tree is taken with
``git archive`` into a temporary directory and started as a real Daphne server on a database
this tree has migrated, beside this tree's own server on the same database: a user's thread
made and run on the old server is read and continued on the new one, and the other way round.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import time
import urllib.request
from io import BytesIO
from pathlib import Path

import httpx
import pytest

from harness.testing import LoopbackOpenAIServer, loopback_config_text
from tests.support.live import free_port, start_live_server

pytestmark = [pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
MIGRATIONS = "apps/*/migrations/*.py"


def _git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, timeout=120)


def _previous_release() -> str | None:
    """The parent of the newest commit that changed a migration (None without git history)."""
    if shutil.which("git") is None:
        return None
    changed = _git("log", "-1", "--format=%H", "--", MIGRATIONS)
    if changed.returncode != 0 or not changed.stdout.strip():
        return None
    parent = _git("rev-parse", "--verify", "--quiet", f"{changed.stdout.decode().strip()}^1")
    return parent.stdout.decode().strip() if parent.returncode == 0 else None


def _checkout(commit: str, dest: Path) -> Path:
    archive = _git("archive", "--format=tar", commit)
    assert archive.returncode == 0, archive.stderr.decode()
    with tarfile.open(fileobj=BytesIO(archive.stdout)) as tar:
        tar.extractall(dest, filter="data")
    return dest


def _serve(code: Path, env: dict, log: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "deerflow_site.server.daphne_server", "-b", "127.0.0.1", "-p", str(port),
                                "deerflow_site.asgi:application"], cwd=code, env={**env, "PYTHONPATH": str(code)},
                               stdout=open(log, "w"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert process.poll() is None, log.read_text()
        try:
            with urllib.request.urlopen(f"{url}/api/health", timeout=2) as response:
                if response.status == 200:
                    return process, url
        except OSError:
            time.sleep(0.3)
    process.kill()
    raise AssertionError(f"the server in {code} did not start: {log.read_text()[-3000:]}")


def _turn(api: httpx.Client, tid: str, text: str) -> list[str]:
    answer = api.post(f"/threads/{tid}/runs/wait", json={"input": {"messages": [{"role": "user", "content": text}]}})
    assert answer.status_code == 200, answer.text
    return [m["content"] for m in answer.json()["messages"]]


def test_the_previous_release_serves_on_the_migrated_schema_beside_this_one(tmp_path):
    previous = _previous_release()
    if previous is None:
        pytest.skip("no git history to take the previous release from")
    old_code = _checkout(previous, tmp_path / "previous")
    with LoopbackOpenAIServer(["Old server's answer.", "New server's answer.", "Old server again."]) as model:
        # This tree's server, on a database this tree migrated: the schema the previous release
        # meets during a rolling upgrade. The previous release's server joins it there.
        stack = start_live_server(tmp_path / "home", config_text=loopback_config_text(model.base_url, timeout=60))
        old = None
        try:
            old, old_url = _serve(old_code, stack.env, tmp_path / "old.log")
            # The old code's own check of its models and settings passes on this database.
            checked = subprocess.run([sys.executable, "manage.py", "check", "--database", "default"], cwd=old_code,
                                     env={**stack.env, "PYTHONPATH": str(old_code)}, capture_output=True, text=True, timeout=120)
            assert checked.returncode == 0, checked.stdout + checked.stderr
            auth = {"Authorization": f"Bearer {stack.create_user_token('upgrader')}"}
            with httpx.Client(base_url=f"{old_url}/api", headers=auth, timeout=60) as on_old, \
                    httpx.Client(base_url=f"{stack.url}/api", headers=auth, timeout=60) as on_new:
                tid = on_old.post("/threads", json={"metadata": {"made_by": "previous release"}}).json()["thread_id"]
                assert _turn(on_old, tid, "Hello from before the upgrade.")[-1] == "Old server's answer."
                # The new release reads and continues what the old one wrote...
                assert on_new.get(f"/threads/{tid}").json()["metadata"]["made_by"] == "previous release"
                assert _turn(on_new, tid, "Hello after the upgrade.")[-1] == "New server's answer."
                # ... and the old one, still serving during the rollout, what the new one wrote.
                history = _turn(on_old, tid, "And the old server once more.")
                assert history[-1] == "Old server again." and "New server's answer." in history
                listed = on_old.post("/threads/search", json={"limit": 10})
                assert listed.status_code == 200 and tid in [t["thread_id"] for t in listed.json()]
        finally:
            if old is not None:
                old.terminate()
                try:
                    old.wait(30)
                except subprocess.TimeoutExpired:
                    old.kill()
            stack.stop()
