"""The admin-only MCP API: config round trip with masked secrets, 422 with the file left
alone, 403 for non-admins and for tokens, status and test connection against a real server."""

import json
import sys
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from apps.accounts.selectors import token_scopes_offered
from apps.accounts.services import token_create
from harness.mcp import reset_mcp

pytestmark = pytest.mark.django_db
SERVERS = str(Path(__file__).parents[2] / "harness" / "mcp" / "servers.py")


@pytest.fixture
def ext(tmp_path, monkeypatch):
    path = tmp_path / "extensions_config.json"
    path.write_text(json.dumps({
        "mcpServers": {"gh": {"type": "stdio", "command": "npx", "env": {"GITHUB_TOKEN": "ghp_literal", "GH_HOST": "github.com"}},
                       "hook": {"type": "http", "url": "https://mcp.example.org/mcp", "headers": {"Authorization": "$HOOK_AUTH"}}},
        "skills": {"pdf": {"enabled": False}},
    }))
    monkeypatch.setenv("DEER_FLOW_EXTENSIONS_CONFIG_PATH", str(path))
    reset_mcp()
    yield path
    reset_mcp()


@pytest.fixture
def admin_client(django_user_model):
    admin = django_user_model.objects.create_user(username="root", password="pw-root-123", is_staff=True)
    client = APIClient()
    client.force_login(admin)
    client.admin = admin
    return client


def test_get_masks_literal_secrets_but_shows_references(admin_client, ext):
    body = admin_client.get("/api/mcp/config").json()
    assert body["mcp_servers"]["gh"]["env"] == {"GITHUB_TOKEN": "********", "GH_HOST": "github.com"}
    assert body["mcp_servers"]["hook"]["headers"] == {"Authorization": "$HOOK_AUTH"}
    assert "ghp_literal" not in json.dumps(body)


def test_put_round_trip_keeps_masked_secrets_and_other_sections(admin_client, ext):
    servers = admin_client.get("/api/mcp/config").json()["mcp_servers"]
    servers["gh"]["description"] = "repositories"
    response = admin_client.put("/api/mcp/config", {"mcp_servers": servers}, format="json")
    assert response.status_code == 200, response.content
    stored = json.loads(ext.read_text())
    assert stored["mcpServers"]["gh"]["env"]["GITHUB_TOKEN"] == "ghp_literal"
    assert stored["mcpServers"]["gh"]["description"] == "repositories"
    assert stored["skills"] == {"pdf": {"enabled": False}}


@pytest.mark.parametrize("body, detail", [
    ({"mcp_servers": {"web": {"type": "sse"}}}, "mcp_servers.web: a sse server needs 'url'"),
    ({"mcp_servers": {"gh": {"command": "npx", "tools": {"deny": "x"}}}}, "mcp_servers.gh.tools.deny"),
    ({"mcp_servers": {"gh": {"command": "npx", "colour": "red"}}}, "mcp_servers.gh.colour: unknown key"),
    ({"servers": {}}, "mcp_servers:"),
])
def test_a_bad_put_is_422_naming_server_and_field_and_leaves_the_file(admin_client, ext, body, detail):
    before = ext.read_bytes()
    response = admin_client.put("/api/mcp/config", body, format="json")
    assert response.status_code == 422
    assert response.json()["detail"].startswith(detail)
    assert ext.read_bytes() == before


def test_invalid_json_is_refused_and_the_file_unchanged(admin_client, ext):
    before = ext.read_bytes()
    response = admin_client.generic("PUT", "/api/mcp/config", "{not json", content_type="application/json")
    assert response.status_code in (400, 422)
    assert ext.read_bytes() == before


def test_patch_toggles_one_server_validating_only_what_is_enabled(admin_client, ext):
    ext.write_text(json.dumps({"mcpServers": {"draft": {"enabled": False, "type": "http", "url": ""},
                                              "gh": {"command": "npx"}}}))
    assert admin_client.patch("/api/mcp/config", {"server_name": "gh", "enabled": False}, format="json").status_code == 200
    assert json.loads(ext.read_text())["mcpServers"]["gh"]["enabled"] is False
    before = ext.read_bytes()
    response = admin_client.patch("/api/mcp/config", {"server_name": "draft", "enabled": True}, format="json")
    assert response.status_code == 422 and response.json()["detail"].startswith("mcp_servers.draft: a http server needs 'url'")
    assert ext.read_bytes() == before
    assert admin_client.patch("/api/mcp/config", {"server_name": "nope", "enabled": True}, format="json").status_code == 404


