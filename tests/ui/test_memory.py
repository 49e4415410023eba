"""The Memory page in the browser: a fact learned in one chat shows there with a link to its
source, is used in a new chat, and can be edited, deleted, paused; the phone layout fits."""

from __future__ import annotations

import json
import re
import time

import pytest
from playwright.sync_api import expect
from tests.ui.chat_page import send
from tests.support.waiting import HANG_SECONDS

pytestmark = [pytest.mark.browser, pytest.mark.slow]

UPDATE = json.dumps({"user": {"workContext": "Pastry chef"},
                     "newFacts": [{"content": "Prefers metric units in recipes", "category": "preference", "confidence": 0.9}]})


@pytest.fixture
def memory_on(live):
    """Memory on for this test only (the session server reads the config on change)."""
    original = live.config_path.read_text()
    live.config_path.write_text(original + "memory:\n  enabled: true\n  debounce_seconds: 0\n")
    yield
    live.config_path.write_text(original)


def test_a_fact_learned_in_chat_is_shown_editable_and_used_in_a_new_chat(page, phone, live, script, model_server, memory_on, doc_shot):
    script("Noted: grams and litres from now on.", UPDATE, "Use 200 g of flour.")
    page.goto("/")
    send(page, "Please always use metric units, I'm a pastry chef")
    expect(page.locator("article.msg.assistant").last).to_contain_text("grams and litres")
    expect(page).to_have_url(re.compile(r"/c/[0-9a-f-]{36}/$"))
    thread_id = page.url.rstrip("/").rsplit("/", 1)[1]

    page.goto("/memory/")
    row = page.locator("#fact-rows tr", has_text="Prefers metric units in recipes")
    deadline = time.monotonic() + HANG_SECONDS
    while not row.count() and time.monotonic() < deadline:  # the updater runs after the chat; reload until it has
        page.wait_for_timeout(200)
        page.reload()
    expect(row).to_be_visible()
    expect(row.get_by_role("link")).to_have_attribute("href", re.compile(rf"^/c/{thread_id}/#msg-"))
    expect(page.locator("#summaries")).to_contain_text("Pastry chef")
    doc_shot(page, "memory")

    phone.goto("/memory/")
    expect(phone.locator("#fact-rows tr", has_text="Prefers metric units")).to_be_visible()
    assert phone.evaluate("document.documentElement.scrollWidth") <= 375
    doc_shot(phone, "memory-phone")

    page.get_by_role("link", name="Chat").click()
    send(page, "How much flour for a cake?")
    expect(page.locator("article.msg.assistant").last).to_contain_text("200 g")
    chat_request = json.dumps(model_server.requests[-1])
    assert "Prefers metric units in recipes" in chat_request and "Pastry chef" in chat_request

    page.goto("/memory/")
    fact_id = page.locator("#fact-rows tr", has_text="Prefers metric units").get_attribute("data-fact-id")
    row = page.locator(f'#fact-rows tr[data-fact-id="{fact_id}"]')  # editing replaces the text by an input
    row.get_by_role("button", name="Edit").click()
    row.get_by_label("Fact").fill("Prefers metric units everywhere")
    row.get_by_role("button", name="Save").click()
    edited = page.locator("#fact-rows tr", has_text="Prefers metric units everywhere")
    expect(edited).to_contain_text("Added by you")
    page.get_by_role("button", name="Pause memory").click()
    expect(page.locator("#memory-state")).to_contain_text("paused")
    page.get_by_role("button", name="Resume memory").click()
    edited.get_by_role("button", name="Delete").click()
    expect(page.locator("#fact-empty")).to_be_visible()
    page.get_by_label("Add a fact").fill("Allergic to hazelnuts")
    page.get_by_role("button", name="Add fact").click()
    expect(page.locator("#fact-rows tr", has_text="Allergic to hazelnuts")).to_be_visible()
    page.get_by_role("button", name="Clear all").click()
    page.get_by_role("alertdialog").get_by_role("button", name="Forget everything").click()  # the site's dialog, not confirm()
    expect(page.locator("#fact-empty")).to_be_visible()
    assert page.js_errors == [] and phone.js_errors == []
