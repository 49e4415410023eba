"""What a command inside the bubblewrap provider can and cannot see."""

from __future__ import annotations

import socket
import threading

import pytest

from harness.config import deer_flow_home, thread_user_data_dir
from tests.harness.sandbox.conftest import make_provider, requires_bwrap

pytestmark = [requires_bwrap, pytest.mark.bwrap]


@pytest.fixture
def isolated(home, skills_dir):
    provider = make_provider("bwrap", skills_dir, bash_command_timeout=20)
    return provider, provider.get(provider.acquire("alice", "t-iso"))


def _out(sandbox, command):
    result = sandbox.execute_command(command)
    return result.exit_code, result.output.render()


@pytest.fixture
def host_listener():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    accepted = []

    def accept():
        try:
            conn, _ = server.accept()
            accepted.append(conn)
        except OSError:
            pass

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    server.close()
    for conn in accepted:
        conn.close()


CONNECT = "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3); print('CONNECTED')\""


def test_host_passwd_and_home_are_invisible(isolated):
    _, sandbox = isolated
    code, out = _out(sandbox, "cat /etc/passwd; whoami; ls /root /home /work 2>&1; echo; test -e /etc/shadow || echo no-shadow")
    assert "daemon:" not in out  # present in every Debian /etc/passwd
    assert "sandbox:x:1000" in out and "\nsandbox\n" in out
    assert "no-shadow" in out
    assert out.count("No such file or directory") == 3


def test_other_threads_and_data_dir_are_invisible(isolated):
    provider, sandbox = isolated
    other = provider.get(provider.acquire("bob", "t-private"))
    other.write_file("/mnt/user-data/workspace/private.txt", "bob-private-data")
    bob_file = thread_user_data_dir("bob", "t-private") / "workspace" / "private.txt"
    code, out = _out(
        sandbox,
        f"cat {bob_file} 2>&1; ls {deer_flow_home()} 2>&1; "
        "echo ---; find / -path /proc -prune -o -path /usr -prune -o -name private.txt -print 2>/dev/null; "
        "grep -c users/bob /proc/self/mountinfo; echo done",
    )
    errors, _, searched = out.partition("---\n")
    assert out.rstrip().endswith("0\ndone"), out  # no mount comes from bob's directories
    assert "bob-private-data" not in out
    assert "private.txt" not in searched
    assert out.count("No such file or directory") == 2


def test_no_network_by_default(isolated, host_listener):
    _, sandbox = isolated
    code, out = _out(sandbox, CONNECT.format(port=host_listener))
    assert code != 0 and "CONNECTED" not in out
    code, out = _out(sandbox, "tail -n +3 /proc/net/dev")
    assert code == 0
    assert {line.split(":")[0].strip() for line in out.splitlines() if line.strip()} == {"lo"}


def test_network_switch_allows_it(home, skills_dir, host_listener):
    provider = make_provider("bwrap", skills_dir, allow_network=True)
    sandbox = provider.get(provider.acquire("alice", "t-net"))
    code, out = _out(sandbox, CONNECT.format(port=host_listener))
    assert code == 0 and "CONNECTED" in out


def test_virtual_paths_are_real_and_skills_read_only(isolated):
    _, sandbox = isolated
    code, out = _out(
        sandbox,
        "realpath /mnt/user-data/workspace; touch /mnt/user-data/outputs/from-inside; "
        "touch /mnt/skills/evil 2>&1; cat /mnt/skills/public/demo/SKILL.md | tail -1; "
        "grep CapEff /proc/self/status; echo HOME=$HOME VENV=${VIRTUAL_ENV:-unset}",
    )
    lines = out.splitlines()
    assert lines[0] == "/mnt/user-data/workspace"
    assert (sandbox.fs.host_dir("outputs") / "from-inside").exists()
    assert "Read-only file system" in out
    assert "Demo skill." in out
    assert "CapEff:\t0000000000000000" in out
    assert "HOME=/tmp VENV=unset" in out


def test_host_paths_in_commands_are_not_translated_back(isolated):
    """A host path names nothing inside, even the thread's own directory."""
    _, sandbox = isolated
    host = sandbox.fs.host_dir("workspace")
    code, out = _out(sandbox, f"ls {host} 2>&1")
    assert code != 0 and "No such file or directory" in out
