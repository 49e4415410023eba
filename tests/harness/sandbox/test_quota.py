"""Disk quota on a thread's writable folders, per thread and per user, on both providers.

The quotas here are small (tens of MiB) so the tests write little; the mechanism does not
depend on the size. "The disk is untouched beyond the quota" is checked by measuring what the
thread's folders hold on disk afterwards, with the same allowance docs/sandbox.md promises.
"""

from __future__ import annotations

import pytest
from langchain.tools import ToolRuntime

from harness.sandbox import set_sandbox_provider
from harness.sandbox.quota import forget_measurements, tree_usage
from harness.tools.sandbox_tools import format_command_result, write_file_tool
from tests.harness.sandbox.conftest import make_provider

MIB = 1024 * 1024
# What a command may write past the quota before the watcher stops it (docs/sandbox.md):
# a few MiB typically, more when the machine is so loaded that the watcher runs late.
OVERSHOOT = 128 * MIB


@pytest.fixture(autouse=True)
def _fresh_measurements():
    forget_measurements()
    yield
    forget_measurements()


def _setup(kind, skills_dir, thread="t-quota", **config):
    config.setdefault("thread_quota_mb", 32)
    provider = make_provider(kind, skills_dir, bash_command_timeout=120, **config)
    return provider, provider.get(provider.acquire("alice", thread))


def _used(sandbox) -> int:
    return sum(tree_usage(sandbox.fs.host_dir(n)) for n in ("workspace", "uploads", "outputs"))


def _bash(sandbox, command):
    result = sandbox.execute_command(command)
    return format_command_result(result, {}, background_survives=sandbox.background_processes_survive)


def test_many_files_past_the_quota_stop_the_command(provider_kind, home, skills_dir):
    _p, sandbox = _setup(provider_kind, skills_dir)
    # Each file is below the quota, so only the watcher (not RLIMIT_FSIZE) can stop this.
    text = _bash(sandbox, "for i in $(seq 1 200); do head -c 4194304 /dev/zero > f$i.bin || exit 9; done; echo finished")
    assert "finished" not in text
    assert "disk quota of 32.0 MiB" in text and "sandbox.thread_quota_mb" in text
    assert _used(sandbox) <= 32 * MIB + OVERSHOOT


@pytest.mark.parametrize("command", [
    "head -c 209715200 /dev/zero > big.bin; echo rc=$?",
    "fallocate -l 200M big.bin; echo rc=$?",
    "mkdir -p ../outputs/x && dd if=/dev/zero of=../outputs/x/big bs=1M count=200 2>&1; echo rc=$?",
])
def test_one_big_file_cannot_pass_the_quota(provider_kind, home, skills_dir, command):
    _p, sandbox = _setup(provider_kind, skills_dir)
    text = _bash(sandbox, command)
    assert "rc=0" not in text
    assert "disk quota" in text
    # The file stops at the quota; a directory made by the command adds its few KiB.
    assert _used(sandbox) <= 32 * MIB + 64 * 1024


def test_without_a_quota_the_same_command_succeeds(provider_kind, home, skills_dir):
    _p, sandbox = _setup(provider_kind, skills_dir, thread_quota_mb=0, user_quota_mb=0)
    text = _bash(sandbox, "fallocate -l 200M big.bin; echo rc=$?; rm big.bin")
    assert "rc=0" in text and "quota" not in text


def test_over_quota_thread_can_still_delete(provider_kind, home, skills_dir):
    _p, sandbox = _setup(provider_kind, skills_dir)
    _bash(sandbox, "for i in $(seq 1 200); do head -c 4194304 /dev/zero > f$i.bin || exit 9; done")
    text = _bash(sandbox, "rm -f f*.bin; echo cleaned")
    assert "cleaned" in text and "quota" not in text
    assert "rc=0" in _bash(sandbox, "head -c 1048576 /dev/zero > small.bin; echo rc=$?")


def test_user_quota_spans_threads(provider_kind, home, skills_dir):
    provider, first = _setup(provider_kind, skills_dir, thread="t-a", thread_quota_mb=40, user_quota_mb=48)
    assert "rc=0" in _bash(first, "head -c 31457280 /dev/zero > a.bin; echo rc=$?")  # 30 MiB
    second = provider.get(provider.acquire("alice", "t-b"))
    text = _bash(second, "head -c 31457280 /dev/zero > b.bin; echo rc=$?")
    assert "rc=0" not in text and "all threads" in text and "sandbox.user_quota_mb" in text
    # Another user is not affected.
    other = provider.get(provider.acquire("bob", "t-c"))
    assert "rc=0" in _bash(other, "head -c 31457280 /dev/zero > c.bin; echo rc=$?")


def test_write_file_tool_refuses_past_the_quota(provider_kind, home, skills_dir):
    provider, sandbox = _setup(provider_kind, skills_dir, thread_quota_mb=1)
    set_sandbox_provider(provider)
    runtime = ToolRuntime(state={}, context={"user_id": "alice", "thread_id": "t-quota"}, config={},
                          stream_writer=lambda _: None, tool_call_id="t", store=None)
    ok = write_file_tool.func(description="d", path="/mnt/user-data/outputs/a.txt", content="x" * 1000, runtime=runtime)
    assert ok.startswith("Wrote")
    refused = write_file_tool.func(description="d", path="/mnt/user-data/outputs/b.txt", content="y" * (2 * MIB),
                                   runtime=runtime)
    assert refused.startswith("Error:") and "disk quota of 1.0 MiB" in refused
    assert not (sandbox.fs.host_dir("outputs") / "b.txt").exists()
    # Overwriting a file with content of the same size needs no new space.
    again = write_file_tool.func(description="d", path="/mnt/user-data/outputs/a.txt", content="z" * 1000, runtime=runtime)
    assert again.startswith("Wrote")
    set_sandbox_provider(None)


def test_usage_is_reported(provider_kind, home, skills_dir):
    _p, sandbox = _setup(provider_kind, skills_dir, thread_quota_mb=32, user_quota_mb=64)
    _bash(sandbox, "head -c 5242880 /dev/urandom > r.bin")
    usage = sandbox.policy.quota.usage()
    assert 5 * MIB <= usage.thread_bytes <= 6 * MIB
    assert usage.thread_limit == 32 * MIB and usage.user_limit == 64 * MIB
    assert usage.user_bytes >= usage.thread_bytes
