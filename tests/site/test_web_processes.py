"""deerflow_site.server.web_processes: several Daphne servers on one port, started, used and stopped
for real on the embedded stack (SQLite, in-process runs)."""

from __future__ import annotations

import concurrent.futures
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from deerflow_site.server.web_processes import AUTO_MAX, process_count
from tests.support.live import ROOT, copy_checkout, free_port, live_env
from tests.support.waiting import HANG_SECONDS

CONFIG = """\
config_version: 1
models: []
sandbox:
  use: local
"""
# Generous: two servers load Django on a machine other test runs share.
START_DEADLINE = HANG_SECONDS
STOP_DEADLINE = 60


class Launched:
    def __init__(self, process: subprocess.Popen, url: str, log: Path):
        self.process, self.url, self.log = process, url, log

    def children(self) -> list[int]:
        # A process can end between the listing and the read: its stat is then [].
        return [pid for pid in _pids() if _stat(pid)[1:2] == [str(self.process.pid)]]

    def output(self) -> str:
        return self.log.read_text(errors="replace")


def _pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _stat(pid: int) -> list[str]:
    """State, parent pid, ... (the fields after the command name of /proc/<pid>/stat); [] once gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return []


def cpu_ticks(pid: int) -> int:
    fields = _stat(pid)
    return int(fields[11]) + int(fields[12])  # utime + stime


def alive(pid: int) -> bool:
    fields = _stat(pid)
    return bool(fields) and fields[0] != "Z"


def wait_gone(pids: list[int]) -> None:
    deadline = time.monotonic() + STOP_DEADLINE
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(alive(pid) for pid in pids), f"still running: {[pid for pid in pids if alive(pid)]}"


def allowed_cpus(pid: int) -> set[int]:
    return os.sched_getaffinity(pid)


# The launcher as `python -m` runs it, but where it cannot fork (no preload): each child fresh.
WITHOUT_FORK = ["-c", "import sys; from deerflow_site.server import web_processes as w; w.preload = lambda: False; sys.exit(w.main())"]


def launch(home: Path, *, processes: str, extra_env: dict | None = None, also_run: str | None = None, fork: bool = True) -> Launched:
    env = live_env(home, config_text=CONFIG, extra_env={"CPU_PINNING_DIR": str(home / "cpus"), **(extra_env or {})})
    port = free_port()
    ready, log = home / "ready", home / "launcher.log"
    also = ["--also-run", also_run] if also_run else []
    process = subprocess.Popen(
        [sys.executable, *(["-m", "deerflow_site.server.web_processes"] if fork else WITHOUT_FORK), "-b", "127.0.0.1", "-p", str(port),
         "--processes", processes, "--ready-file", str(ready), *also, "deerflow_site.asgi:application"],
        cwd=ROOT, env=env, stdout=open(log, "w"), stderr=subprocess.STDOUT)
    launched = Launched(process, f"http://127.0.0.1:{port}", log)
    deadline = time.monotonic() + START_DEADLINE
    while not ready.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"the launcher did not report its servers listening: {launched.output()}")
        time.sleep(0.2)
    assert ready.read_text().strip() == processes
    return launched


def get(url: str) -> int:
    with urllib.request.urlopen(url, timeout=60) as response:
        response.read()
        return response.status


@pytest.fixture
def stop_after(request):
    started: list[Launched] = []
    yield started.append
    for launched in started:
        children = launched.children()
        if launched.process.poll() is None:
            launched.process.kill()
        for pid in children:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.slow
def test_two_servers_share_the_port_and_both_serve_then_stop_on_sigterm(tmp_path, stop_after):
    launched = launch(tmp_path, processes="2")
    stop_after(launched)
    children = launched.children()
    assert len(children) == 2 and all(alive(pid) for pid in children), launched.output()
    assert get(f"{launched.url}/api/health") == 200

    before = {pid: cpu_ticks(pid) for pid in children}
    with concurrent.futures.ThreadPoolExecutor(24) as pool:
        statuses = list(pool.map(get, [f"{launched.url}/api/health"] * 96))
    after = {pid: cpu_ticks(pid) for pid in children}
    assert set(statuses) == {200}
    # An idle server spends a tick or so on its timers; a server that took a share of the
    # requests spends several (a health check reads both databases).
    assert all(after[pid] - before[pid] >= 3 for pid in children), (before, after)

    launched.process.send_signal(signal.SIGTERM)
    assert launched.process.wait(STOP_DEADLINE) == 0, launched.output()
    wait_gone(children)
    assert not (tmp_path / "ready").exists()


@pytest.mark.slow
def test_a_server_that_dies_takes_the_launcher_and_the_other_server_down(tmp_path, stop_after):
    launched = launch(tmp_path, processes="2", extra_env={"CPU_PINNING": "false"})
    stop_after(launched)
    victim, other = launched.children()
    os.kill(victim, signal.SIGKILL)
    assert launched.process.wait(STOP_DEADLINE) == 128 + signal.SIGKILL
    wait_gone([other])
    assert f"server process {victim} exited with code 137; stopping the others" in launched.output()


@pytest.mark.slow
def test_a_server_told_to_stop_stops_on_its_own_terms_and_the_launcher_follows(tmp_path, stop_after):
    # The servers are forked from the launcher, which has its own SIGTERM handler: a server
    # must handle the signal as a server (drain, exit 0), not as a copy of the launcher.
    launched = launch(tmp_path, processes="2", extra_env={"CPU_PINNING": "false"})
    stop_after(launched)
    victim, other = launched.children()
    assert get(f"{launched.url}/api/health") == 200
    os.kill(victim, signal.SIGTERM)
    assert launched.process.wait(STOP_DEADLINE) == 0, launched.output()
    wait_gone([other])
    output = launched.output()
    assert f"server process {victim} exited with code 0; stopping the others" in output
    assert output.count("Shutting down: no new runs are admitted here") == 2, output


def _probe(home: Path) -> str:
    return f"tests.support.after_servers_probe {home / 'launcher.log'} {home / 'probe'} 3"


def _probe_pid(launched: Launched) -> int:
    found = re.search(r"started python -m tests\.support\.after_servers_probe .* \(pid (\d+)\)", launched.output())
    assert found, launched.output()
    return int(found.group(1))


def _wait_probe(home: Path, launched: Launched) -> str:
    deadline = time.monotonic() + START_DEADLINE
    while not (home / "probe").exists():
        assert time.monotonic() < deadline, launched.output()
        time.sleep(0.2)
    return (home / "probe").read_text()


@pytest.mark.slow
def test_also_run_starts_once_the_servers_listen_and_stops_with_them(tmp_path, stop_after):
    # scripts/run.sh's Celery worker, forked from the preloaded launcher like the servers.
    launched = launch(tmp_path, processes="2", extra_env={"CPU_PINNING": "false"}, also_run=_probe(tmp_path))
    stop_after(launched)
    assert _wait_probe(tmp_path, launched) == "listening"
    probe = _probe_pid(launched)
    children = launched.children()
    assert probe in children and len(children) == 3, launched.output()
    assert "deerflow_site.server.web_processes" in _cmdline(probe)  # forked: the launcher's command line
    assert get(f"{launched.url}/api/health") == 200

    launched.process.send_signal(signal.SIGTERM)
    assert launched.process.wait(STOP_DEADLINE) == 0, launched.output()
    wait_gone(children)


@pytest.mark.slow
def test_where_it_cannot_fork_also_run_is_a_fresh_process_whose_exit_stops_the_servers(tmp_path, stop_after):
    launched = launch(tmp_path, processes="2", extra_env={"CPU_PINNING": "false"}, also_run=_probe(tmp_path), fork=False)
    stop_after(launched)
    assert _wait_probe(tmp_path, launched) == "listening"
    probe = _probe_pid(launched)
    children = launched.children()
    assert probe in children and len(children) == 3, launched.output()
    assert "-m deerflow_site.server.after_servers " in _cmdline(probe)

    os.kill(probe, signal.SIGUSR1)  # it exits with 3 on its own
    assert launched.process.wait(STOP_DEADLINE) == 3, launched.output()
    wait_gone(children)
    assert f"process {probe} (python -m tests.support.after_servers_probe) exited with code 3; stopping the others" in launched.output()


@pytest.mark.parametrize("value", ["three", "0", "-1", "65", "2.5"])
def test_a_bad_process_count_is_one_clear_line_and_exit_2(value):
    env = {**os.environ, "WEB_PROCESSES": value}
    result = subprocess.run([sys.executable, "-m", "deerflow_site.server.web_processes", "-p", str(free_port()), "deerflow_site.asgi:application"],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [f"error: WEB_PROCESSES must be 'auto' or a whole number from 1 to 64, not {value!r}"]


def test_auto_is_one_process_per_usable_core_up_to_two():
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert process_count(None) == process_count("") == process_count("auto") == process_count(" AUTO ") == min(usable, AUTO_MAX)
    assert process_count("3") == 3


def test_a_port_in_use_is_one_clear_line_and_exit_2():
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run([sys.executable, "-m", "deerflow_site.server.web_processes", "-p", str(port), "--processes", "1",
                                 "deerflow_site.asgi:application"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [f"error: cannot listen on 127.0.0.1:{port}: Address already in use"]


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2, reason="needs two usable cores")
def test_make_run_starts_the_servers_then_a_celery_worker_that_takes_no_server_core(tmp_path):
    checkout = copy_checkout(tmp_path / "deerflow")
    port = free_port()
    env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "TERM") if k in os.environ}
    env.update({"PORT": str(port), "WEB_PROCESSES": "2", "CPU_PINNING_DIR": str(tmp_path / "cpus"), "CELERY_LOG_LEVEL": "info", "RUN_CHANNELS": "false"})
    log = tmp_path / "make-run.log"
    run = subprocess.Popen(["scripts/run.sh"], cwd=checkout, env=env, stdout=open(log, "w"), stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + START_DEADLINE
        while " ready." not in log.read_text(errors="replace"):  # Celery's line once its pool runs
            assert run.poll() is None and time.monotonic() < deadline, log.read_text(errors="replace")
            time.sleep(0.3)
        output = log.read_text(errors="replace")
        assert f"DeerFlow is running at http://127.0.0.1:{port}/ on 2 web processes" in output
        assert get(f"http://127.0.0.1:{port}/api/health") == 200

        ours = [pid for pid in _pids() if _stat(pid)[1:2] == [str(run.pid)]]
        launcher = next(pid for pid in ours if "deerflow_site.server.web_processes" in _cmdline(pid))
        # The worker is the launcher's child too (forked from its preloaded imports), let go
        # once the servers listen: the launcher names both.
        servers = [int(pid) for pid in re.search(r"2 server processes listening \(pids (\d+), (\d+)\)", output).groups()]
        worker = int(re.search(r"started python -m celery -A deerflow_site worker --beat .* \(pid (\d+)\)", output).group(1))
        assert sorted(pid for pid in _pids() if _stat(pid)[1:2] == [str(launcher)]) == sorted([*servers, worker])
        server_cores = set().union(*(allowed_cpus(pid) for pid in servers))
        assert len(servers) == 2 and all(len(allowed_cpus(pid)) == 1 for pid in servers) and len(server_cores) == 2
        # The launcher itself took none: what it starts (the worker) gets every core.
        assert allowed_cpus(launcher) == os.sched_getaffinity(0)
        # Unpinned (every core) where the servers took them all, else a core of its own.
        worker_cores = allowed_cpus(worker)
        assert worker_cores == os.sched_getaffinity(0) or (len(worker_cores) == 1 and not worker_cores & server_cores), (worker_cores, server_cores)
    finally:
        os.killpg(run.pid, signal.SIGTERM)
        run.wait(STOP_DEADLINE)

    # A bad count stops `make run` before any worker starts, with the launcher's line and code.
    env["WEB_PROCESSES"] = "zero"
    result = subprocess.run(["scripts/run.sh"], cwd=checkout, env=env, capture_output=True, text=True, timeout=START_DEADLINE)
    assert result.returncode == 2
    assert "error: WEB_PROCESSES must be 'auto' or a whole number from 1 to 64, not 'zero'" in result.stderr
    assert "celery" not in result.stdout + result.stderr


ACCEPTS = """\
import socket, sys
from twisted.internet import reactor, tcp
from twisted.internet.protocol import Factory, Protocol
from deerflow_site.server.daphne_server import _SharedPort

