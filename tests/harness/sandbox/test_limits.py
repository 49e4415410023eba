"""Per-command memory, process and open-file limits, on both providers, with the tool's words.

Each test also runs with the limit turned off (0) and checks the command then succeeds, so a
test cannot pass because the machine refuses the work on its own.
"""

from __future__ import annotations

import resource

import pytest

from harness.sandbox.limits import cgroup_controllers
from harness.tools.sandbox_tools import format_command_result
from tests.harness.sandbox.conftest import make_provider

ALLOCATE = "python3 -c 'b = bytearray({mb} * 1024 * 1024); b[::4096] = b\"x\" * len(b[::4096]); print(\"allocated\")'"


def _sandbox(kind, skills_dir, name, **config):
    provider = make_provider(kind, skills_dir, bash_command_timeout=60, **config)
    return provider.get(provider.acquire("alice", name))


def _tool_text(sandbox, command):
    result = sandbox.execute_command(command)
    return result, format_command_result(result, {}, background_survives=sandbox.background_processes_survive)


def test_memory_limit_stops_a_large_allocation(provider_kind, home, skills_dir):
    limited = _sandbox(provider_kind, skills_dir, "t-mem", max_memory_mb=256)
    result, text = _tool_text(limited, ALLOCATE.format(mb=600))
    assert "allocated" not in text
    assert "256 MiB" in text and "sandbox.max_memory_mb" in text
    unlimited = _sandbox(provider_kind, skills_dir, "t-mem2", max_memory_mb=0)
    assert "allocated" in _tool_text(unlimited, ALLOCATE.format(mb=600))[1]


def test_memory_limit_bounds_the_whole_command_where_a_cgroup_exists(provider_kind, home, skills_dir):
    if "memory" not in cgroup_controllers():
        pytest.skip("no memory cgroup can be created here; only the per-process rlimit applies")
    # Three processes of 150 MiB each are each under the limit, together well over it.
    # Each holds its memory for a few seconds so the three overlap.
    hold = ("python3 -c 'import time; b = bytearray(150 * 1024 * 1024); b[::4096] = b\"x\" * len(b[::4096]); "
            "print(\"allocated\", flush=True); time.sleep(5)'")
    command = " & ".join([hold] * 3) + " & wait"
    limited = _sandbox(provider_kind, skills_dir, "t-memtree", max_memory_mb=256)
    result, text = _tool_text(limited, command)
    assert "killed because it used more than 256 MiB" in text
    assert "Killed" in text  # the kernel's OOM killer ended one of them
    unlimited = _sandbox(provider_kind, skills_dir, "t-memtree2", max_memory_mb=0)
    text = _tool_text(unlimited, command)[1]
    assert text.splitlines().count("allocated") == 3 and "Killed" not in text


# Forks 100 children that wait on a pipe the parent closes once it has stopped forking, so all
# are alive together without a timed sleep. Python, not a bash loop: bash retries a failed fork
# for about 15 s before it gives up, which is bash's back-off, not the sandbox's behaviour.
FORK_MANY = ("python3 -c 'import os\nr, w = os.pipe()\nstarted = 0\ntry:\n    for _ in range(100):\n"
             "        if os.fork() == 0:\n            os.close(w); os.read(r, 1); os._exit(0)\n        started += 1\n"
             "except OSError as error:\n    print(error)\nprint(f\"started={started}\", flush=True)\nos.close(w)\n"
             "for _ in range(started):\n    os.wait()'")


def test_process_limit(provider_kind, home, skills_dir):
    limited = _sandbox(provider_kind, skills_dir, "t-proc", max_processes=30)
    result, text = _tool_text(limited, FORK_MANY)
    assert int(text.split("started=")[1].split()[0]) < 30
    assert "Resource temporarily unavailable" in text
    assert "sandbox.max_processes" in text and "30 processes" in text
    unlimited = _sandbox(provider_kind, skills_dir, "t-proc2", max_processes=0)
    assert "started=100" in _tool_text(unlimited, FORK_MANY)[1]


