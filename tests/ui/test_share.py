"""Sharing a chat in a real browser: the chat's Share dialog makes a link, an anonymous visitor
reads the snapshot (rendered as the chat renders answers, read-only, without what was said
later), Settings lists the link and revokes it, after which the link opens nothing; at 1280 and
375 px, light and dark."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect
from tests.ui.chat_page import send
from tests.ui.conftest import UI_HANG_MS

pytestmark = [pytest.mark.browser, pytest.mark.slow]

VIEWS = [({"width": 1280, "height": 800}, "light"), ({"width": 375, "height": 740}, "light"),
         ({"width": 1280, "height": 800}, "dark"), ({"width": 375, "height": 740}, "dark")]

ANSWER = ("Three days in **Lisbon**:\n\n| day | where | budget |\n|---|---|---|\n| 1 | Alfama and the castle | 60 € |\n"
          "| 2 | Belém | 45 € |\n| 3 | Sintra | 70 € |\n\n```python\nprint('boa viagem')\n```\n")


def idle(page):
    expect(page.get_by_role("button", name="Send", exact=True)).to_be_visible()


def _context(browser, live, viewport, scheme, storage_state=None):
    context = browser.new_context(base_url=live.url, storage_state=storage_state, color_scheme=scheme, viewport=viewport)
    context.set_default_timeout(UI_HANG_MS)
    return context


@pytest.mark.parametrize("viewport,scheme", VIEWS, ids=["desktop-light", "phone-light", "desktop-dark", "phone-dark"])
def test_share_a_chat_read_it_anonymously_and_revoke_it(viewport, scheme, browser, live, signed_in_state, script, doc_shot):
    suffix = ("-phone" if viewport["width"] == 375 else "") + ("-dark" if scheme == "dark" else "")
    owner_context = _context(browser, live, viewport, scheme, signed_in_state)
    visitor_context = _context(browser, live, viewport, scheme)
    try:
        owner = owner_context.new_page()
        errors: list[str] = []
        owner.on("pageerror", lambda exc: errors.append(str(exc)))
        script(ANSWER, "Something said after the link was made.")
        owner.goto("/")
        expect(owner.get_by_role("button", name="Share this chat")).to_be_hidden()  # no chat yet
        send(owner, "Plan three days in Lisbon")
        expect(owner.locator("article.msg.assistant td").last).to_have_text("70 €")
        idle(owner)

        owner.get_by_role("button", name="Share this chat").click()
        dialog = owner.get_by_role("dialog", name="Share this chat")
        expect(dialog).to_be_visible()
        dialog.get_by_role("button", name="Create link").click()
        link = dialog.get_by_label("Link")
        expect(link).not_to_have_value("")
        url = link.input_value()
        assert "/s/" in url
        expect(dialog).to_contain_text("A snapshot of 2 messages, no files.")
        doc_shot(owner, "share-dialog" + suffix)
        dialog.get_by_role("button", name="Close").click()
        send(owner, "And what about Porto?")
        expect(owner.locator("article.msg.assistant").last).to_contain_text("after the link was made")
        idle(owner)

        visitor = visitor_context.new_page()
        visitor.on("pageerror", lambda exc: errors.append(str(exc)))
        visitor.goto(url)
        expect(visitor.get_by_role("heading", level=1)).to_have_text("Plan three days in Lisbon")
        expect(visitor.locator("article.msg.assistant strong")).to_have_text("Lisbon")
        expect(visitor.locator("article.msg.assistant td").last).to_have_text("70 €")
        expect(visitor.locator(".code-block")).to_contain_text("boa viagem")
        expect(visitor.locator("#messages")).not_to_contain_text("Porto")
        expect(visitor.locator("textarea, #thread-list, .sidebar")).to_have_count(0)
        expect(visitor.locator('meta[name="robots"]')).to_have_attribute("content", "noindex, nofollow, noarchive")
        assert visitor.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")  # the table scrolls in its box
        doc_shot(visitor, "share-page" + suffix)

        owner.goto("/settings/shares")
        row = owner.locator(".share-row").first
        expect(row).to_contain_text("Plan three days in Lisbon")
        expect(row.locator(".share-url")).to_have_value(url)
        doc_shot(owner, "share-settings" + suffix)
        row.get_by_role("button", name="Revoke").click()
        owner.get_by_role("alertdialog").get_by_role("button", name="Revoke").click()
        expect(row).to_contain_text("Revoked")
        expect(row.get_by_role("button", name="Revoke")).to_have_count(0)

        visitor.reload()
        expect(visitor.get_by_role("heading", level=1)).to_have_text("This shared link is not available")
        expect(visitor.locator("body")).not_to_contain_text("Lisbon")
        assert errors == []
    finally:
        visitor_context.close()
        owner_context.close()
