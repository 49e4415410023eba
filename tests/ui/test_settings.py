"""The Settings hub and the tokens page in a real browser: every section reachable, the way
back to the chat, a token made with the pre-selected scopes that works at once, Copy, and
revoke through the styled dialog. Desktop and a 375 px phone."""

from __future__ import annotations

import re

import httpx
import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_hub_sections_lead_to_their_pages_and_back_to_the_chat(page, phone, doc_shot):
    page.goto("/")
    page.get_by_role("link", name="Settings").click()
    expect(page).to_have_url(re.compile(r"/settings/$"))
    expect(page.get_by_role("heading", name="Settings", level=1)).to_be_visible()
    for title in ("Account", "Access tokens", "Memory", "Skills", "Agents", "Appearance", "MCP servers"):
        expect(page.get_by_role("heading", name=title, level=2)).to_be_visible()
    page.get_by_role("link", name="Memory").click()
    expect(page).to_have_url(re.compile(r"/memory/$"))
    expect(page.get_by_role("navigation", name="Breadcrumb").get_by_role("link", name="Settings")).to_be_visible()
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Settings").click()
    page.get_by_role("link", name="Change password").click()
    expect(page).to_have_url(re.compile(r"/accounts/password/change/$"))
    page.get_by_role("link", name="Back to chat").click()  # account pages lead back to the chat
    expect(page.get_by_role("heading", name="What can I help with?")).to_be_visible()

    phone.goto("/settings/")
    for section in phone.locator(".settings-section").all():
        box = section.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 375
    assert phone.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    doc_shot(phone, "settings-phone")
    assert page.js_errors == [] and phone.js_errors == []


def test_a_token_with_the_default_scopes_works_and_is_copied_then_revoked(page, live, doc_shot):
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live.url)
    page.goto("/accounts/tokens/")
    for scope in ("threads:read", "threads:write", "runs:read", "runs:create"):
        expect(page.get_by_role("checkbox", name=re.compile(re.escape(scope)))).to_be_checked()
    page.get_by_label("Name", exact=True).fill("ui script")
    page.get_by_role("button", name="Create token").click()
    token = page.locator("#new-token").input_value()
    assert token.startswith("dfp_")
    page.get_by_role("button", name="Copy").click()
    expect(page.get_by_role("status").filter(has_text="Copied")).to_be_visible()
    assert page.evaluate("navigator.clipboard.readText()") == token
    doc_shot(page, "tokens-created")
    # the first attempt works: the defaults let a script start a chat
    headers = {"Authorization": f"Bearer {token}"}
    thread = httpx.post(f"{live.url}/api/threads", json={}, headers=headers)
    assert thread.status_code == 200, thread.text

    row = page.locator("table.tokens tr", has_text="ui script")
    row.get_by_role("button", name="Revoke").click()
    dialog = page.get_by_role("alertdialog", name="Revoke “ui script”?")
    expect(dialog).to_be_visible()
    dialog.get_by_role("button", name="Cancel").click()
    expect(row).to_be_visible()
    assert httpx.get(f"{live.url}/api/threads/{thread.json()['thread_id']}", headers=headers).status_code == 200
    row.get_by_role("button", name="Revoke").click()
    page.get_by_role("alertdialog").get_by_role("button", name="Revoke").click()
    expect(page.get_by_role("status").filter(has_text="Revoked “ui script”")).to_be_visible()
    expect(page.locator("table.tokens tr", has_text="ui script")).to_have_count(0)
    assert httpx.get(f"{live.url}/api/threads/{thread.json()['thread_id']}", headers=headers).status_code == 401
    assert page.js_errors == []
