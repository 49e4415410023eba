"""deploy/compose.yaml as an operator runs it: the image built from Debian packages and
requirements.txt (scripts/build_server_image.sh, cached by content hash), the stack brought up
by podman-compose, a user signed in through the load balancer, a run streamed, the web server
serving the stream killed mid-run, the stream resumed on the other one with Last-Event-ID to
its end, and the stack torn down leaving no container, volume or network behind.

The stack shares the host's network (as the compose file does), so its model is a loopback
OpenAI-compatible server in this process whose answer the test holds until the kill is done.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import httpx
import pytest

from harness.testing import LoopbackOpenAIServer, Reply, loopback_config_text
from tests.support.container_engine import skip_reason
from tests.support.live import free_port
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.deploy, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
PODMAN = ["podman", "--runtime", "runc", "--cgroup-manager", "cgroupfs"]
ANSWER = "The stack kept streaming across the failover " + "and on " * 30 + "to the end."


# Podman as root with runc, and debootstrap for the image: what the container sandbox tests need.
if (_reason := skip_reason()) is not None:
    pytestmark.append(pytest.mark.skip(reason=_reason))


class Stack:
    def __init__(self, work: Path, model_url: str):
        self.project = f"dfdeploy{uuid.uuid4().hex[:8]}"
        self.ports = {name: free_port() for name in ("LB_PORT", "WEB1_PORT", "WEB2_PORT", "PG_PORT", "REDIS_PORT")}
        self.url = f"http://127.0.0.1:{self.ports['LB_PORT']}"
        config = work / "config.yaml"
        config.write_text(loopback_config_text(model_url, timeout=300) + "sandbox:\n  use: local\n")
        config.chmod(0o644)
        env_file = work / "stack.env"
        env_file.write_text("".join(f"{k}={v}\n" for k, v in {
            **self.ports, "DJANGO_SECRET_KEY": secrets.token_urlsafe(32), "POSTGRES_PASSWORD": secrets.token_urlsafe(16),
            "LB_BIND": "127.0.0.1", "ALLOWED_HOSTS": "127.0.0.1,localhost", "SESSION_COOKIE_SECURE": "false",
            "CSRF_COOKIE_SECURE": "false", "SHUTDOWN_GRACE_SECONDS": "5", "LOG_LEVEL": "WARNING"}.items()))
        # Podman as these machines run it, configured for this stack rather than for the host.
        nofile = os.sysconf("SC_OPEN_MAX")
        conf = work / "containers.conf"
        conf.write_text(f'[containers]\ndefault_ulimits = ["nofile={nofile}:{nofile}", "nproc=4096:4096"]\n'
                        '[engine]\nruntime = "runc"\ncgroup_manager = "cgroupfs"\n')
        self.env = {**os.environ, "CONTAINERS_CONF": str(conf), "DEERFLOW_CONFIG": str(config)}
        self.env_file = env_file

    def compose(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "podman_compose", "-p", self.project, "-f", str(ROOT / "deploy" / "compose.yaml"),
                               "--env-file", str(self.env_file), *args], cwd=ROOT, env=self.env, capture_output=True, text=True,
                              timeout=timeout)

    def container(self, service: str) -> str:
        return f"{self.project}_{service}_1"

    def leftovers(self) -> list[str]:
        label = f"label=io.podman.compose.project={self.project}"
        found = []
        for kind in (["ps", "-a"], ["volume", "ls"], ["network", "ls"]):
            out = subprocess.run([*PODMAN, *kind, "--filter", label, "--format", "{{.Names}}" if kind[0] == "ps" else "{{.Name}}"],
                                 capture_output=True, text=True, env=self.env).stdout.split()
            found += out
        return found


@pytest.fixture(scope="module")
def image():
    built = subprocess.run([str(ROOT / "scripts" / "build_server_image.sh")], cwd=ROOT, capture_output=True, text=True, timeout=3600)
    assert built.returncode == 0, f"building the server image failed:\n{built.stdout[-2000:]}\n{built.stderr[-4000:]}"
    return "localhost/" + built.stdout.strip().splitlines()[-1].split()[0]


def _events(text: str) -> list[tuple[str | None, str]]:
    """(id, event) of each SSE frame, in order."""
    frames = []
    for block in text.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line and not line.startswith(":"))
        if "event" in fields:
            frames.append((fields.get("id"), fields["event"]))
    return frames


def test_the_stack_serves_a_run_through_the_load_balancer_and_survives_a_web_server_killed_mid_stream(image, tmp_path):
    release = threading.Event()
    with LoopbackOpenAIServer() as model:
        model.reset(Reply(text=ANSWER, hold=release))
        stack = Stack(tmp_path, model.base_url)
        stack.env["DEERFLOW_IMAGE"] = image
        try:
            up = stack.compose("up", "-d")
            assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
            wait_until(lambda: httpx.get(f"{stack.url}/api/health/ready", timeout=5).status_code == 200, "the stack to be ready",
                       600, interval=0.5, ignore=(httpx.HTTPError,))
            # Each service's own health check passes (Podman runs none by itself without systemd).
            for service in ("postgres", "redis", "web1", "web2", "lb"):
                wait_until(lambda: subprocess.run([*PODMAN, "healthcheck", "run", stack.container(service)], env=stack.env,
                                                 capture_output=True).returncode == 0, f"{service}'s health check", 300, interval=0.5)

            with httpx.Client(base_url=stack.url, timeout=30) as browser:
                # Sign in as the first admin, as the setup page does.
                signed_in = browser.post("/api/v1/auth/initialize", json={"email": "ops@example.com", "password": "correct-horse-battery"})
                assert signed_in.status_code == 201, signed_in.text
                csrf = {"X-CSRF-Token": browser.cookies["csrf_token"]}
                tid = browser.post("/api/threads", json={}, headers=csrf).json()["thread_id"]

                first = ""
                served_by = None
                with browser.stream("POST", f"/api/threads/{tid}/runs/stream", headers=csrf,
                                    json={"input": {"messages": [{"role": "user", "content": "Tell me about the stack."}]},
                                          "stream_mode": ["values", "messages-tuple"], "on_disconnect": "continue"}) as response:
                    assert response.status_code == 200, response.read()
                    served_by = response.headers["X-Served-By"]
                    for chunk in response.iter_text():
                        first += chunk
                        if "event: values" in first and len(model.requests) == 1:
                            break  # the run is going on the worker, held at the model
                run_id = json.loads(first.split("data: ", 1)[1].split("\n", 1)[0])["run_id"]
                seen = [event_id for event_id, _ in _events(first) if event_id]
                assert served_by in ("web1", "web2") and seen

                # The server that served the stream dies mid-run.
                killed = subprocess.run([*PODMAN, "kill", stack.container(served_by)], env=stack.env, capture_output=True, text=True)
                assert killed.returncode == 0, killed.stderr

                # Resumed through the load balancer: the other server, from the last event seen.
                rest = ""
                with browser.stream("GET", f"/api/threads/{tid}/runs/{run_id}/stream", headers={"Last-Event-ID": seen[-1]}) as resumed:
                    assert resumed.status_code == 200
                    assert resumed.headers["X-Served-By"] not in (served_by, None)
                    release.set()
                    for chunk in resumed.iter_text():
                        rest += chunk
                frames = _events(rest)
                assert frames and frames[-1][1] == "end" and "error" not in [event for _, event in frames]
                ids = [event_id for event_id, _ in frames if event_id]
                assert not set(ids) & set(seen), "an event came twice"
                answered = "".join(json.loads(line[len("data: "):])[0]["content"] for line in rest.splitlines()
                                   if line.startswith("data: [") and '"AIMessageChunk"' in line)
                assert answered == ANSWER
                run = browser.get(f"/api/threads/{tid}/runs/{run_id}").json()
                assert run["status"] == "success"
        finally:
            release.set()
            down = stack.compose("down", "-v", "-t", "5")
            left = stack.leftovers()
    assert down.returncode == 0, down.stderr[-3000:]
    assert left == [], f"the stack left {left}"
