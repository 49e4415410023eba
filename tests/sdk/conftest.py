import pytest

from harness.testing import LoopbackOpenAIServer, loopback_config_text
from tests.support.live import start_live_server

LOCAL_SANDBOX = "sandbox:\n  use: local\n  bash_command_timeout: 30\n"



@pytest.fixture(scope="session")
def model_server():
    with LoopbackOpenAIServer() as server:
        yield server


@pytest.fixture(scope="session")
def live(tmp_path_factory, model_server):
    server = start_live_server(tmp_path_factory.mktemp("live-home"), config_text=loopback_config_text(model_server.base_url, timeout=30, extra_yaml=LOCAL_SANDBOX))
    yield server
    server.stop()


@pytest.fixture
def script(model_server):
    """Replace what the model will answer, for this test only."""

    yield model_server.reset
    model_server.reset()


@pytest.fixture(scope="session")
def token(live):
    return live.create_user_token("sdk-user")


@pytest.fixture
def sdk(live, token):
    from langgraph_sdk import get_sync_client

    return get_sync_client(url=f"{live.url}/api", headers={"Authorization": f"Bearer {token}"})
