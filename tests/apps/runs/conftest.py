import pytest

from apps.runs.graphs import clear_graph_cache
from tests.support import agents


@pytest.fixture
def scripted_agent(settings):
    """Set what the test agent's model answers; compiled graphs are cached, so start afresh."""
    settings.DEERFLOW_AGENT_FACTORY = "tests.support.agents:make_scripted_agent"

    def set_script(*items, loop=False):
        clear_graph_cache()
        return agents.set_script(*items, loop=loop)

    yield set_script
    clear_graph_cache()
