"""The container provider on a real engine (Podman's Docker-API service, tests/support/container_engine.py).

What a user of the sandbox would notice: the layout and the toolbox are the bubblewrap
sandbox's, threads cannot see each other, limits stop the command and leave the host and the
sandbox usable (the thread's disk is a file system of its own, full at its quota), the network
goes out through the SSRF guard only, extra mounts serve commands and file tools alike, the warm
pool hands out a started container, a killed server's containers go at the next start, a
vanished container costs one tool call, not the thread's files, and an engine that is down
costs commands only.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from harness.agents.markers import TOOL_META_KEY
from harness.config import parse_config
from harness.config.app_config import SandboxConfig
from harness.sandbox import disk, engine, sandbox_thread_deleted, set_sandbox_provider
from harness.sandbox.container import ContainerSandboxProvider
from harness.sandbox.errors import SandboxError, SandboxUnavailable
from harness.sandbox.ownership import MemoryOwnershipStore
from harness.testing import call, tool_reply
from harness.tools.registry import get_available_tools
from tests.harness.agents.conftest import BASE_CONFIG, AgentHarness
from tests.harness.sandbox.conftest import LateReader, make_provider
from tests.support import container_engine
from tests.support.fake_web import FakeWeb

pytestmark = [pytest.mark.container, pytest.mark.slow]


@pytest.fixture(autouse=True)
def unmount_thread_disks(home):
    """The threads' disk images are mounted under the test's home: unmount them with it."""
    yield
    container_engine.unmount_thread_disks(home)


@pytest.fixture
def make(home, skills_dir, clean_containers):
    made = []

    def build(**config):
        config.setdefault("bash_command_timeout", 60)
        provider = make_provider("container", skills_dir, **config)
        made.append(provider)
        return provider

    yield build
    for provider in made:
        provider.shutdown()


def sandbox_of(provider, user="alice", thread="thread-1"):
    return provider.get(provider.acquire(user, thread))


def run(sandbox, command, **kwargs):
    result = sandbox.execute_command(command, **kwargs)
    return result, result.output.head + result.output.tail


def test_commands_see_the_bubblewrap_layout_and_the_toolbox(make):
    sandbox = sandbox_of(make())
    sandbox.write_file("/mnt/user-data/uploads/in.csv", "a,b\n1,2\n")
    result, out = run(sandbox, "pwd; ls /mnt/user-data; ls /mnt/skills/public; cat /mnt/user-data/uploads/in.csv; "
                               "python -c 'import pandas, docx, pptx, reportlab, pypdf; print(\"toolbox ok\")'; "
                               "echo made > /mnt/user-data/outputs/made.txt; hostname")
    assert result.exit_code == 0, out
    assert out.splitlines()[0] == "/mnt/user-data/workspace"
    assert "outputs\nuploads\nworkspace" in out and "demo" in out and "a,b\n1,2" in out and "toolbox ok" in out
    assert out.strip().endswith("sandbox")
    # The file the command wrote is on the host, where the file tools and the API read it.
    assert sandbox.read_file("/mnt/user-data/outputs/made.txt") == "made\n"
    assert (sandbox.fs.host_dir("outputs") / "made.txt").is_file()


def test_no_network_a_read_only_root_and_no_capabilities(make):
    sandbox = sandbox_of(make())
    _, out = run(sandbox, "cat /proc/net/dev | grep -c : ; touch /usr/x 2>&1; grep CapEff /proc/self/status")
    lines = out.splitlines()
    assert lines[0] == "1"  # the loopback device only
    assert "Read-only file system" in out
    assert "CapEff:\t0000000000000000" in out


def test_two_threads_cannot_see_each_other(make):
    provider = make()
    a = sandbox_of(provider, "alice", "thread-a")
    b = sandbox_of(provider, "bob", "thread-b")
    run(a, "echo alice-secret > /mnt/user-data/workspace/secret.txt; sleep 60 >/dev/null 2>&1 &")
    result, out = run(b, "ls -A /mnt/user-data/workspace; cat /mnt/user-data/workspace/secret.txt 2>&1; "
                         "find / -path /proc -prune -o -path /sys -prune -o -name secret.txt -print; ps -eo args")
    assert "No such file" in out and "sleep 60" not in out
    assert "secret.txt\n" not in out and "alice-secret" not in out
    assert a.read_file("/mnt/user-data/workspace/secret.txt") == "alice-secret\n"
    with pytest.raises(SandboxError):
        b.read_file(str(a.fs.host_dir("workspace") / "secret.txt"))


def test_memory_past_the_limit_is_stopped_and_the_sandbox_lives_on(make):
    sandbox = sandbox_of(make(max_memory_mb=96))
    result, out = run(sandbox, "python -c 'x = bytearray(400 * 1024 * 1024); print(len(x))'")
    assert result.exit_code != 0
    assert "more than 96 MiB of memory" in result.limit_message and "hard limit" in result.limit_message
    result, out = run(sandbox, "echo still here")
    assert result.exit_code == 0 and "still here" in out


def test_processes_past_the_limit_fail_and_the_host_is_untouched(make):
    sandbox = sandbox_of(make(max_processes=40))
    host_tasks = len(os.listdir("/proc"))
    forks = textwrap.dedent("""
        import os, signal, sys, time
        children = []
        try:
            while len(children) < 100:
                pid = os.fork()
                if pid == 0:
                    time.sleep(60)
                    os._exit(0)
                children.append(pid)
        except OSError as e:
            error = e
        for pid in children:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        sys.exit(f"stopped after {len(children)}: {error}")
    """)
    sandbox.write_file("/mnt/user-data/workspace/forks.py", forks)
    result, out = run(sandbox, "python forks.py", timeout=60)
    assert "Resource temporarily unavailable" in out and result.exit_code == 1
    assert int(out.split("stopped after ")[1].split(":")[0]) < 40
    assert result.limit_message and "at most 40" in result.limit_message
    # The pids cgroup held: the container never had more than 40 tasks, so the host saw none of the 100.
    assert len(os.listdir("/proc")) < host_tasks + 60
    result, out = run(sandbox, "echo ok")
    assert out == "ok\n"


def test_disk_outside_the_thread_folders_is_bounded(make):
    sandbox = sandbox_of(make(tmp_mb=16, max_memory_mb=256))
    result, out = run(sandbox, "dd if=/dev/zero of=/tmp/big bs=1M count=64 2>&1; ls -s --block-size=M /tmp/big; "
                               "dd if=/dev/zero of=/var/big bs=1M count=1 2>&1")
    assert "No space left on device" in out and "16M /tmp/big" in out
    assert "Read-only file system" in out


def test_a_timeout_kills_the_whole_command(make):
    sandbox = sandbox_of(make())
    result, _ = run(sandbox, "sleep 120 & sleep 120", timeout=2)
    assert result.timed_out and result.exit_code is None
    _, out = run(sandbox, "ps -eo args | grep -c '^sleep 120' || true")
    assert out.strip() == "0"


class SlowLateReader(LateReader):
    # Longer than the engine's once-a-second look at the command and a fixed wait after it.
    first_wait = 3.0


def test_output_the_reader_has_not_taken_yet_is_kept(make, monkeypatch):
    sandbox = sandbox_of(make())
    monkeypatch.setattr(engine, "OutputCapture", SlowLateReader)
    result, out = run(sandbox, "echo first; echo last")
    assert result.exit_code == 0
    assert out == "first\nlast\n"


def test_cancel_stops_a_running_command(make):
    sandbox = sandbox_of(make())
    cancel = threading.Event()
    threading.Timer(1.0, cancel.set).start()
    result, _ = run(sandbox, "sleep 120", cancel=cancel)
    assert result.cancelled


def test_a_container_removed_mid_command_costs_one_call_not_the_files(make):
    provider = make()
    sandbox = sandbox_of(provider)
    run(sandbox, "echo kept > /mnt/user-data/workspace/notes.txt")
    name = provider.container_for(sandbox)
    threading.Timer(1.5, provider.engine.remove, args=(name,)).start()
    with pytest.raises(SandboxError, match="stopped while the command ran.*files are intact"):
        sandbox.execute_command("sleep 60")
    result, out = run(sandbox, "cat /mnt/user-data/workspace/notes.txt")
    assert result.exit_code == 0 and out == "kept\n"
    assert provider.container_for(sandbox) != name


def test_an_engine_restart_between_calls_is_invisible(make):
    provider = make()
    sandbox = sandbox_of(provider)
    run(sandbox, "echo kept > /mnt/user-data/workspace/notes.txt")
    name = provider.container_for(sandbox)
    container_engine.restart_service()
    provider.engine.remove(name)  # what a Docker daemon restart does to a container without live-restore
    result, out = run(sandbox, "cat notes.txt")
    assert result.exit_code == 0 and out == "kept\n"


def test_an_unreachable_engine_names_its_socket(home, skills_dir):
    provider = ContainerSandboxProvider(SandboxConfig(use="container", engine_url="unix:///nonexistent/engine.sock"),
                                        skills_dir=skills_dir, store=MemoryOwnershipStore())
    # Opening the sandbox needs no engine: the file tools work; a command says which socket is silent.
    sandbox = sandbox_of(provider)
    sandbox.write_file("notes.txt", "kept\n")
    with pytest.raises(SandboxUnavailable, match="/nonexistent/engine.sock"):
        sandbox.execute_command("cat notes.txt")
    assert sandbox.read_file("notes.txt") == "kept\n"


async def test_a_command_meeting_a_dead_engine_is_for_the_user_and_other_runs_go_on(home, skills_dir):
    provider = ContainerSandboxProvider(SandboxConfig(use="container", engine_url="unix:///nonexistent/engine.sock"),
                                        skills_dir=skills_dir, store=MemoryOwnershipStore())
    set_sandbox_provider(provider)
    app = parse_config(BASE_CONFIG)
    tools = get_available_tools(config=app, include_view_image=False, non_interactive=True)
    try:
        busy = AgentHarness([tool_reply(call("bash", description="list", command="ls")), "The sandbox is down."], tools=tools, app=app)
        result = await busy.send("list my files")
        answer = next(m for m in result["messages"] if m.type == "tool")
        assert "/nonexistent/engine.sock" in answer.content and "tell the user" in answer.content
        assert answer.additional_kwargs[TOOL_META_KEY]["recoverable_by_model"] is False
        # Another thread's run that needs no command is untouched by the engine being down.
        other = AgentHarness([tool_reply(call("write_file", description="d", path="/mnt/user-data/outputs/a.md", content="hi")),
                              "Done."], tools=tools, app=app)
        result = await other.send("write it")
        assert result["messages"][-1].content == "Done." and (other.outputs / "a.md").read_text() == "hi"
    finally:
        set_sandbox_provider(None)


def test_while_the_engine_is_down_other_threads_keep_working(make):
    provider = make()
    running = sandbox_of(provider, "alice", "thread-running")
    run(running, "echo kept > notes.txt")
    url, _ = container_engine.engine()
    container_engine.stop_service()
    try:
        # A thread whose command needs the engine gets an error naming its socket, at once.
        newcomer = sandbox_of(provider, "bob", "thread-new")
        with pytest.raises(SandboxUnavailable, match=url.removeprefix("unix://")):
            newcomer.execute_command("echo hi")
        with pytest.raises(SandboxUnavailable, match="does not answer"):
            running.execute_command("cat notes.txt")
        # Everything that is not a command goes on, for every thread.
        newcomer.write_file("/mnt/user-data/outputs/report.md", "# draft\n")
        assert newcomer.read_file("/mnt/user-data/outputs/report.md") == "# draft\n"
        assert running.read_file("notes.txt") == "kept\n"
    finally:
        container_engine.start_service()
    # Back: the running thread's container and files are as they were; the newcomer gets one.
    _, out = run(running, "cat notes.txt")
    assert out == "kept\n"
    _, out = run(newcomer, "cat /mnt/user-data/outputs/report.md")
    assert out == "# draft\n"


def test_a_missing_image_tells_the_operator_the_build_command(make):
    sandbox = sandbox_of(make(image="deerflow-sandbox:does-not-exist"))
    with pytest.raises(SandboxUnavailable, match="scripts/build_sandbox_image.sh"):
        sandbox.execute_command("true")


def test_the_warm_pool_serves_a_new_thread_without_starting_a_container(make):
    provider = make(replicas=2)
    assert provider.wait_for_pool(120)
    warm = set(provider._pool)
    before = set(container_engine.listed_containers())
    spares = set(provider.spares_dir.glob("spare-*.img"))
    assert len(spares) == 2  # thread disks formatted ahead, like the containers
    sandbox = sandbox_of(provider, "carol", "thread-warm")
    name = provider.container_for(sandbox)
    assert name in warm and name in before
    assert len(spares - set(provider.spares_dir.glob("spare-*.img"))) == 1
    sandbox.write_file("/mnt/user-data/uploads/data.txt", "from the host\n")
    result, out = run(sandbox, "cat /mnt/user-data/uploads/data.txt; ls /mnt/skills; echo out > /mnt/user-data/outputs/o.txt")
    assert result.exit_code == 0 and "from the host" in out and "custom" in out and "public" in out
    assert sandbox.read_file("/mnt/user-data/outputs/o.txt") == "out\n"
    # The skills' custom folder is read-only there too.
    _, out = run(sandbox, "touch /mnt/skills/custom/x 2>&1")
    assert "Read-only file system" in out
    # Another thread on a warm container sees nothing of this one.
    other = sandbox_of(provider, "dave", "thread-warm-2")
    _, out = run(other, "ls -A /mnt/user-data/uploads /mnt/user-data/outputs")
    assert "data.txt" not in out and "o.txt" not in out


def test_idle_containers_are_removed_and_the_next_command_gets_a_fresh_one(make):
    provider = make(idle_timeout=1, lease_seconds=4)
    sandbox = sandbox_of(provider)
    # A command running longer than idle_timeout is not idleness: its container stays.
    result, out = run(sandbox, "sleep 3; echo kept > notes.txt; echo done")
    assert result.exit_code == 0 and out == "done\n"
    name = provider.container_for(sandbox)
    deadline = time.monotonic() + 60
    while name in container_engine.listed_containers() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert name not in container_engine.listed_containers()
    result, out = run(sandbox, "cat notes.txt")
    assert out == "kept\n"


def test_two_servers_never_claim_one_container(make):
    store = MemoryOwnershipStore()  # what the database is to two server processes
    first = make(store=store, replicas=1)
    second = make(store=store, replicas=1)
    assert first.wait_for_pool(120) and second.wait_for_pool(120)
    assert not set(first._pool) & set(second._pool)
    a = sandbox_of(first, "erin", "thread-shared")
    name = first.container_for(a)
    b = sandbox_of(second, "erin", "thread-shared")
    # The second process uses the thread's container; it does not start or take another.
    assert second.container_for(b) == name
    run(b, "echo from-second > shared.txt")
    _, out = run(a, "cat shared.txt")
    assert out == "from-second\n"
    assert {lease.owner for lease in store.leases() if lease.container == name} == {first.owner}


SERVER = textwrap.dedent("""
    import os, sys, time
    from harness.config.app_config import SandboxConfig
    from harness.sandbox.container import ContainerSandboxProvider
    provider = ContainerSandboxProvider(SandboxConfig(use="container", engine_url=sys.argv[1], image=sys.argv[2],
                                        container_prefix=sys.argv[3], replicas=1))
    sandbox = provider.get(provider.acquire("frank", "thread-crash"))
    sandbox.execute_command("echo before-crash > /mnt/user-data/workspace/f.txt")
    provider.wait_for_pool(120)
    print("ready", flush=True)
    time.sleep(600)
