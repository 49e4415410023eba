"""A live server whose config gates risky bash commands and checks budgets; the official
langgraph-sdk and plain HTTP against it. Its model is the session's loopback server."""

import httpx
import pytest

from harness.testing import loopback_config_text
from tests.support.live import start_live_server

GOVERNANCE_YAML = """sandbox:
  use: local
  bash_command_timeout: 30
approvals:
  user_rules: true
  rules:
    - name: risky-shell
      tool: bash
      match: "rm |curl|git push"
      action: ask
budgets:
  enabled: true
"""


@pytest.fixture(scope="module")
def live(tmp_path_factory, model_server):
    config = loopback_config_text(model_server.base_url, timeout=30, extra_yaml=GOVERNANCE_YAML)
    server = start_live_server(tmp_path_factory.mktemp("governance-home"), config_text=config)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def token(live):
    return live.create_user_token("gov-user")


@pytest.fixture(scope="module")
def staff_token(live):
    # Staff first: only a staff account's token may hold `admin`, which budgets need.
    live.shell("from apps.accounts.models import User; User.objects.update_or_create(username='gov-admin', defaults={'is_staff': True})")
    return live.create_user_token("gov-admin", scopes="threads:read threads:write runs:read runs:create runs:cancel admin")


@pytest.fixture
def sdk(live, token):
    from langgraph_sdk import get_sync_client

    return get_sync_client(url=f"{live.url}/api", headers={"Authorization": f"Bearer {token}"})


@pytest.fixture
def api(live, token):
    with httpx.Client(base_url=f"{live.url}/api", headers={"Authorization": f"Bearer {token}"}, timeout=30) as client:
        yield client


@pytest.fixture
def admin_api(live, staff_token):
    with httpx.Client(base_url=f"{live.url}/api", headers={"Authorization": f"Bearer {staff_token}"}, timeout=30) as client:
        yield client
