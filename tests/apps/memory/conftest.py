from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from apps.runs.graphs import clear_graph_cache
from harness.testing import ScriptedChatModel
from tests.support import agents

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "config.yaml"
# The updater's model (DEERFLOW_MEMORY_MODEL_FACTORY points here); tests set its script.
UPDATER = ScriptedChatModel(script=["{}"], loop=True)


def updater_model():
    return UPDATER


@pytest.fixture
def memory_on(tmp_path, monkeypatch, settings):
    """Memory enabled (debounce far away: tests flush the queue), the real lead agent."""
    base = yaml.safe_load(FIXTURE.read_text())
    base["memory"] = {"enabled": True, "debounce_seconds": 3600, "max_injection_tokens": 2000}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(base))
    monkeypatch.setenv("DEER_FLOW_CONFIG_PATH", str(path))
    settings.DEERFLOW_AGENT_FACTORY = "tests.support.agents:make_scripted_lead_agent"
    settings.DEERFLOW_MEMORY_MODEL_FACTORY = "tests.apps.memory.conftest:updater_model"
    import apps.memory.updates as updates

    monkeypatch.setattr(updates, "_queue", None)  # a queue with this config's delay
    clear_graph_cache()
    yield path
    clear_graph_cache()


def set_updater(*items) -> ScriptedChatModel:
    global UPDATER
    UPDATER = ScriptedChatModel(script=list(items))
    return UPDATER


def set_agent(*items) -> ScriptedChatModel:
    clear_graph_cache()
    return agents.set_script(*items)
