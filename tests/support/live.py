"""A real Daphne server in a subprocess, for tests that talk to the product over HTTP.

It runs the production settings (DJANGO_DEBUG on) against its own database — a SQLite file,
or a database on the PostgreSQL server of the second test tier — and a config.yaml whose
model is a LoopbackOpenAIServer in the test process, so runs go through the real
ChatOpenAI path over HTTP.

``servers=2, celery_workers=1`` (with REDIS_URL, RUN_EXECUTOR=celery in ``extra_env``) starts
the distributed stack instead: two Daphne processes on one database and a Celery worker that
executes the runs, so a run started through one server can be joined or cancelled through
the other.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import json
import os
import select
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.waiting import HANG_SECONDS
from tests.support.zygote import ForkedProcess, start_module

ROOT = Path(__file__).resolve().parents[2]


def copy_checkout(dest: Path) -> Path:
    """A fresh checkout of the working tree at ``dest`` (what a clone of it would hold), sharing
    this suite's virtualenv and sandbox toolbox, for tests that run `make run` as a user does."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, files.decode().split("\0")):
        src = ROOT / name
        if src.is_file() and not name.startswith(("config.yaml", "extensions_config.json")):
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    (dest / ".venv").symlink_to((ROOT / ".venv").resolve())
    if (ROOT / ".toolbox").is_dir():  # the sandbox toolbox too: a rebuild would only cost time here
        (dest / ".toolbox").symlink_to((ROOT / ".toolbox").resolve())
    return dest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ShellSession:
    """``manage.py shell -c`` on a stack's environment, many calls at the price of one Django
    start-up: each call runs in a process of its own forked from one that has already set
    Django up (tests/support/shell_server.py), itself forked from the zygote."""

    def __init__(self, env: dict):
        self.env = env
        self._server: ForkedProcess | None = None
        self._lock = threading.Lock()

    def run(self, code: str) -> str:
        """Run ``code`` and return what it printed."""
        with self._lock:
            if self._server is None or self._server.poll() is not None:
                self._server = start_module("tests.support.shell_server", [], cwd=ROOT, env=self.env, pipes=True)
            server = self._server
            server.stdin.write(json.dumps({"code": code}) + "\n")
            server.stdin.flush()
            # Django's setup may log to stdout first (a startup warning, e.g. config keys
            # accepted without effect); the answer is the one JSON line.
            while True:
                ready, _, _ = select.select([server.stdout], [], [], 120)
                line = server.stdout.readline() if ready else ""
                if not line or line.startswith("{"):
                    break
            if not line:
                server.kill()
                raise RuntimeError(f"manage.py shell gave no answer (exit status {server.poll()})")
        result = json.loads(line)
        if result["rc"] != 0:
            raise RuntimeError(f"manage.py shell -c failed: {result['stderr']}")
        return result["stdout"].strip()

    def close(self) -> None:
        if self._server is not None:
            self._server.stdin.close()  # its loop ends at end of input
            try:
                self._server.wait(10)
            except subprocess.TimeoutExpired:
                self._server.kill()
            self._server = None


@dataclass
class LiveServer:
    url: str
    env: dict
    process: ForkedProcess
    log_path: Path
    # The distributed stack's other processes: more Daphne servers (``urls[1:]``) and workers.
    urls: list[str] = field(default_factory=list)
    others: list[ForkedProcess] = field(default_factory=list)
    # tests/support/shell_server.py for this stack, started at the first ``shell`` call.
    _shell: ShellSession = field(init=False)

    def __post_init__(self) -> None:
        self._shell = ShellSession(self.env)

    def manage(self, *args: str) -> str:
        result = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            raise RuntimeError(f"manage.py {' '.join(args)} failed: {result.stderr}")
        return result.stdout

    def shell(self, code: str) -> str:
        """Run ``code`` as ``manage.py shell -c`` does, in a process of its own on this stack's
        database, and return what it printed (``ShellSession``)."""
        return self._shell.run(code)

    def create_user_token(self, username: str, scopes: str = "threads:read threads:write runs:read runs:create runs:cancel") -> str:
        return self.shell(
            "from apps.accounts.models import User; from apps.accounts.services import token_create\n"
            f"u, _ = User.objects.get_or_create(username={username!r})\n"
            f"print(token_create(owner=u, name='tests', scopes={scopes.split()!r}).token)"
        )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def crash(self) -> None:
        """SIGKILL the first Daphne process, as the OOM killer or a power cut would: no
        shutdown code runs."""
        self.process.kill()
        self.process.wait(10)

    def restart(self) -> None:
        """Start the first Daphne process again after ``crash``, on the same database and
        home (on a new port: the old one may linger in TIME_WAIT)."""
        self.process, self.url = _start_daphne(self, open(self.log_path, "a"), time.monotonic() + HANG_SECONDS)
        self.urls[0] = self.url

    def stop(self) -> None:
        self._shell.close()
        for process in [self.process, *self.others]:
            process.terminate()
        for process in [self.process, *self.others]:
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()


