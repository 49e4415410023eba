"""Message times and the answering model in a real browser, 1280 px light and 375 px dark: each
message says when it was written ("just now", the exact time on hover) and each answer which
model wrote it, live and after a reload (from the journal), and a day-old message says so."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect
from tests.ui.conftest import UI_HANG_MS

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.mark.parametrize("viewport,scheme", [({"width": 1280, "height": 800}, "light"), ({"width": 375, "height": 740}, "dark")],
                         ids=["desktop-light", "phone-dark"])
def test_each_message_shows_when_and_each_answer_which_model(viewport, scheme, browser, live, signed_in_state, script, doc_shot):
    context = browser.new_context(base_url=live.url, storage_state=signed_in_state, color_scheme=scheme, viewport=viewport)
    context.set_default_timeout(UI_HANG_MS)
    try:
        page = context.new_page()
        script("Timestamps are on.")
        page.goto("/")
        model = page.evaluate("JSON.parse(document.getElementById('boot').textContent).models[0].name")
        box = page.get_by_label("Message", exact=True)
        box.fill("Do messages have times?")
        box.press("Enter")
        answer = page.locator("article.msg.assistant").last
        expect(answer).to_contain_text("Timestamps are on.")
        question = page.locator("article.msg.user").last
        for message in (question, answer):
            expect(message.locator(".msg-meta time")).to_have_text("just now")
            title = message.locator(".msg-meta time").get_attribute("title")
            assert title and re.search(r"\d", title), title  # the exact date and time on hover
        expect(answer.locator(".msg-model")).to_have_text(model)
        expect(question.locator(".msg-model")).to_have_count(0)  # the user wrote that one
        doc_shot(page, f"message-times-{scheme}" + ("-phone" if viewport["width"] == 375 else ""))

        page.reload()
        answer = page.locator("article.msg.assistant").last
        expect(answer.locator(".msg-model")).to_have_text(model)
        expect(answer.locator(".msg-meta time")).to_have_text("just now")
        written = answer.locator(".msg-meta time").get_attribute("datetime")
        # A day later the same stamp reads "yesterday".
        assert page.evaluate("iso => window.DFStamps.relative(new Date(new Date(iso).getTime() - 86400000))", written) == "yesterday"
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    finally:
        context.close()
