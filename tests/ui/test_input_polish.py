"""The composer's Polish button in a real browser, desktop and 375 px, light and dark: the draft
is rewritten in place by one model call, Undo puts back what was typed, a failure leaves the
draft as it was and says so, and nothing is sent until Send."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect
from tests.ui.conftest import UI_HANG_MS

pytestmark = [pytest.mark.browser, pytest.mark.slow]

VIEWPORTS = [({"width": 1280, "height": 800}, "light"), ({"width": 375, "height": 740}, "dark")]


@pytest.mark.parametrize("viewport,scheme", VIEWPORTS, ids=["desktop-light", "phone-dark"])
def test_polish_rewrites_the_draft_and_undo_restores_it(viewport, scheme, browser, live, signed_in_state, script, doc_shot):
    context = browser.new_context(base_url=live.url, storage_state=signed_in_state, color_scheme=scheme, viewport=viewport)
    context.set_default_timeout(UI_HANG_MS)
    suffix = "" if viewport["width"] > 375 else "-phone"
    try:
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto("/")
        box = page.get_by_label("Message", exact=True)
        polish = page.get_by_role("button", name="Polish")
        expect(polish).to_be_hidden()  # nothing to polish yet
        box.fill("make my notes.md shorter")
        expect(polish).to_be_visible()
        script("Shorten notes.md to at most five bullet points, keeping every date and name.")
        polish.click()
        expect(box).to_have_value("Shorten notes.md to at most five bullet points, keeping every date and name.")
        undo = page.get_by_role("button", name="Undo polish")
        expect(undo).to_be_visible()
        # The welcome screen has no messages: no "Latest" button over the composer, even scrolled.
        page.locator("#conversation").evaluate("c => { c.scrollTop = 0; c.dispatchEvent(new Event('scroll')); }")
        expect(page.locator("#jump-latest, .jump-latest")).to_be_hidden()
        doc_shot(page.locator("#composer"), f"input-polish-{scheme}{suffix}")
        expect(page.locator("article.msg")).to_have_count(0)  # polishing sends nothing
        undo.click()
        expect(box).to_have_value("make my notes.md shorter")
        expect(undo).to_be_hidden()

        script()  # the model fails: the draft stays, the user is told
        polish.click()
        expect(page.locator("#polish-status")).to_contain_text("unchanged")
        expect(box).to_have_value("make my notes.md shorter")
        expect(box).to_be_editable()

        script("Already clear.")
        box.fill("Already clear.")
        polish.click()
        expect(page.locator("#polish-status")).to_have_text("This draft is already clear.")
        expect(undo).to_be_hidden()
        assert errors == []
    finally:
        context.close()
