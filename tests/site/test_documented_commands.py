"""Every `manage.py` command the README and docs/ tell a user to type, typed as written in a
fresh checkout after `make run`, in a shell that has none of make run's variables.

The checkout is a copy of the working tree (what a clone of it would hold) sharing this
suite's virtualenv and sandbox toolbox; `make run` really starts there and is stopped once healthy, so its data
home is what a user's is. A command the docs gain without a case here fails the first test.
"""

import os
import pty
import re
import select
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from tests.support.live import copy_checkout, free_port

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
COMMAND = re.compile(r"\.venv/bin/python manage\.py [a-z_]+(?: --?[a-z][a-z-]*(?: /[a-z/]*)?)*")

# How each documented command is checked: the environment it is documented with, and what
# its output must show. Production commands are documented after the production exports.
PRODUCTION = {"DJANGO_DEBUG": "false", "DJANGO_SECRET_KEY": "k" * 50, "ALLOWED_HOSTS": "deerflow.example.com"}
CASES = {
    ".venv/bin/python manage.py createsuperuser": (None, "Superuser created successfully."),
    ".venv/bin/python manage.py auth_routes": ({}, "/api/threads"),
    ".venv/bin/python manage.py auth_routes --prefix /api/": ({}, "/api/threads"),
    ".venv/bin/python manage.py auth_routes --admin": ({}, "/admin/"),
    ".venv/bin/python manage.py migrate": (PRODUCTION, "No migrations to apply."),
    ".venv/bin/python manage.py collectstatic --noinput": (PRODUCTION, "static files copied"),
    ".venv/bin/python manage.py run_channels --plan": ({}, "telegram: off (channels.enabled is false in config.yaml)"),
    ".venv/bin/python manage.py config_check": ({}, "config.yaml: loads ("),
}


def documented_commands() -> set[str]:
    found = set()
    for doc in DOCS:
        found.update(m.group(0).strip() for m in COMMAND.finditer(doc.read_text()))
    return found


def shell_env(**extra) -> dict[str, str]:
    """A new terminal's environment: nothing `make run` exported, nothing from this suite."""
    env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "TERM") if k in os.environ}
    env["CPU_PINNING"] = "false"  # not a user's habit, but the suite's live servers share the cores
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def checkout(tmp_path_factory):
    """A fresh checkout of the working tree, after `make run` has started once and stopped."""
    dest = copy_checkout(tmp_path_factory.mktemp("fresh") / "deerflow")

    port = free_port()
    server = subprocess.Popen(["make", "run"], cwd=dest, env=shell_env(PORT=str(port)), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            assert server.poll() is None, f"make run exited: {server.stdout.read()}"
            assert time.monotonic() < deadline, "make run did not become healthy"
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                time.sleep(0.3)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)
    assert (dest / ".deer-flow" / "secret_key").is_file()
    return dest


def run(checkout, command: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(command.split(), cwd=checkout, env=shell_env(**env), capture_output=True, text=True, timeout=120)


def create_superuser_interactively(checkout, command: str) -> str:
    """Answer createsuperuser's prompts on a terminal, as a person would."""
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(checkout)
        args = command.split()
        os.execve(args[0], args, shell_env())
    password = "Deer-Flow-Adm1n!"
    prompts = [("Username", "admin"), ("Email address", "admin@example.com"), ("Password", password), ("Password (again)", password)]
    output, seen = "", 0
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if not select.select([fd], [], [], 1)[0]:
            continue
        try:
            chunk = os.read(fd, 4096).decode(errors="replace")
        except OSError:
            break  # the command exited and closed the terminal
        if not chunk:
            break
        output += chunk
        last_line = output[seen:].rsplit("\n", 1)[-1].strip()
        if prompts and last_line.startswith(prompts[0][0]) and last_line.endswith(":"):
            os.write(fd, f"{prompts.pop(0)[1]}\n".encode())
            seen = len(output)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, output
    assert not prompts, output
    return output


def test_every_documented_command_has_a_case():
    documented = documented_commands()
    assert ".venv/bin/python manage.py createsuperuser" in documented
    assert documented <= set(CASES), f"documented but not checked here: {sorted(documented - set(CASES))}"


@pytest.mark.parametrize("command", sorted(CASES))
def test_documented_command_works_as_written(checkout, command):
    env, expected = CASES[command]
    if env is None:
        output = create_superuser_interactively(checkout, command)
    else:
        result = run(checkout, command, env)
        assert result.returncode == 0, result.stderr
        output = result.stdout
    assert expected in output, output


def test_production_still_fails_fast_without_a_secret_key(checkout, tmp_path):
    # The local home supplies defaults only to itself: another home, or DJANGO_DEBUG=false, is production.
    for env in ({"DEER_FLOW_HOME": str(tmp_path)}, {"DJANGO_DEBUG": "false"}):
        result = run(checkout, ".venv/bin/python manage.py migrate", env)
        assert result.returncode != 0
        assert "Traceback" not in result.stderr
        assert "DJANGO_SECRET_KEY is required when DJANGO_DEBUG is off" in result.stderr