def test_open_files_limit(provider_kind, home, skills_dir):
    command = ("python3 -c 'import os\nfds=[]\ntry:\n    [fds.append(os.open(\"/dev/null\", os.O_RDONLY)) for _ in range(500)]\n"
               "    print(\"opened\", len(fds))\nexcept OSError as e:\n    print(\"opened\", len(fds), e); raise'")
    limited = _sandbox(provider_kind, skills_dir, "t-fd", max_open_files=64)
    result, text = _tool_text(limited, command)
    opened = int(text.split("opened ")[1].split()[0])
    assert opened < 64
    assert "Too many open files" in text and "sandbox.max_open_files" in text and "64" in text
    unlimited = _sandbox(provider_kind, skills_dir, "t-fd2", max_open_files=0)
    assert "opened 500" in _tool_text(unlimited, command)[1]


def test_limits_in_the_command_cannot_be_raised_in_bwrap(home, skills_dir):
    from tests.harness.sandbox.conftest import bwrap_skip_reason

    if bwrap_skip_reason():
        pytest.skip(bwrap_skip_reason())
    sandbox = _sandbox("bwrap", skills_dir, "t-raise", max_open_files=64)
    out = sandbox.execute_command("ulimit -n 4096 2>&1; ulimit -n").output.render()
    assert out.strip().splitlines()[-1] == "64"


def test_default_limits_are_set(provider_kind, home, skills_dir):
    sandbox = _sandbox(provider_kind, skills_dir, "t-defaults")
    out = sandbox.execute_command("ulimit -n; ulimit -d").output.render().split()
    assert out[0] == "1024"
    assert out[1] == str(2048 * 1024)  # ulimit -d is in KiB
    # The limits are the command's: the server process keeps its own.
    assert resource.getrlimit(resource.RLIMIT_DATA)[0] != 2048 * 1024 * 1024
    assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] != 1024


def test_bwrap_tmp_is_bounded_like_memory(home, skills_dir):
    from tests.harness.sandbox.conftest import bwrap_skip_reason

    if bwrap_skip_reason():
        pytest.skip(bwrap_skip_reason())
    command = "head -c 104857600 /dev/zero > /tmp/fill; echo rc=$?"
    small = _sandbox("bwrap", skills_dir, "t-tmp", max_memory_mb=64)
    _result, text = _tool_text(small, command)
    assert "rc=0" not in text
    # Where a memory cgroup exists the tmpfs pages are charged to it and the OOM killer
    # acts first; without one the tmpfs size stops the write.
    assert "No space left on device" in text or "killed because it used more than 64 MiB" in text
    big = _sandbox("bwrap", skills_dir, "t-tmp2", max_memory_mb=0)
    assert "rc=0" in _tool_text(big, command)[1]


@pytest.mark.parametrize("mode", ["dash", "sh+prlimit", "preexec"])
def test_every_way_of_applying_limits_gives_the_same_limits(provider_kind, home, skills_dir, monkeypatch, mode):
    import harness.sandbox.limits as limits_module

    if mode != "dash":
        monkeypatch.setattr(limits_module, "_DASH", None)
    if mode == "preexec":
        monkeypatch.setattr(limits_module, "_PRLIMIT", None)
    elif limits_module._DASH is None and mode == "dash" or limits_module._PRLIMIT is None and mode == "sh+prlimit":
        pytest.skip(f"{mode} is not installed here")
    sandbox = _sandbox(provider_kind, skills_dir, f"t-mode-{mode.replace('+', '-')}", max_open_files=64,
                       max_memory_mb=300, thread_quota_mb=5)
    out = sandbox.execute_command("ulimit -S -n; ulimit -H -n; ulimit -d; ulimit -f; cat /proc/self/cgroup 2>/dev/null "
                                  "| grep -c deerflow-sandbox").output.render().split()
    assert out[:3] == ["64", "64", str(300 * 1024)]
    assert 0 < int(out[3]) <= 5 * 1024  # bash reports 1024-byte blocks: the space left under the quota
    if provider_kind == "local" and cgroup_controllers():
        assert int(out[4]) == len(cgroup_controllers())  # inside bwrap /proc/self/cgroup is namespaced