built = []
factory = Factory.forProtocol(Protocol)
factory.buildProtocol = lambda addr: built.append(addr) or Protocol()
listener = socket.create_server(("127.0.0.1", 0), backlog=16)
listener.setblocking(False)
clients = [socket.create_connection(listener.getsockname()) for _ in range(3)]
port = tcp.Port._fromListeningDescriptor(reactor, listener.fileno(), socket.AF_INET, factory)
port.startListening()  # registers with the (not running) reactor; accepts nothing yet
if sys.argv[1] == "shared":
    port.__class__ = _SharedPort
port.doRead()  # the socket is readable: what one wake-up of the loop does
print(len(built))
"""


@pytest.mark.parametrize(("kind", "accepted"), [("shared", 1), ("plain", 3)])
def test_a_server_on_the_shared_socket_takes_one_connection_per_wake_up(kind, accepted):
    # Against the installed Twisted: an upgrade that stops reading numberAccepts fails here.
    result = subprocess.run([sys.executable, "-c", ACCEPTS, kind], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(accepted)


FORKED = """\
import os, sys
from deerflow_site.server import web_processes
assert web_processes.preload(), "the launcher would not fork"
from apps.runs.runtime import process_id
from harness.observability import metrics
child = os.fork()
if child == 0:
    metrics.run_started()  # a live gauge of the server's own, as a run it executes makes
    print(process_id(), os.getpid())
    sys.exit(0)  # the exit a stopping server makes: atexit runs
