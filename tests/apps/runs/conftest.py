import pytest

from tests.support import agents


@pytest.fixture
def scripted_agent(settings):
    settings.DEERFLOW_AGENT_FACTORY = "tests.support.agents:make_scripted_agent"
    return agents.set_script
