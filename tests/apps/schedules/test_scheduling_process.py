"""`make run`'s process model: Daphne plus a Celery worker with embedded beat, on the
filesystem broker; stopping the script stops both."""

import os
import re
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from tests.support.live import free_port
from tests.support.waiting import HANG_SECONDS

ROOT = Path(__file__).resolve().parents[3]

pytestmark = [pytest.mark.slow]


def _children(pid: int) -> list[tuple[int, str]]:
    out = subprocess.run(["ps", "-ww", "-o", "pid=,args=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    return [(int(line.split(None, 1)[0]), line.split(None, 1)[1]) for line in out.strip().splitlines()]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie has exited; only its parent has not collected it yet.
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split(") ", 1)[1][0] != "Z"


def test_run_script_starts_daphne_and_a_worker_with_beat_and_stops_both(tmp_path):
    # A checkout of links, so the script's config.yaml bootstrap lands in tmp, not in the repo.
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    for name in ("apps", "deerflow_site", "harness", "templates", "static", "skills", "manage.py", "requirements.txt", ".venv",
                 "config.example.yaml", "extensions_config.example.json"):
        (checkout / name).symlink_to(ROOT / name)
    (checkout / "scripts").mkdir()
    for script in ("run.sh", "bootstrap.sh"):
        (checkout / "scripts" / script).symlink_to(ROOT / "scripts" / script)
    (checkout / "tests").symlink_to(ROOT / "tests")
    if (ROOT / ".toolbox").is_dir():  # else bootstrap builds the sandbox toolbox again: pip, not scheduling
        (checkout / ".toolbox").symlink_to(ROOT / ".toolbox")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_URL", "CELERY_", "REDIS_URL"))}
    env.update({"DEER_FLOW_HOME": str(tmp_path / "home"), "PORT": str(port), "DJANGO_SECRET_KEY": "test-secret-key-for-run-sh-0123456789abcdef",
                "DEER_FLOW_CONFIG_PATH": str(ROOT / "tests" / "fixtures" / "config.yaml"), "CELERY_LOG_LEVEL": "info"})
    log = (tmp_path / "run.log").open("w")
    script = subprocess.Popen(["bash", str(checkout / "scripts" / "run.sh")], cwd=checkout, env=env, stdout=log, stderr=subprocess.STDOUT,
                              start_new_session=True)
    try:
        deadline = time.monotonic() + HANG_SECONDS
        while True:
            assert script.poll() is None, (tmp_path / "run.log").read_text()
            assert time.monotonic() < deadline, (tmp_path / "run.log").read_text()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/health", timeout=2) as response:
                    if response.status == 200 and "ready." in (tmp_path / "run.log").read_text():
                        break
            except OSError:
                pass
            time.sleep(0.3)
        children = _children(script.pid)
        launcher = next(pid for pid, args in children if "deerflow_site.server.web_processes" in args)
        # The worker is forked from the web processes' launcher (its command line is the
        # launcher's, which names it), and embedded beat is the worker's child: both must stop
        # with everything else.
        worker = int(re.search(r"started python -m celery -A deerflow_site worker --beat .* \(pid (\d+)\)", (tmp_path / "run.log").read_text()).group(1))
        assert worker in [pid for pid, _ in _children(launcher)]
        deadline = time.monotonic() + HANG_SECONDS
        while not _children(worker) and time.monotonic() < deadline:
            time.sleep(0.2)
        beat = _children(worker)
        assert beat, "the worker started no beat process"
        descendants = [*children, *_children(launcher), *beat]
        assert "filesystem" in (tmp_path / "run.log").read_text()
        assert (tmp_path / "home" / "celery-broker" / "queue").is_dir()

        script.send_signal(signal.SIGTERM)
        script.wait(HANG_SECONDS)
        deadline = time.monotonic() + HANG_SECONDS
        while any(_alive(pid) for pid, _ in descendants):
            assert time.monotonic() < deadline, f"still running after the script stopped: {descendants}"
            time.sleep(0.1)
    finally:
        if script.poll() is None:
            os.killpg(script.pid, signal.SIGKILL)
        log.close()
