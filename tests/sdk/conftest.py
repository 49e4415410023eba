import pytest

from harness.testing import LoopbackOpenAIServer
from tests.support.live import start_live_server

CONFIG = """\
config_version: 1
models:
  - name: loopback
    display_name: Loopback model
    use: langchain_openai:ChatOpenAI
    model: test-model
    base_url: {base_url}
    api_key: test-key
    max_retries: 0
    timeout: 30
    context_window: 32000
sandbox:
  use: local
  bash_command_timeout: 30
"""


@pytest.fixture(scope="session")
def model_server():
    with LoopbackOpenAIServer() as server:
        yield server


@pytest.fixture(scope="session")
def live(tmp_path_factory, model_server):
    server = start_live_server(tmp_path_factory.mktemp("live-home"), config_text=CONFIG.format(base_url=model_server.base_url))
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
