"""A real Daphne server in a subprocess, for tests that talk to the product over HTTP.

It runs the production settings (DJANGO_DEBUG on) against its own database — a SQLite file,
or a database on the PostgreSQL server of the second test tier — and a config.yaml whose
model is a LoopbackOpenAIServer in the test process, so runs go through the real
ChatOpenAI path over HTTP.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class LiveServer:
    url: str
    env: dict
    process: subprocess.Popen
    log_path: Path

    def manage(self, *args: str) -> str:
        result = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            raise RuntimeError(f"manage.py {' '.join(args)} failed: {result.stderr}")
        return result.stdout

    def shell(self, code: str) -> str:
        return self.manage("shell", "-v0", "-c", code).strip()

    def create_user_token(self, username: str, scopes: str = "threads:read threads:write runs:read runs:create runs:cancel") -> str:
        return self.shell(
            "from apps.accounts.models import User; from apps.accounts.services import token_create\n"
            f"u, _ = User.objects.get_or_create(username={username!r})\n"
            f"print(token_create(owner=u, name='tests', scopes={scopes.split()!r}).token)"
        )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()


def _database_url(home: Path) -> str:
    base = os.environ.get("DATABASE_URL", "")
    if not base.startswith(("postgres://", "postgresql://")):
        return f"sqlite:///{home / 'live.sqlite3'}"
    import psycopg

    name = f"deerflow_live_{os.getpid()}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    return base.rsplit("/", 1)[0] + "/" + name


def start_live_server(home: Path, *, config_text: str, extra_env: dict | None = None) -> LiveServer:
    home.mkdir(parents=True, exist_ok=True)
    config = home / "config.yaml"
    config.write_text(config_text)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_SETTINGS_MODULE", "PYTEST"))}
    env.update({
        "DJANGO_SETTINGS_MODULE": "deerflow_site.settings",
        "DJANGO_DEBUG": "true",
        "DEER_FLOW_HOME": str(home),
        "DEER_FLOW_CONFIG_PATH": str(config),
        "DEER_FLOW_EXTENSIONS_CONFIG_PATH": str(home / "extensions_config.json"),
        "DATABASE_URL": _database_url(home),
        "LOG_LEVEL": "WARNING",
        **(extra_env or {}),
    })
    log_path = home / "server.log"
    server = LiveServer(url=f"http://127.0.0.1:{port}", env=env, process=None, log_path=log_path)  # type: ignore[arg-type]
    server.manage("migrate", "-v0")
    log = open(log_path, "w")
    server.process = subprocess.Popen([sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "deerflow_site.asgi:application"],
                                      cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"daphne exited: {server.log()}")
        try:
            with urllib.request.urlopen(f"{server.url}/api/health", timeout=2) as response:
                if response.status == 200:
                    return server
        except OSError:
            time.sleep(0.2)
    server.stop()
    raise RuntimeError(f"daphne did not become healthy: {server.log()}")
