"""The Settings hub: its sections (one shows only where its page exists), staff-only sections,
and the tokens page's defaults."""

import re

import pytest
from django.test import override_settings

pytestmark = [pytest.mark.django_db]


def section_keys(html: str) -> list[str]:
    return re.findall(r'id="section-([a-z]+)"', html)


def test_the_hub_lists_the_sections_in_order_and_needs_a_sign_in(client, user):
    assert client.get("/settings/").status_code == 302
    client.force_login(user)
    html = client.get("/settings/").content.decode()
    assert section_keys(html) == ["account", "tokens", "connections", "shares", "memory", "knowledge", "skills", "agents", "approvals", "usage", "appearance"]
    assert 'href="/settings/connections"' in html
    assert 'href="/accounts/tokens/"' in html and 'href="/memory/"' in html and "data-theme-control" in html
    assert 'aria-current="page"' in html and 'href="/"' in html  # the top bar, with the way back to the chat


def test_a_section_whose_page_does_not_exist_is_left_out(client, user):
    client.force_login(user)
    with override_settings(ROOT_URLCONF="tests.apps.accounts.hub_urls_without_connections"):
        html = client.get("/settings/").content.decode()
    assert "connections" not in section_keys(html) and "/settings/connections" not in html
    assert section_keys(html)[:2] == ["account", "tokens"]


def test_staff_see_the_site_wide_sections(client, user):
    user.is_staff = True
    user.save()
    client.force_login(user)
    keys = section_keys(client.get("/settings/").content.decode())
    assert "mcp" in keys and keys.index("mcp") < keys.index("appearance")


def test_register_section_slots_a_feature_in(client, user):
    from apps.accounts import settings_hub

    before = list(settings_hub.SECTIONS)
    try:
        settings_hub.register_section(settings_hub.SettingsSection("usage", "Usage", "Tokens and cost.", "chart-column", "/usage/", order=45))
        client.force_login(user)
        keys = section_keys(client.get("/settings/").content.decode())
        assert keys.index("memory") < keys.index("usage") < keys.index("skills")
    finally:
        settings_hub.SECTIONS[:] = before


def test_tokens_page_preselects_the_scopes_a_script_needs(client, user):
    client.force_login(user)
    html = client.get("/accounts/tokens/").content.decode()
    checked = re.findall(r'value="([a-z:]+)" checked', html)
    assert checked == ["threads:read", "threads:write", "runs:read", "runs:create"]
    assert "start runs (send messages to the agent)" in html
    # a token made with the defaults works for the run routes at once
    created = client.post("/accounts/tokens/", {"action": "create", "name": "script", "scopes": checked, "expires_in_days": "30"})
    token = re.search(r'id="new-token" type="text" readonly value="(dfp_[^"]+)"', created.content.decode()).group(1)
    assert 'id="copy-token"' in created.content.decode()
    from rest_framework.test import APIClient

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    thread = api.post("/api/threads", {}, format="json")
    assert thread.status_code == 200
    assert api.get(f"/api/threads/{thread.json()['thread_id']}/runs").status_code == 200


def test_favicon_is_served_at_the_root_for_pages_without_our_head(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 301 and response["Location"] == "/static/site/favicon.ico"


def test_usage_and_approvals_sit_under_settings_in_the_top_bar(client, user):
    client.force_login(user)
    for path, crumb in (("/usage/", "Usage"), ("/approvals/", "Approvals")):
        html = client.get(path).content.decode()
        # Settings is the section marked current, not Chat, and the breadcrumb names the page.
        current = re.findall(r'<a href="(/[^"?]*)" aria-current="page"', html)  # the page's own period tabs start with ?
        assert current == ["/settings/"], (path, current)
        assert f'<span aria-current="page">{crumb}</span>' in html
