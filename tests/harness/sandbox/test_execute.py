"""execute_command on both providers: exit codes, stdin, timeouts, background processes,
output bounds, environment scrubbing and virtual paths inside commands."""

from __future__ import annotations

import os
import signal
import threading
import time
import uuid
from pathlib import Path

import pytest

from tests.harness.sandbox.conftest import make_provider
from tests.support.waiting import HANG_SECONDS, wait_until


def _run(sandbox, command, **kwargs):
    result = sandbox.execute_command(command, **kwargs)
    return result, result.output.render()


def _processes_with(marker: str) -> list[int]:
    """Live (non-zombie) processes whose command line contains ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\x00", b" ").decode(errors="replace")
            state = next(line for line in (entry / "status").read_text().splitlines() if line.startswith("State:"))
        except (OSError, StopIteration):
            continue
        if marker in cmdline and "Z" not in state.split()[1]:
            found.append(int(entry.name))
    return found


def _wait_gone(marker: str, seconds: float = 30.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        left = _processes_with(marker)
        if not left:
            return []
        time.sleep(0.05)
    return _processes_with(marker)


def test_output_and_exit_code(sandbox):
    result, out = _run(sandbox, "echo out; echo err >&2; exit 3")
    assert result.exit_code == 3
    assert "out" in out and "err" in out
    assert not result.timed_out


def test_missing_command_is_a_result(sandbox):
    result, out = _run(sandbox, "definitely-not-a-command-xyz --flag")
    assert result.exit_code == 127
    assert "not found" in out


def test_stdin_is_empty(sandbox):
    # A command left waiting for input would be killed at the timeout, with no exit code.
    result, out = _run(sandbox, 'cat; read -r line; echo "got:[$line]"')
    assert "got:[]" in out and result.exit_code == 0


def test_virtual_paths_work_in_commands(sandbox):
    result, out = _run(
        sandbox,
        "pwd; echo made > /mnt/user-data/outputs/made.txt; cat /mnt/user-data/outputs/made.txt; ls /mnt/skills/public",
    )
    assert result.exit_code == 0, out
    assert out.splitlines() == ["/mnt/user-data/workspace", "made", "demo"]
    assert (sandbox.fs.host_dir("outputs") / "made.txt").read_text() == "made\n"
    assert sandbox.read_file("/mnt/user-data/outputs/made.txt") == "made\n"


def test_timeout_kills_the_whole_process_group(sandbox):
    marker = f"{uuid.uuid4().int % 10**6}.{uuid.uuid4().int % 10**6}"
    outcome = {}
    # The timeout must leave a busy machine time to start the shell and its sleeps (bwrap
    # sets up namespaces first): at 1.5 s the sleeps were sometimes not up yet.
    worker = threading.Thread(target=lambda: outcome.update(
        zip(("result", "out"), _run(sandbox, f"echo begun; sleep {marker} & sleep {marker}1 & sleep {marker}2", timeout=5))
    ))
    worker.start()
    seen = []
    while not seen and worker.is_alive():
        seen = _processes_with(f"sleep {marker}")
        time.sleep(0.01)
    worker.join(HANG_SECONDS)
    assert seen, "the sleeps never started, so this test proves nothing"
    result, out = outcome["result"], outcome["out"]
    assert result.timed_out and result.exit_code is None
    assert "begun" in out
    assert _wait_gone(marker) == [], "child processes survived the timeout"


def test_backgrounded_server_returns_at_once(sandbox, provider_kind):
    marker = f"srv-{uuid.uuid4().hex[:8]}"
    result, out = _run(
        sandbox,
        f"(exec -a {marker} python3 -m http.server --bind 127.0.0.1 0) & echo $! > server.pid; echo started",
    )
    try:
        # Held until the server ended, the call would have been killed at the timeout instead.
        assert result.exit_code == 0 and not result.timed_out and "started" in out
        if provider_kind == "bwrap":
            # Processes do not outlive their command in the isolated sandbox.
            assert _wait_gone(marker) == []
    finally:
        for pid in _processes_with(marker):
            os.kill(pid, signal.SIGKILL)
        # A launcher on PATH (a pyenv shim) can replace the marker in argv[0]; the pid the
        # command wrote is the server's either way, since the subshell execs into it.
        pid_file = sandbox.fs.host_dir("workspace") / "server.pid"
        if provider_kind == "local" and pid_file.exists():
            try:
                os.kill(int(pid_file.read_text().strip()), signal.SIGKILL)
            except (ValueError, ProcessLookupError):
                pass


def test_long_output_keeps_head_and_tail(home, skills_dir, provider_kind):
    provider = make_provider(provider_kind, skills_dir, max_output_chars=1000)
    sandbox = provider.get(provider.acquire("alice", "t-bounds"))
    result = sandbox.execute_command("seq 1 200000")
    out = result.output.render()
    assert result.exit_code == 0
    assert out.startswith("1\n2\n3\n")
    assert out.rstrip().endswith("199999\n200000")
    assert "characters of output omitted" in out
    assert len(out) < 1200
    total = sum(len(f"{i}\n") for i in range(1, 200001))
    assert result.output.omitted_chars == total - len(result.output.head) - len(result.output.tail)


def test_environment_is_scrubbed_and_secrets_injected(sandbox, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-live-should-not-leak")
    monkeypatch.setenv("DATABASE_URL", "postgres://u:p@db/x")
    monkeypatch.setenv("DJANGO_SECRET_KEY", "django-secret-value")
    monkeypatch.setenv("SERVICE_ENDPOINT", "https://bob:hunter2@example.com/")
    monkeypatch.setenv("PGPASSWORD", "pg-pass-value")
    monkeypatch.setenv("ORDINARY_SETTING", "visible-value")
    monkeypatch.setenv("LANG", "C.UTF-8")
    result, out = _run(sandbox, "env; echo ERP=$ERP_TOKEN", env={"ERP_TOKEN": "erp-request-secret"})
    for leaked in ("sk-live-should-not-leak", "postgres://", "django-secret-value", "hunter2", "pg-pass-value"):
        assert leaked not in out
    assert "ORDINARY_SETTING" not in out  # not on the allow-list (test_env_allowlist.py)
    assert "LANG=C.UTF-8" in out
    assert "\nPATH=" in "\n" + out
    assert "ERP=erp-request-secret" in out
    # What the model sees is masked.
    masked = result.output.render({"ERP_TOKEN": "erp-request-secret"})
    assert "erp-request-secret" not in masked and "ERP=********" in masked


def test_invalid_injected_env_name_is_rejected(sandbox):
    with pytest.raises(ValueError):
        sandbox.execute_command("true", env={"BAD NAME": "x"})


def test_cancel_kills_the_command_at_once(sandbox):
    marker = f"{uuid.uuid4().int % 10**6}.{uuid.uuid4().int % 10**5}"
    cancel = threading.Event()
    outcome = {}
    worker = threading.Thread(target=lambda: outcome.update(r=sandbox.execute_command(f"sleep {marker} & sleep {marker}9", cancel=cancel)))
    worker.start()
    wait_until(lambda: _processes_with(f"sleep {marker}"), "the sleeps to start", interval=0.01)
    cancel.set()
    worker.join(HANG_SECONDS)
    assert not worker.is_alive()
    result = outcome["r"]
    # Not acted on, the cancel would have left the command to the sandbox's timeout.
    assert result.cancelled and not result.timed_out and result.exit_code is None
    assert _wait_gone(marker) == []
