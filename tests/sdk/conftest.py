import os

import pytest

from harness.testing import loopback_config_text
from tests.support.live import start_live_server

LOCAL_SANDBOX = "sandbox:\n  use: local\n  bash_command_timeout: 30\nsubagents:\n  enabled: true\n"



# db_tier on the distributed stack only: its handoffs between processes (leases, row locks,
# the run events another server reads) are what PostgreSQL changes; the embedded stack's
# runs are the first tier's.
@pytest.fixture(scope="session", params=["embedded", pytest.param("distributed", marks=[pytest.mark.redis, pytest.mark.db_tier])])
def live(request, tmp_path_factory, model_server):
    """Every SDK test runs on the embedded stack and again on the distributed one: two Daphne
    servers and a Celery worker sharing the database, run events carried by Redis Streams."""
    config = loopback_config_text(model_server.base_url, timeout=30, extra_yaml=LOCAL_SANDBOX)
    if request.param == "embedded":
        server = start_live_server(tmp_path_factory.mktemp("live-home"), config_text=config)
    else:
        redis_url = os.environ["DEERFLOW_TEST_REDIS_URL"]
        env = {"RUN_EXECUTOR": "celery", "REDIS_URL": redis_url, "CELERY_BROKER_URL": redis_url}
        server = start_live_server(tmp_path_factory.mktemp("live-distributed"), config_text=config, extra_env=env, servers=2, celery_workers=1)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def token(live):
    return live.create_user_token("sdk-user")


@pytest.fixture
def sdk(live, token):
    from langgraph_sdk import get_sync_client

    return get_sync_client(url=f"{live.url}/api", headers={"Authorization": f"Bearer {token}"})