""")


def test_a_killed_server_leaves_no_container_after_the_next_start(make, home):
    url, image = container_engine.engine()
    server = subprocess.Popen([sys.executable, "-c", SERVER, url, image, container_engine.PREFIX],
                              stdout=subprocess.PIPE, text=True, env={**os.environ, "DEER_FLOW_HOME": str(home)},
                              cwd=os.getcwd())
    try:
        assert server.stdout.readline().strip() == "ready"
        left = container_engine.listed_containers()
        assert len(left) == 2  # the thread's and a warm one
    finally:
        server.send_signal(signal.SIGKILL)
        server.wait()
    assert set(left) <= set(container_engine.listed_containers())  # a crash stops nothing by itself
    provider = make()
    provider.start()
    assert not set(left) & set(container_engine.listed_containers())
    sandbox = sandbox_of(provider, "frank", "thread-crash")
    _, out = run(sandbox, "cat f.txt")
    assert out == "before-crash\n"


def test_the_thread_disk_is_a_hard_limit(make, home):
    provider = make(thread_quota_mb=8)
    sandbox = sandbox_of(provider)
    image = sandbox.fs.user_data_dir.parent / "user-data.img"
    result, out = run(sandbox, "dd if=/dev/zero of=/mnt/user-data/workspace/big bs=1M count=2000 2>&1; "
                               "dd if=/dev/zero of=/mnt/user-data/outputs/more bs=1M count=10 2>&1", timeout=60)
    # Each write failed as soon as the thread's own file system was full: nothing to stop, nothing past it.
    assert out.count("No space left on device") == 2, out
    assert "this thread's disk is full" in result.limit_message and "hard limit" in result.limit_message
    assert (sandbox.fs.host_dir("workspace") / "big").stat().st_size <= 8 * 1024 * 1024
    # The host paid for the image only, never more than its size.
    assert image.stat().st_size == 8 * 1024 * 1024 and image.stat().st_blocks * 512 <= 8 * 1024 * 1024
    with pytest.raises(SandboxError):
        sandbox.write_file("/mnt/user-data/outputs/note.txt", "x" * (2 * 1024 * 1024))
    result, out = run(sandbox, "rm big /mnt/user-data/outputs/more; echo ok > kept.txt; cat kept.txt")
    assert out == "ok\n"
    assert result.limit_message is None


def test_the_thread_disk_outlives_its_container_grows_and_goes_with_the_thread(make, home):
    # An upload made before the thread's first sandbox is on the host folder: it moves into the image.
    early = home / "users" / "gina" / "threads" / "thread-disk" / "user-data" / "uploads" / "early.csv"
    early.parent.mkdir(parents=True)
    early.write_text("a,b\n")
    provider = make(thread_quota_mb=8)
    sandbox = sandbox_of(provider, "gina", "thread-disk")
    user_data = sandbox.fs.user_data_dir
    assert disk.mounted_device(user_data) is not None
    _, out = run(sandbox, "cat /mnt/user-data/uploads/early.csv; echo kept > notes.txt")
    assert out == "a,b\n"
    provider.forget(sandbox, provider.container_for(sandbox))
    disk.unmount(user_data)  # as a reboot would
    assert not any(user_data.iterdir())  # everything is in the image, nothing left under it on the host
    # A bigger quota: the same image, grown; the files are there for the fresh container.
    bigger = make(thread_quota_mb=32)
    sandbox = sandbox_of(bigger, "gina", "thread-disk")
    _, out = run(sandbox, "cat notes.txt; df -m --output=size /mnt/user-data/workspace | tail -1")
    assert out.startswith("kept\n") and int(out.split()[-1]) > 16
    name = bigger.container_for(sandbox)
    # Deleting the thread removes its container, unmounts its disk and frees the loop device.
    set_sandbox_provider(bigger)
    try:
        sandbox_thread_deleted("gina", "thread-disk")
    finally:
        set_sandbox_provider(None)
    assert name not in container_engine.listed_containers()
    assert disk.mounted_device(user_data) is None and not (user_data.parent / "user-data.img").exists()
    # A disk whose image was deleted behind the server's back is unmounted at the next start.
    orphan = sandbox_of(make(thread_quota_mb=8), "gina", "thread-orphan")
    (orphan.fs.user_data_dir.parent / "user-data.img").unlink()
    assert disk.mounted_device(orphan.fs.user_data_dir) is not None
    make(thread_quota_mb=8)
    assert disk.mounted_device(orphan.fs.user_data_dir) is None


def test_extra_mounts_reach_commands_and_file_tools(make, tmp_path):
    reference, scratch = tmp_path / "reference", tmp_path / "scratch"
    reference.mkdir()
    scratch.mkdir()
    (reference / "facts.txt").write_text("the sky is blue\n")
    sandbox = sandbox_of(make(mounts=[{"host_path": str(reference), "container_path": "/data/reference", "read_only": True},
                                      {"host_path": str(scratch), "container_path": "/data/scratch"}]))
    assert sandbox.read_file("/data/reference/facts.txt") == "the sky is blue\n"
    with pytest.raises(SandboxError, match="read-only mount"):
        sandbox.write_file("/data/reference/new.txt", "no")
    sandbox.write_file("/data/scratch/from-tool.txt", "written by write_file\n")
    entries, _ = sandbox.list_dir("/data/scratch")
    assert [e.path for e in entries] == ["/data/scratch/from-tool.txt"]
    _, out = run(sandbox, "cat /data/reference/facts.txt /data/scratch/from-tool.txt; touch /data/reference/x 2>&1")
    assert "the sky is blue\nwritten by write_file\n" in out and "Read-only file system" in out
    assert not (reference / "x").exists()


FETCH = ("python -c \"import sys, urllib.request\n"
         "try:\n    print(urllib.request.urlopen(sys.argv[1], timeout=20).read().decode())\n"
         "except Exception as e:\n    print('refused', getattr(e, 'code', ''), getattr(e, 'read', lambda: b'')().decode())\" ")


def test_network_goes_out_through_the_ssrf_guard_only(make):
    # 127.0.0.2: a host loopback address the container's own (localhost, 127.0.0.1) does not shadow.
    with FakeWeb(host="127.0.0.2") as site:
        opened = make(allow_network=True, allowed_private_networks=["127.0.0.2/32", "169.254.0.0/16"])
        sandbox = sandbox_of(opened)
        _, out = run(sandbox, f"{FETCH}{site.base}/article | grep -o '<h1>.*</h1>'")
        assert out.strip() == "<h1>Rainfall in Lisbon</h1>"
        # A server the agent runs in its container is reached on localhost, not through the guard.
        _, out = run(sandbox, "python -m http.server 8765 --bind 127.0.0.1 >/dev/null 2>&1 & "
                              "for i in $(seq 50); do python -c 'import socket; socket.create_connection((\"127.0.0.1\", 8765))' "
                              "2>/dev/null && break; sleep 0.2; done; " + FETCH + "http://localhost:8765/ | head -c 40")
        assert out.startswith("<!DOCTYPE HTML")
        # Metadata stays shut whatever is allowed; without the proxy there is no route at all.
        _, out = run(sandbox, FETCH + "http://169.254.169.254/latest/meta-data/")
        assert out.startswith("refused 403") and "metadata" in out
        _, out = run(sandbox, f"env -u http_proxy -u HTTP_PROXY {FETCH}{site.base}/article")
        assert out.startswith("refused") and "Lisbon" not in out
        opened.shutdown()
        closed = sandbox_of(make(allow_network=True), "bob", "thread-closed")
        _, out = run(closed, f"{FETCH}{site.base}/article")
        assert out.startswith("refused 403") and "loopback" in out
        assert site.hits("/article") == 1