@pytest.mark.parametrize("method, path", [("get", "/api/mcp/config"), ("put", "/api/mcp/config"), ("patch", "/api/mcp/config"),
                                          ("get", "/api/mcp/status"), ("post", "/api/mcp/servers/gh/test")])
def test_non_admins_and_tokens_are_refused(user, admin_client, ext, method, path):
    before = ext.read_bytes()
    client = APIClient()
    client.force_login(user)
    assert getattr(client, method)(path, {}, format="json").status_code == 403
    for owner in (user, admin_client.admin):
        token = token_create(owner=owner, name="t", scopes=token_scopes_offered(user=owner)).token  # the admin's has `admin`
        bearer = APIClient()
        bearer.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
        assert getattr(bearer, method)(path, {}, format="json").status_code == 403
    assert ext.read_bytes() == before


def test_status_and_test_connection_against_a_real_server(admin_client, ext):
    ext.write_text(json.dumps({"mcpServers": {"calc": {"command": sys.executable, "args": [SERVERS, "stdio"]},
                                              "broken": {"command": sys.executable, "args": [SERVERS, "stdio", "crash"]},
                                              "off": {"enabled": False, "command": "x"}}}))
    status = {s["name"]: s for s in admin_client.get("/api/mcp/status").json()["servers"]}
    assert status["calc"]["status"] == "not_loaded" and status["off"]["status"] == "disabled"
    tested = admin_client.post("/api/mcp/servers/calc/test").json()
    assert tested["status"] == "ready" and "add" in [t["name"] for t in tested["tools"]]
    broken = admin_client.post("/api/mcp/servers/broken/test").json()
    assert broken["status"] == "error" and broken["last_error"]
    assert admin_client.post("/api/mcp/servers/nope/test").status_code == 404


def test_the_settings_page_is_for_admins_only(client, user, admin_client, ext):
    assert client.get("/settings/mcp").status_code == 302  # signed out: to the login page
    client.force_login(user)
    assert client.get("/settings/mcp").status_code == 403
    assert admin_client.get("/settings/mcp").status_code == 200


def test_a_broken_file_on_disk_is_a_422_not_a_500(admin_client, ext):
    ext.write_text("{broken")
    for path in ("/api/mcp/config", "/api/mcp/status"):
        response = admin_client.get(path)
        assert response.status_code == 422 and "invalid JSON" in response.json()["detail"]
    assert admin_client.put("/api/mcp/config", {"mcp_servers": {}}, format="json").status_code == 422
    assert ext.read_text() == "{broken"


def test_deleting_a_thread_closes_its_own_mcp_server_process(tmp_path, monkeypatch, django_user_model,
                                                             django_capture_on_commit_callbacks):
    import asyncio
    import time

    from apps.threads.services import thread_create
    from harness.config import parse_config
    from harness.mcp import get_mcp_tools, mcp_status

    path = tmp_path / "extensions_config.json"
    path.write_text(json.dumps({"mcpServers": {"st": {"command": sys.executable, "args": [SERVERS, "stdio", "stateful"],
                                                       "session_scope": "thread"}}}))
    monkeypatch.setenv("DEER_FLOW_EXTENSIONS_CONFIG_PATH", str(path))
    reset_mcp()
    try:
        user = django_user_model.objects.create_user(username="ada", password="pw-ada-12345")
        thread = thread_create(owner=user)
        app = parse_config("config_version: 1\nmodels: []\n")
        tools = {t.name: t for t in get_mcp_tools(app_config=app)}
        config = {"configurable": {"user_id": str(user.pk), "thread_id": thread.pk}}
        assert asyncio.run(tools["count"].ainvoke({}, config=config)).startswith("count=1 ")
        assert mcp_status()[0]["thread_sessions"] == 1

        client = APIClient()
        client.force_login(user)
        with django_capture_on_commit_callbacks(execute=True):
            assert client.delete(f"/api/threads/{thread.pk}").status_code == 204
        end = time.monotonic() + 60  # the close runs on the MCP loop; the deadline only ends a hang
        while mcp_status()[0]["thread_sessions"]:
            assert time.monotonic() < end, "the thread's MCP process was not closed"
            time.sleep(0.05)
    finally:
        reset_mcp()
