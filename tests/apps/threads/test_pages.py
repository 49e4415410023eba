"""The chat pages: who gets the chat, whose threads open, and no asset from elsewhere."""

from __future__ import annotations

import json
import re

import pytest

from apps.threads.services import thread_create

pytestmark = pytest.mark.django_db


def boot_of(html: str) -> dict:
    match = re.search(r'<script id="boot" type="application/json">(.*?)</script>', html, re.S)
    assert match, "the page carries its boot data"
    return json.loads(match.group(1))


def test_signed_out_visitors_get_the_landing_page(client):
    response = client.get("/")
    assert response.status_code == 200
    html = response.content.decode()
    assert 'href="/accounts/login/"' in html and 'id="boot"' not in html


def test_signed_in_users_get_the_chat_with_models_and_a_csrf_token(client, user):
    client.force_login(user)
    response = client.get("/")
    html = response.content.decode()
    boot = boot_of(html)
    assert boot["thread_id"] is None and boot["user"]["username"] == "alice"
    assert [m["name"] for m in boot["models"]] and all("available" in m for m in boot["models"])
    assert re.search(r'<meta name="csrf-token" content="[^"]{20,}">', html)
    assert "csrftoken" in response.cookies


def test_every_script_and_stylesheet_is_served_from_here(client, user):
    client.force_login(user)
    html = client.get("/").content.decode()
    sources = re.findall(r'<(?:script|link)[^>]+(?:src|href)="([^"]+)"', html)
    assert sources and all(s.startswith(("/static/", "/bundles/")) for s in sources), sources


def test_a_thread_page_opens_only_for_its_owner(client, user, other_user):
    thread = thread_create(owner=user)
    client.force_login(user)
    response = client.get(f"/c/{thread.pk}/")
    assert response.status_code == 200 and boot_of(response.content.decode())["thread_id"] == str(thread.pk)
    client.force_login(other_user)
    assert client.get(f"/c/{thread.pk}/").status_code == 404
    assert client.get("/c/not-a-thread/").status_code == 404


def test_a_thread_page_asks_anonymous_visitors_to_sign_in(client):
    response = client.get("/c/abc/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_the_no_model_notice_names_the_file_for_staff_only(client, user, tmp_path, monkeypatch):
    config = tmp_path / "config.yaml"
    config.write_text("config_version: 1\nmodels: []\n")
    monkeypatch.setenv("DEER_FLOW_CONFIG_PATH", str(config))
    client.force_login(user)
    html = client.get("/").content.decode()
    assert "No model is configured" in html and str(config) not in html and "DEER_FLOW_CONFIG_PATH" in html
    user.is_staff = True
    user.save()
    html = client.get("/").content.decode()
    assert str(config) in html


def test_a_configured_but_unavailable_model_is_named_with_its_reason(client, user, tmp_path, monkeypatch):
    """Not "No model is configured" when one is: "No model is available" and why, the config
    file's path for staff only (the reason text itself starts with it)."""
    config = tmp_path / "config.yaml"
    config.write_text("config_version: 1\nmodels:\n  - name: gpt\n    use: langchain_openai:ChatOpenAI\n"
                      "    model: gpt-4o\n    api_key: $UNSET_KEY_FOR_THIS_TEST\n")
    monkeypatch.setenv("DEER_FLOW_CONFIG_PATH", str(config))
    monkeypatch.delenv("UNSET_KEY_FOR_THIS_TEST", raising=False)
    client.force_login(user)
    html = client.get("/").content.decode()
    assert "No model is available" in html and "No model is configured" not in html
    assert "UNSET_KEY_FOR_THIS_TEST" in html and str(config) not in html
    assert "unavailable:" in html  # the picker greys the model out with its reason
    assert str(config) not in json.dumps(boot_of(html)["models"])
    user.is_staff = True
    user.save()
    html = client.get("/").content.decode()
    assert str(config) in html and "No model is available" in html
