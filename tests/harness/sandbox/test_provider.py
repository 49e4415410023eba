"""Provider lifecycle and the process-wide provider chosen from config.yaml."""

from __future__ import annotations

import logging

import pytest

from harness.config import reset_config_cache, thread_user_data_dir
from harness.config.app_config import AppConfig, SandboxConfig
from harness.sandbox import SandboxUnavailable, build_sandbox_provider, get_sandbox_provider, reset_sandbox_provider
from harness.sandbox.bwrap import BwrapSandboxProvider
from harness.sandbox.local import LocalSandboxProvider
from tests.harness.sandbox.conftest import requires_bwrap


class CustomProvider(LocalSandboxProvider):
    """Stands in for an operator's own provider named by class path."""


class NotAProvider:
    pass


def test_acquire_creates_the_thread_directories(home, skills_dir):
    provider = LocalSandboxProvider(skills_dir=skills_dir)
    sandbox_id = provider.acquire("alice", "t1")
    assert sandbox_id == "local:alice:t1"
    for name in ("workspace", "uploads", "outputs"):
        assert (thread_user_data_dir("alice", "t1") / name).is_dir()
    assert provider.acquire("alice", "t1") == sandbox_id
    sandbox = provider.get(sandbox_id)
    assert (sandbox.user_id, sandbox.thread_id) == ("alice", "t1")
    assert provider.get(sandbox_id) is sandbox


@pytest.mark.parametrize("user, thread", [("alice", "../etc"), ("../bob", "t"), ("alice", ""), ("a b", "t")])
def test_acquire_rejects_unsafe_ids(home, user, thread):
    with pytest.raises(ValueError):
        LocalSandboxProvider().acquire(user, thread)


def test_lru_is_bounded_and_evicted_sandboxes_come_back(home):
    provider = LocalSandboxProvider(SandboxConfig(cache_size=2))
    ids = [provider.acquire("alice", f"t{i}") for i in range(3)]
    assert provider.cached_ids() == ids[1:]
    revived = provider.get(ids[0])
    assert revived is not None and revived.thread_id == "t0"
    assert len(provider.cached_ids()) == 2


def test_get_unknown_and_release(home):
    provider = LocalSandboxProvider()
    assert provider.get("nonsense") is None
    assert provider.get("bwrap:alice:t1") is None  # another provider's id
    assert provider.get("local:../x:t1") is None
    assert provider.get("local:mallory:never-acquired") is None
    assert not thread_user_data_dir("mallory", "never-acquired").exists()
    sandbox_id = provider.acquire("alice", "t1")
    provider.get(sandbox_id).write_file("keep.txt", "kept")
    provider.release(sandbox_id)
    assert sandbox_id not in provider.cached_ids()
    assert provider.get(provider.acquire("alice", "t1")).read_file("keep.txt") == "kept"


async def test_aacquire(home):
    provider = LocalSandboxProvider()
    sandbox_id = await provider.aacquire("alice", "t-async")
    assert provider.get(sandbox_id).thread_id == "t-async"


def test_explicit_choices(home):
    assert type(build_sandbox_provider(AppConfig(sandbox={"use": "local"}))) is LocalSandboxProvider
    custom = build_sandbox_provider(AppConfig(sandbox={"use": "tests.harness.sandbox.test_provider:CustomProvider"}))
    assert type(custom) is CustomProvider
    with pytest.raises(SandboxUnavailable, match="not a SandboxProvider"):
        build_sandbox_provider(AppConfig(sandbox={"use": "tests.harness.sandbox.test_provider:NotAProvider"}))


@requires_bwrap
def test_default_is_bwrap_where_it_works(home):
    assert type(build_sandbox_provider(AppConfig())) is BwrapSandboxProvider
    assert type(build_sandbox_provider(AppConfig(sandbox={"use": "bwrap"}))) is BwrapSandboxProvider


def test_without_bwrap_default_falls_back_with_one_warning(home, tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    with caplog.at_level(logging.WARNING, logger="harness.sandbox"):
        provider = build_sandbox_provider(AppConfig())
    assert type(provider) is LocalSandboxProvider
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "WITHOUT isolation" in warnings[0].getMessage() and "bubblewrap" in warnings[0].getMessage()
    with pytest.raises(SandboxUnavailable, match="not installed"):
        build_sandbox_provider(AppConfig(sandbox={"use": "bwrap"}))


def test_process_wide_provider_follows_config_file(home, tmp_path, monkeypatch):
    config = tmp_path / "config.yaml"
    config.write_text("sandbox:\n  use: local\n  cache_size: 7\n")
    monkeypatch.setenv("DEER_FLOW_CONFIG_PATH", str(config))
    reset_config_cache()
    reset_sandbox_provider()
    try:
        provider = get_sandbox_provider()
        assert type(provider) is LocalSandboxProvider and provider.cache_size == 7
        assert get_sandbox_provider() is provider
    finally:
        reset_sandbox_provider()
        reset_config_cache()
