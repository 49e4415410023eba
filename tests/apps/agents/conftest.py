from __future__ import annotations

import pytest
import yaml

from apps.runs.graphs import clear_graph_cache
from harness.testing import LoopbackOpenAIServer
from tests.support import agents


@pytest.fixture(scope="module")
def loopback():
    with LoopbackOpenAIServer() as server:
        yield server


def _config(base_url: str) -> dict:
    model = {"use": "langchain_openai:ChatOpenAI", "base_url": base_url, "api_key": "test-key", "max_retries": 0,
             "timeout": 20, "context_window": 32000}
    return {
        "config_version": 1,
        "models": [{"name": "basic", "display_name": "Basic", "model": "basic-model", **model},
                   {"name": "analyst-model", "display_name": "Analyst", "model": "analyst-provider-model", **model}],
        "tool_groups": [{"name": "notes"}, {"name": "waits"}],
        "tools": [{"name": "progress", "group": "notes", "use": "tests.support.agents:progress"},
                  {"name": "slow", "group": "waits", "use": "tests.support.agents:slow"}],
        "sandbox": {"use": None},
        "memory": {"enabled": True, "debounce_seconds": 3600, "max_injection_tokens": 2000},
        "title": {"enabled": False},
    }


@pytest.fixture
def agents_config(tmp_path, monkeypatch, settings, loopback):
    """Two models on a loopback OpenAI server, two tool groups, memory on; the real lead agent."""
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(_config(loopback.base_url)))
    monkeypatch.setenv("DEER_FLOW_CONFIG_PATH", str(path))
    settings.DEERFLOW_AGENT_FACTORY = "harness.agents.lead_agent:make_lead_agent"
    import apps.memory.updates as updates

    monkeypatch.setattr(updates, "_queue", None)
    loopback.reset()
    clear_graph_cache()
    yield loopback
    clear_graph_cache()


@pytest.fixture
def scripted_lead(agents_config, settings):
    """The real lead agent around the scripted model (for tool-calling conversations)."""
    settings.DEERFLOW_AGENT_FACTORY = "tests.support.agents:make_scripted_lead_agent"

    def set_script(*items):
        clear_graph_cache()
        return agents.set_script(*items)

    return set_script