_stack_numbers = itertools.count()
# One migrated database per test process, copied for each live stack: ``migrate`` from
# scratch cost every stack about 9 s of CPU. Keyed by the database server ("" for SQLite).
_templates: dict[str, str] = {}


def _migrate(env: dict) -> None:
    result = subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        raise RuntimeError(f"manage.py migrate failed: {result.stderr}")


def _template(env: dict, base: str, url: str) -> str:
    """The migrated template for ``base`` ("" for SQLite), made at first use: ``url`` is where
    to make it (a SQLite file, or a PostgreSQL database that this function creates)."""
    if base not in _templates:
        _migrate({**env, "DATABASE_URL": url})
        _templates[base] = url
    return _templates[base]


def _drop_templates() -> None:
    for base, url in list(_templates.items()):
        if not base:
            # The template's home: its database file and what migrate left beside it.
            shutil.rmtree(Path(url.removeprefix("sqlite:///")).parent, ignore_errors=True)
            continue
        import psycopg

        with contextlib.suppress(psycopg.Error), psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{url.rsplit("/", 1)[1]}"')
    _templates.clear()


atexit.register(_drop_templates)


def migrated_database(home: Path, env: dict) -> str:
    """A database for the stack on ``home``, already migrated: a copy of this process's
    template (a file copy on SQLite, ``CREATE DATABASE … TEMPLATE`` on PostgreSQL)."""
    base = os.environ.get("DATABASE_URL", "")
    if not base.startswith(("postgres://", "postgresql://")):
        scratch = Path(tempfile.gettempdir()) / f"deerflow-live-template-{os.getpid()}"
        scratch.mkdir(exist_ok=True)
        template = _template({**env, "DEER_FLOW_HOME": str(scratch)}, "", f"sqlite:///{scratch / 'template.sqlite3'}")
        target = home / "live.sqlite3"
        # The backup API copies what the template holds, its write-ahead log included.
        with contextlib.closing(sqlite3.connect(template.removeprefix("sqlite:///"))) as src, \
                contextlib.closing(sqlite3.connect(target)) as dst:
            src.backup(dst)
        return f"sqlite:///{target}"
    import psycopg

    server = base.rsplit("/", 1)[0]
    template_name = f"deerflow_live_template_{os.getpid()}"
    if base not in _templates:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{template_name}"')
            conn.execute(f'CREATE DATABASE "{template_name}"')
    _template(env, base, f"{server}/{template_name}")
    # One database per live stack: several stacks may be up in one test session.
    name = f"deerflow_live_{os.getpid()}_{next(_stack_numbers)}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template_name}"')
    return f"{server}/{name}"


def _daphne(env: dict, port: int, log) -> ForkedProcess:
    return start_module("deerflow_site.server.daphne_server", ["-b", "127.0.0.1", "-p", str(port), "deerflow_site.asgi:application"],
                        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)


class _PortTaken(Exception):
    pass


def _listens_on(pid: int, port: int) -> bool:
    """Whether process ``pid`` holds the listening socket on loopback ``port``: the health
    answer came from this stack's server, not from another one that took the port."""
    inodes = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
    except OSError:
        return False
    with open("/proc/net/tcp") as table:
        for line in table.readlines()[1:]:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "0A" and fields[9] in inodes:
                return True
    return False


