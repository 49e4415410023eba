"""Custom agents in the browser: the gallery (create with the form and its live SOUL.md
preview, search, edit, duplicate, delete), the agent picker in the chat header (the agent's
soul reaches the model, the chat says which agent it talks to), the "New agent" bootstrap
chat that saves an agent through setup_agent, and the phone layout."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from harness.testing import call, tool_reply
from tests.ui.chat_page import send

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def card(page, name):
    return page.locator(f'li.agent-card[data-agent="{name}"]')


def system_prompt(request) -> str:
    return "\n".join(str(m["content"]) for m in request["messages"] if m["role"] == "system")


def create_with_form(page, name, display, soul):
    page.goto("/agents/")
    page.get_by_role("button", name="Create with a form").click()
    page.get_by_label("Name", exact=True).fill(name)
    page.get_by_label("Display name").fill(display)
    page.get_by_label("Description").fill(f"{display} for the UI tests")
    page.get_by_label("Avatar emoji").fill("🔎")
    page.get_by_label("SOUL.md").fill(soul)
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#editor-version")).to_contain_text("version 1")
    expect(card(page, name)).to_be_visible()


def test_gallery_create_preview_search_edit_duplicate_delete(page, doc_shot):
    page.goto("/agents/")
    page.get_by_role("button", name="Create with a form").click()
    page.get_by_label("Name", exact=True).fill("ui-analyst")
    page.get_by_label("Name", exact=True).blur()
    expect(page.locator("#name-hint")).to_contain_text("ui-analyst is available")
    page.get_by_label("Display name").fill("UI analyst")
    page.get_by_label("SOUL.md").fill("# The analyst\nYou **cite** every claim.")
    preview = page.locator("#soul-preview")
    expect(preview.locator("h1")).to_have_text("The analyst")  # rendered as Markdown while typing
    expect(preview.locator("strong")).to_have_text("cite")
    page.get_by_role("checkbox", name="Thinking").check()
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#editor-version")).to_contain_text("Saved · version 1")
    expect(card(page, "ui-analyst")).to_contain_text("UI analyst")
    doc_shot(page, "agents-gallery")

    # A bad name is refused with the server's reason and nothing is saved.
    page.get_by_role("button", name="Create with a form").click()
    page.get_by_label("Name", exact=True).fill("../evil")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#form-error")).to_contain_text("not a valid agent name")
    page.get_by_role("button", name="Close").click()

    page.get_by_role("button", name="Edit UI analyst").click()
    expect(page.get_by_label("SOUL.md")).to_have_value("# The analyst\nYou **cite** every claim.")
    page.get_by_label("SOUL.md").fill("# The analyst\nBe concise.")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#editor-version")).to_contain_text("version 2")
    expect(page.locator("#history-list li")).to_have_count(2)
    doc_shot(page, "agents-editor")
    page.get_by_role("button", name="Restore version 1").click()
    expect(page.locator("#editor-version")).to_contain_text("Restored version 1 · now version 3")
    expect(page.get_by_label("SOUL.md")).to_have_value("# The analyst\nYou **cite** every claim.")

    page.get_by_role("button", name="Duplicate UI analyst").click()
    expect(card(page, "ui-analyst-copy")).to_contain_text("UI analyst (copy)")
    # The copy opens in the editor, which takes the focus: wait for it before typing elsewhere.
    expect(page.locator("#editor-title")).to_have_text("Edit UI analyst (copy)")
    expect(page.get_by_label("Name", exact=True)).to_be_focused()
    page.get_by_label("Search agents").fill("copy")
    expect(page.locator("li.agent-card")).to_have_count(1)
    page.get_by_role("button", name="Delete UI analyst (copy)").click()
    page.get_by_role("alertdialog").get_by_role("button", name="Delete").click()  # the site's dialog, not confirm()
    expect(page.locator("#agents-empty")).to_be_visible()
    page.get_by_label("Search agents").fill("")
    expect(card(page, "ui-analyst")).to_be_visible()
    assert page.js_errors == []


def test_picker_runs_the_chosen_agent_and_the_chat_shows_it(page, script, model_server, doc_shot):
    create_with_form(page, "ui-pirate", "Pirate", "Always talk like a pirate.")
    card(page, "ui-pirate").get_by_role("link", name="Chat with Pirate").click()
    expect(page.get_by_label("Agent", exact=True)).to_have_value(re.compile(r"^[0-9a-f-]{36}$"))
    expect(page.locator("#agent-badge")).to_contain_text("Talking to 🔎 Pirate")

    script("Arr, ahoy there!")
    send(page, "hello")
    expect(page.locator("article.msg.assistant").last).to_contain_text("Arr, ahoy there!")
    assert "Always talk like a pirate." in system_prompt(model_server.requests[0])
    expect(page.get_by_label("Agent", exact=True)).to_be_disabled()  # a chat keeps its agent
    doc_shot(page, "agents-picker")

    page.reload()
    expect(page.locator("#agent-badge")).to_contain_text("Talking to 🔎 Pirate")
    expect(page.locator(".thread-item.active .thread-agent")).to_have_attribute("title", "with Pirate")
    expect(page.get_by_label("Agent", exact=True)).to_be_disabled()

    # A new chat starts with the built-in agent, whose prompt has no persona.
    page.goto("/")
    expect(page.get_by_label("Agent", exact=True)).to_have_value("lead_agent")
    script("Plain answer.")
    send(page, "hello again")
    expect(page.locator("article.msg.assistant").last).to_contain_text("Plain answer.")
    assert "pirate" not in system_prompt(model_server.requests[0])
    assert page.js_errors == []


def test_new_agent_chat_interviews_and_saves_with_setup_agent(page, script, model_server):
    page.goto("/agents/")
    page.get_by_role("link", name="New agent").click()
    expect(page.locator("#agent-badge")).to_contain_text("Creating a new agent")
    script("Who reads the notes?",
           tool_reply(call("setup_agent", {"name": "ui-release-notes", "display_name": "Release notes",
                                           "soul": "You write release notes for engineers.", "avatar": "📝"})),
           "Your agent ui-release-notes is ready.")
    send(page, "I want an agent that writes release notes")
    expect(page.locator("article.msg.assistant").last).to_contain_text("Who reads the notes?")
    assert "setup_agent" in {t["function"]["name"] for t in model_server.requests[0].get("tools") or []}
    send(page, "Engineers; call it ui-release-notes")
    expect(page.locator("article.msg.assistant").last).to_contain_text("is ready")

    page.reload()  # the chat stays a bootstrap chat
    expect(page.locator("#agent-badge")).to_contain_text("Creating a new agent")
    page.goto("/agents/")
    expect(card(page, "ui-release-notes")).to_contain_text("Release notes")
    assert page.js_errors == []


def test_gallery_and_picker_fit_a_phone(phone, doc_shot):
    phone.goto("/agents/")
    phone.get_by_role("button", name="Create with a form").click()
    expect(phone.get_by_label("SOUL.md")).to_be_visible()
    assert phone.evaluate("document.documentElement.scrollWidth") <= 375
    doc_shot(phone, "agents-phone")
    phone.goto("/")
    expect(phone.get_by_label("Agent", exact=True)).to_be_visible()
    assert phone.evaluate("document.documentElement.scrollWidth") <= 375
