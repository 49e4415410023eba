"""Fixtures: a private DEER_FLOW_HOME and skills directory, and each provider in turn.

Tests that take ``provider`` run once on the local provider and once on the bubblewrap
provider; the bubblewrap run skips with the probe's reason where bwrap cannot run.
"""

from __future__ import annotations

import threading

import pytest

from harness.config.app_config import SandboxConfig
from harness.sandbox import reset_sandbox_provider, set_sandbox_provider
from harness.sandbox.bwrap import BwrapSandboxProvider, probe_bwrap
from harness.sandbox.container import ContainerSandboxProvider
from harness.sandbox.local import LocalSandboxProvider
from harness.sandbox.output import OutputCapture
from harness.sandbox.ownership import MemoryOwnershipStore
from tests.support import container_engine

PROVIDERS = {"local": LocalSandboxProvider, "bwrap": BwrapSandboxProvider, "container": ContainerSandboxProvider}


def bwrap_skip_reason() -> str | None:
    ok, reason = probe_bwrap()
    return None if ok else f"bubblewrap cannot run here: {reason}"


requires_bwrap = pytest.mark.skipif(bwrap_skip_reason() is not None, reason=bwrap_skip_reason() or "")


@pytest.fixture
def home(tmp_path, monkeypatch):
    data = tmp_path / "home"
    data.mkdir()
    monkeypatch.setenv("DEER_FLOW_HOME", str(data))
    return data


@pytest.fixture
def skills_dir(tmp_path):
    skills = tmp_path / "skills"
    (skills / "public" / "demo").mkdir(parents=True)
    (skills / "public" / "demo" / "SKILL.md").write_text("---\nname: demo\n---\nDemo skill.\n")
    return skills


def make_provider(kind: str, skills_dir, store=None, **config) -> LocalSandboxProvider:
    if kind == "bwrap":
        reason = bwrap_skip_reason()
        if reason:
            pytest.skip(reason)
    if kind == "container":
        url, image = container_engine.engine()
        config = {"use": "container", "engine_url": url, "image": image, "replicas": 0,
                  "container_prefix": container_engine.PREFIX, **config}
        # The harness's own store unless a test shares one: these tests run without the database.
        return ContainerSandboxProvider(SandboxConfig(**config), skills_dir=skills_dir, store=store or MemoryOwnershipStore())
    return PROVIDERS[kind](SandboxConfig(**config), skills_dir=skills_dir)


@pytest.fixture
def clean_containers():
    """Remove every container the tests started, also when the test fails."""
    yield
    container_engine.remove_test_containers()


@pytest.fixture(params=["local", "bwrap"])
def provider_kind(request):
    return request.param


@pytest.fixture
def provider(provider_kind, home, skills_dir):
    p = make_provider(provider_kind, skills_dir, bash_command_timeout=20)
    set_sandbox_provider(p)
    yield p
    reset_sandbox_provider()


@pytest.fixture
def sandbox(provider):
    return provider.get(provider.acquire("alice", "thread-1"))


class LateReader(OutputCapture):
    """A capture whose first chunk arrives late, as when a busy machine leaves the reader
    thread unscheduled after the command exited: it waits until the caller freezes the
    capture, or for ``first_wait`` seconds when the caller waits for the reader as it should."""

    first_wait = 1.0

    def __init__(self, limit):
        super().__init__(limit)
        self.frozen = threading.Event()
        self.first = True

    def feed(self, data, final=False):
        if self.first:
            self.first = False
            self.frozen.wait(self.first_wait)
        super().feed(data, final)

    def close(self):
        self.frozen.set()
        return super().close()