os.waitpid(child, 0)
print(process_id(), os.getpid())
"""


def test_what_the_launcher_sets_up_before_it_forks_names_no_process(tmp_path):
    # The launcher sets Django up (every app's ready()) before it forks the servers and the
    # worker. Run leases name the process that holds them, so a server's must be its own, or
    # one server would renew a dead one's runs and recovery would never settle them; the same
    # goes for the live gauges a stopping server withdraws from the metrics folder.
    env = live_env(tmp_path, config_text=CONFIG, extra_env={"METRICS_ENABLED": "true", "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics")})
    result = subprocess.run([sys.executable, "-c", FORKED], cwd=ROOT, env=env, capture_output=True, text=True, timeout=HANG_SECONDS)
    assert result.returncode == 0, result.stderr
    (child_id, child_pid), (parent_id, parent_pid) = (line.split() for line in result.stdout.split("\n")[:2])
    assert child_id.endswith(f":{child_pid}") and parent_id.endswith(f":{parent_pid}") and child_pid != parent_pid
    files = sorted(path.name for path in (tmp_path / "metrics").iterdir())
    assert f"counter_{child_pid}.db" in files  # the run it started still counts
    assert not [name for name in files if name.startswith("gauge_live")], files  # but is no longer active


@pytest.mark.slow
def test_manage_py_runserver_is_daphnes_and_serves_websockets(tmp_path):
    # Daphne's app left INSTALLED_APPS (its setup makes the reactor the launcher must not fork);
    # a developer's `manage.py runserver` is still an ASGI server, not Django's WSGI one.
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    env = live_env(tmp_path, config_text=CONFIG)
    port = free_port()
    log = tmp_path / "runserver.log"
    server = subprocess.Popen([sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"], cwd=ROOT, env=env,
                              stdout=open(log, "w"), stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + START_DEADLINE
        while True:
            try:
                assert get(f"http://127.0.0.1:{port}/api/health") == 200
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, log.read_text(errors="replace")
                time.sleep(0.2)
        # Signed out, the chat's socket is accepted and then closed with the app's own code.
        with connect(f"ws://127.0.0.1:{port}/ws/threads/some-thread/", origin=f"http://127.0.0.1:{port}", open_timeout=60) as socket_:
            with pytest.raises(ConnectionClosed) as closed:
                socket_.recv(timeout=60)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 4401
    finally:
        server.terminate()
        try:
            server.wait(STOP_DEADLINE)
        except subprocess.TimeoutExpired:  # not left holding its port for the tests after it
            server.kill()
            server.wait(STOP_DEADLINE)
