"""Export a chat from the header's Export menu, in a real browser at 1280 px light and 375 px
dark: Markdown and JSON download the conversation; PDF prints the conversation alone."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect
from tests.ui.conftest import UI_HANG_MS

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.mark.parametrize("viewport,scheme", [({"width": 1280, "height": 800}, "light"), ({"width": 375, "height": 740}, "dark")],
                         ids=["desktop-light", "phone-dark"])
def test_export_downloads_markdown_and_json_and_prints_the_conversation(viewport, scheme, browser, live, signed_in_state, script, doc_shot):
    context = browser.new_context(base_url=live.url, storage_state=signed_in_state, color_scheme=scheme, viewport=viewport, accept_downloads=True)
    context.set_default_timeout(UI_HANG_MS)
    try:
        page = context.new_page()
        script("Leek and potato soup goes well with rye bread.")
        page.goto("/")
        menu = page.locator("#export-menu")
        expect(menu).to_be_hidden()  # a new chat has nothing to export yet
        box = page.get_by_label("Message", exact=True)
        box.fill("What soup goes with rye bread?")
        box.press("Enter")
        expect(page.locator("article.msg.assistant").last).to_contain_text("Leek and potato")
        expect(page.get_by_role("button", name="Send", exact=True)).to_be_visible()
        expect(menu).to_be_visible()
        menu.locator("summary").click()
        doc_shot(page, f"export-menu-{scheme}" + ("-phone" if viewport["width"] == 375 else ""))
        with page.expect_download() as md:
            page.get_by_role("menuitem", name="Markdown (.md)").click()
        text = open(md.value.path(), encoding="utf-8").read()
        assert md.value.suggested_filename.endswith(".md")
        assert text.index("What soup goes with rye bread?") < text.index("Leek and potato soup goes well with rye bread.")
        menu.locator("summary").click()
        with page.expect_download() as js:
            page.get_by_role("menuitem", name="JSON (.json)").click()
        data = json.load(open(js.value.path(), encoding="utf-8"))
        assert [m["role"] for m in data["messages"]] == ["user", "assistant"]

        # PDF is the browser's print: the conversation alone, without the sidebar, composer or menus.
        page.emulate_media(media="print")
        expect(page.locator("article.msg.assistant").last).to_be_visible()
        for hidden in ("#composer", "#sidebar", "#export-menu"):
            expect(page.locator(hidden)).to_be_hidden()
        pdf = page.pdf()
        assert pdf.startswith(b"%PDF")
    finally:
        context.close()