def _wait_healthy(server: LiveServer, url: str, process: ForkedProcess, deadline: float, log_from: int = 0) -> None:
    port = int(url.rsplit(":", 1)[1])
    while time.monotonic() < deadline:
        if process.poll() is not None:
            if "Address already in use" in server.log()[log_from:]:
                raise _PortTaken(url)
            raise RuntimeError(f"daphne exited: {server.log()}")
        try:
            with urllib.request.urlopen(f"{url}/api/health", timeout=2) as response:
                if response.status == 200 and _listens_on(process.pid, port):
                    return
        except OSError:
            pass
        time.sleep(0.2)
    server.stop()
    raise RuntimeError(f"daphne did not become healthy: {server.log()}")


def _start_daphne(server: LiveServer, log, deadline: float) -> tuple[ForkedProcess, str]:
    """A Daphne process of this stack, healthy, and its URL. The port is free when chosen but
    bound only when the server is up, seconds later under load: another xdist worker's
    server can take it in between, and then this one is started again on another port."""
    while True:
        port = free_port()
        log.flush()
        log_from = server.log_path.stat().st_size if server.log_path.exists() else 0
        process = _daphne(server.env, port, log)
        url = f"http://127.0.0.1:{port}"
        try:
            _wait_healthy(server, url, process, deadline, log_from)
        except _PortTaken:
            continue
        return process, url


def _start_celery_worker(server: LiveServer, home: Path, index: int, concurrency: int, deadline: float) -> None:
    log_path = home / f"celery-{index}.log"
    with open(log_path, "w") as log:
        process = start_module("celery", ["-A", "deerflow_site", "worker", "-P", "threads", "-c", str(concurrency),
                                          "-n", f"live{index}@%h", "--without-mingle", "--without-gossip", "--loglevel", "INFO"],
                               cwd=ROOT, env=server.env, stdout=log, stderr=subprocess.STDOUT)
    server.others.append(process)
    while time.monotonic() < deadline:
        if process.poll() is not None or " ready." in log_path.read_text(errors="replace"):
            break
        time.sleep(0.2)
    if process.poll() is not None or " ready." not in log_path.read_text(errors="replace"):
        server.stop()
        raise RuntimeError(f"celery worker did not start: {log_path.read_text(errors='replace')}")


def live_env(home: Path, *, config_text: str, extra_env: dict | None = None) -> dict:
    """The environment of a live stack on ``home``: its config.yaml written, its database
    migrated. For tests that start the server processes their own way."""
    home.mkdir(parents=True, exist_ok=True)
    config = home / "config.yaml"
    config.write_text(config_text)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_SETTINGS_MODULE", "PYTEST"))}
    env.update({
        "DJANGO_SETTINGS_MODULE": "deerflow_site.settings",
        "DJANGO_DEBUG": "true",
        "DEER_FLOW_HOME": str(home),
        "DEER_FLOW_CONFIG_PATH": str(config),
        "DEER_FLOW_EXTENSIONS_CONFIG_PATH": str(home / "extensions_config.json"),
        "LOG_LEVEL": "WARNING",
        # Tests edit config.yaml under a running server and look at once; a server otherwise
        # looks at the file once a second (CONFIG_RECHECK_SECONDS), as the benchmarks' do.
        "CONFIG_RECHECK_SECONDS": "0",
        **(extra_env or {}),
    })
    env["DATABASE_URL"] = migrated_database(home, env)
    return env


def start_live_server(home: Path, *, config_text: str, extra_env: dict | None = None, servers: int = 1, celery_workers: int = 0,
                      celery_concurrency: int = 8) -> LiveServer:
    env = live_env(home, config_text=config_text, extra_env=extra_env)
    log_path = home / "server.log"
    server = LiveServer(url="", env=env, process=None, log_path=log_path)  # type: ignore[arg-type]
    log = open(log_path, "w")
    deadline = time.monotonic() + HANG_SECONDS
    server.process, server.url = _start_daphne(server, log, deadline)
    server.urls.append(server.url)
    for _ in range(servers - 1):
        process, url = _start_daphne(server, log, deadline)
        server.others.append(process)
        server.urls.append(url)
    for index in range(celery_workers):
        _start_celery_worker(server, home, index, celery_concurrency, deadline)
    return server
