"""Graph factories for benchmarks: the real lead agent with an instant scripted model."""

import os
import re
import subprocess
import sys
import time
from pathlib import Path

from harness.agents import make_lead_agent
from harness.testing import Reply, ScriptedChatModel

ROOT = Path(__file__).resolve().parents[1]

# The live server's config.yaml: one model entry (its agent factory below replaces the model)
# and the local sandbox.
INSTANT_CONFIG = """\
config_version: 1
models:
  - name: instant
    use: langchain_openai:ChatOpenAI
    model: unused
    api_key: unused
sandbox:
  use: local
"""


def instant_server_env() -> dict[str, str]:
    """The environment of a benchmark server: production settings (DJANGO_DEBUG off, since
    debug mode logs every SQL query; config.yaml looked at once a second) and the instant
    lead agent."""
    return {"DEERFLOW_AGENT_FACTORY": "benchmarks.bench_support:make_instant_lead_agent", "PYTHONPATH": str(ROOT),
            "DJANGO_DEBUG": "false", "DJANGO_SECRET_KEY": "benchmark-only-" + "x" * 40, "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "CONFIG_RECHECK_SECONDS": "1"}  # make run's default (the test servers look on every call)


def make_instant_lead_agent(config):
    """The full lead agent (every middleware) whose model answers at once, in a few chunks.
    It reports usage as a provider does, without counting the prompt itself (that cost is the
    provider's, not the server's), and keeps no record of its requests."""
    reply = Reply(text="Instant answer from the benchmark model.", usage={"input_tokens": 120, "output_tokens": 9})
    return make_lead_agent(config, model=ScriptedChatModel(script=[reply], loop=True, record_requests=False))


def process_cpu_seconds(pids: list[int]) -> float:
    """User + system CPU of these processes (all their threads) so far, from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / tick


def start_make_run_stack(home: Path, *, config_text: str, extra_env: dict | None = None, processes: str = "auto",
                         checkout: Path = ROOT, cpu: int | None = None, also_run: str | None = None):
    """The site as `make run` serves it: ``deerflow_site.server.web_processes`` with its Daphne servers
    on one port (``processes`` as WEB_PROCESSES takes it). A LiveServer whose ``others`` are
    empty; its ``server_pids`` attribute lists the servers, for CPU and memory readings.
    ``checkout``: another build's tree to serve (on this virtualenv); ``cpu``: the one core the
    servers may use; ``also_run``: the launcher's ``--also-run`` (scripts/run.sh's Celery worker),
    whose pid is then ``also_pid``."""
    from tests.support.live import LiveServer, free_port, live_env

    env = live_env(home, config_text=config_text, extra_env={"WEB_PROCESSES": str(processes), **(extra_env or {})})
    if checkout != ROOT:  # its code, and a database made by its own migrations
        env["PYTHONPATH"] = str(checkout)
        # live_env's copy holds this tree's schema; a column this tree added (NOT NULL, no
        # database default) makes the older build's inserts fail, and its runs never start.
        if not env["DATABASE_URL"].startswith(("postgres://", "postgresql://")):
            env["DATABASE_URL"] = f"sqlite:///{home / 'base-build.sqlite3'}"
        subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=checkout, env=env, check=True, timeout=120)
    port, ready = free_port(), home / "web.ready"
    log_path = home / "server.log"
    pin = ["taskset", "-c", str(cpu)] if cpu is not None else []
    # Builds from before deerflow_site/server/ (Dec 2026) have the launcher one level up.
    module = "deerflow_site.server.web_processes" if (checkout / "deerflow_site/server").is_dir() else "deerflow_site.web_processes"
    also = ["--also-run", also_run] if also_run else []
    launcher = subprocess.Popen([*pin, sys.executable, "-m", module, "-b", "127.0.0.1", "-p", str(port),
                                 "--ready-file", str(ready), *also, "deerflow_site.asgi:application"],
                                cwd=checkout, env=env, stdout=open(log_path, "w"), stderr=subprocess.STDOUT)
    server = LiveServer(url=f"http://127.0.0.1:{port}", env=env, process=launcher, log_path=log_path)
    server.urls.append(server.url)
    deadline = time.monotonic() + 90
    while not ready.exists():
        if launcher.poll() is not None or time.monotonic() > deadline:
            server.stop()
            raise RuntimeError(f"the web processes did not start: {server.log()}")
        time.sleep(0.1)
    children = [int(pid) for pid in Path(f"/proc/{launcher.pid}/task/{launcher.pid}/children").read_text().split()]
    server.also_pid = None  # type: ignore[attr-defined]
    if also_run:  # the launcher names it once it lets it go, just after writing the ready file
        while (found := re.search(r"started python -m .* \(pid (\d+)\)", server.log())) is None:
            if launcher.poll() is not None or time.monotonic() > deadline:
                server.stop()
                raise RuntimeError(f"the web processes did not start {also_run!r}: {server.log()}")
            time.sleep(0.1)
        server.also_pid = int(found.group(1))  # type: ignore[attr-defined]
    server.server_pids = [pid for pid in children if pid != server.also_pid]  # type: ignore[attr-defined]
    return server
