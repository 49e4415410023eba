"""Fixtures to drive the channel manager end to end: real runs through ``start_run()`` on the
scripted agent (``scripted_agent`` sets its answers), a manager wired to an adapter.

Adapter authors: build your adapter against a fake platform server, then
``manager, adapter = make_manager(MyAdapter, adapter_settings={...})`` and deliver traffic
through the server; ``await manager.idle()`` waits for the turns to finish.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from apps.runs.graphs import clear_graph_cache
from tests.support import agents
from tests.support.channels import ChannelKit, FakeAdapter, make_manager, make_settings


@pytest.fixture
def scripted_lead(settings):
    """The real lead agent (present_files, uploads middleware, ...) around the scripted model."""
    settings.DEERFLOW_AGENT_FACTORY = "tests.support.agents:make_scripted_lead_agent"

    def set_script(*items, loop=False):
        clear_graph_cache()
        return agents.set_script(*items, loop=loop)

    yield set_script
    clear_graph_cache()


@pytest.fixture
async def channel_kit():
    """A manager and a FakeAdapter; every turn is finished (or cancelled) when the test ends."""
    manager, adapter = make_manager(FakeAdapter, make_settings("fake"))
    kit = ChannelKit(manager=manager, adapter=adapter)
    yield kit
    await manager.close()


@pytest.fixture
def channels_config(tmp_path, monkeypatch):
    """Write config.yaml with the suite's model plus a ``channels:`` section: either the whole
    section (``write({...})``) or providers by name (``write(feishu={...})``: each enabled, with
    ``channels.enabled: true``)."""
    from pathlib import Path

    import yaml

    base = yaml.safe_load((Path(__file__).resolve().parents[2] / "fixtures" / "config.yaml").read_text())

    def write(channels: dict | None = None, **providers) -> Path:
        if channels is None:
            channels = {"enabled": True, **{name: {"enabled": True, **section} for name, section in providers.items()}}
        path = tmp_path / "config.yaml"
        path.write_text(yaml.safe_dump({**base, "channels": channels}))
        monkeypatch.setenv("DEER_FLOW_CONFIG_PATH", str(path))
        return path

    return write


@pytest.fixture
async def channel_layer():
    """The in-memory channel layer, emptied so a previous test's loop-bound queues are gone."""
    from channels.layers import get_channel_layer

    layer = get_channel_layer()
    await layer.flush()
    yield layer
    await layer.flush()


@pytest.fixture
def platform_config(tmp_path, monkeypatch):
    """For the Slack and GitHub tests: write ``channels`` (and the SSRF guard opened to loopback, where the fake platforms
    serve) into a copy of the suite's config; returns a function to rewrite it."""
    base = yaml.safe_load(Path(os.environ["DEER_FLOW_CONFIG_PATH"]).read_text())
    path = tmp_path / "config-channels.yaml"

    def write(**providers):
        data = {**base, "web": {"allowed_private_networks": ["127.0.0.0/8"]},
                "channels": {"enabled": providers.pop("enabled", True), **providers}}
        path.write_text(yaml.safe_dump(data))
        return path

    monkeypatch.setenv("DEER_FLOW_CONFIG_PATH", str(path))
    write()
    return write


@pytest.fixture
def gated_agent(settings):
    """Like ``scripted_agent``, with a ``wait_for_gate`` tool: call ``gate.set()`` to let a run
    that is waiting on it finish."""
    from tests.support import channel_gate

    settings.DEERFLOW_AGENT_FACTORY = "tests.support.channel_gate:make_gated_agent"
    channel_gate.GATE.clear()

    def set_script(*items, loop=False):
        clear_graph_cache()
        return agents.set_script(*items, loop=loop)

    yield set_script, channel_gate.GATE
    channel_gate.GATE.set()
    clear_graph_cache()


@pytest.fixture
def hosted_channels():
    """The web process's webhook host, closed after the test (its turns run on the runs loop).
    Each test starts as a new installation: the deliveries earlier tests claimed (their fake
    platforms count message ids from the same start) are forgotten."""
    import shutil

    from apps.channels import hosting
    from harness.config.paths import deer_flow_home

    shutil.rmtree(deer_flow_home() / "channels" / "deliveries", ignore_errors=True)
    yield hosting
    hosting.call(hosting.close_all, timeout=60)
