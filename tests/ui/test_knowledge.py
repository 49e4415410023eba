"""The Knowledge page and the chat's citations in a real browser: a collection is made, a
document uploaded and read (status to ready), shared; a chat's answer cites a passage and
the citation opens the document at that passage; the chat's Knowledge dialog; at 1280 and
375 px, light and dark."""

from __future__ import annotations

import re
import uuid

import pytest
from playwright.sync_api import expect

from harness.testing import call, tool_reply
from tests.ui.conftest import UI_HANG_MS

pytestmark = [pytest.mark.browser, pytest.mark.slow]

VIEWS = [({"width": 1280, "height": 800}, "light"), ({"width": 375, "height": 740}, "light"),
         ({"width": 1280, "height": 800}, "dark"), ({"width": 375, "height": 740}, "dark")]
HANDBOOK = (b"# Staff handbook\n\n## Holidays\n\nEvery employee gets 28 days of paid annual leave.\n\n"
            b"## Remote work\n\nYou may work from home up to three days a week.\n")


def make_collection(page, name: str) -> None:
    page.goto("/knowledge/")
    page.get_by_label("New collection").fill(name)
    page.get_by_role("button", name="Create").click()
    expect(page.locator("#collection-title")).to_have_text(name)


def upload(page, name: str, data: bytes) -> None:
    page.get_by_label("Add documents").set_input_files({"name": name, "mimeType": "text/markdown", "buffer": data})
    page.get_by_role("button", name="Upload").click()
    expect(page.locator("#document-rows tr", has_text=name).locator(".status")).to_have_text("ready")


def show_collection(page) -> None:
    """Scroll the open collection to the top of the screen, for the screenshot."""
    page.locator("#collection-card").evaluate("card => window.scrollTo(0, card.offsetTop - 70)")


def cite_holiday_passage(messages):
    tool = next(m for m in reversed(messages) if m.get("role") == "tool")
    block = next(b for b in str(tool["content"]).split("\n\n") if "28 days" in b)
    cid = re.match(r"\[(kb-[0-9a-f]{12}-\d+)\]", block).group(1)
    return f"You get 28 days of paid leave a year [{cid}]."


def test_a_document_added_on_the_knowledge_page_is_cited_in_chat_and_the_citation_opens_the_passage(page, live, script, doc_shot):
    name = f"Handbook {uuid.uuid4().hex[:6]}"
    make_collection(page, name)
    upload(page, "handbook.md", HANDBOOK)
    row = page.locator("#document-rows tr", has_text="handbook.md")
    expect(row).to_contain_text("Staff handbook")
    page.locator("#share-box summary").click()
    expect(page.get_by_label("Shared with everyone on this server")).not_to_be_checked()
    show_collection(page)
    doc_shot(page, "knowledge")

    script(tool_reply(call("knowledge_search", query="annual leave days")), cite_holiday_passage)
    page.goto("/")
    box = page.get_by_label("Message", exact=True)
    box.fill("How many holiday days do I get?")
    box.press("Enter")
    answer = page.locator("article.msg.assistant").last
    link = answer.locator("a.kb-cite")
    expect(link).to_have_count(1)
    expect(answer).to_contain_text("28 days of paid leave")
    doc_shot(page, "knowledge-citation")

    with page.context.expect_page() as opened:
        link.click()
    document = opened.value
    document.wait_for_load_state()
    cited = link.get_attribute("href").rsplit("/", 1)[1]
    assert document.url.endswith(f"#{cited}")
    target = document.locator(f"article.kb-passage[id='{cited}']")
    expect(target).to_contain_text("28 days of paid annual leave")
    expect(target).to_contain_text("Staff handbook > Holidays")
    assert document.evaluate("document.querySelector(':target') && document.querySelector(':target').id") == cited
    document.close()

    # The chat's Knowledge dialog says what it searches.
    page.get_by_role("button", name="Knowledge for this chat").click()
    dialog = page.get_by_role("dialog", name="Knowledge for this chat")
    expect(dialog).to_contain_text(f"Always searched here: your {name}")
    doc_shot(page, "knowledge-chat-dialog")
    dialog.get_by_role("button", name="Cancel").click()
    assert page.js_errors == []


@pytest.mark.parametrize("viewport,scheme", VIEWS[1:], ids=["phone-light", "desktop-dark", "phone-dark"])
def test_the_knowledge_page_fits_each_screen_and_theme(viewport, scheme, browser, live, signed_in_state, doc_shot):
    context = browser.new_context(base_url=live.url, storage_state=signed_in_state, color_scheme=scheme, viewport=viewport)
    context.set_default_timeout(UI_HANG_MS)
    suffix = ("-phone" if viewport["width"] == 375 else "") + ("-dark" if scheme == "dark" else "")
    try:
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        make_collection(page, f"Notes {uuid.uuid4().hex[:6]}")
        upload(page, "remote.md", HANDBOOK)
        wide = page.evaluate("[...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > innerWidth + 1).map(e => e.tagName + '#' + e.id + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right)).slice(0, 8)")
        assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"], wide
        show_collection(page)
        doc_shot(page, "knowledge" + suffix)
        page.locator("#document-rows tr", has_text="remote.md").get_by_role("link").click()
        expect(page.locator("article.kb-passage").first).to_be_visible()
        assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
        doc_shot(page, "knowledge-document" + suffix)
        assert errors == []
    finally:
        context.close()
