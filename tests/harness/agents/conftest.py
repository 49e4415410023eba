"""Helpers for agent tests: a lead agent around a scripted model, with a real checkpointer
(tests/support/lead_agent.py; imported from here by the tests that used to find it here)."""

import pytest

from tests.support.lead_agent import BASE_CONFIG, AgentHarness, app_config

__all__ = ["BASE_CONFIG", "AgentHarness", "agent_factory", "app_config"]


@pytest.fixture
def agent_factory():
    return AgentHarness
