"""Wide and long Markdown tables in an answer, in a real browser at 1280 and 375 px, light and
dark: the table scrolls inside its own box (the page never scrolls sideways), no cell breaks a
word across lines, and the header row stays in view while the table is scrolled down."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from harness.testing.script import Reply
from tests.ui.conftest import UI_HANG_MS

pytestmark = [pytest.mark.browser, pytest.mark.slow]

COLUMNS = 12
ROWS = 40
TABLE = ("| " + " | ".join(f"column_{c}" for c in range(COLUMNS)) + " |\n|" + "---|" * COLUMNS + "\n"
         + "".join("| " + " | ".join(f"value_{r}_{c}" for c in range(COLUMNS)) + " |\n" for r in range(ROWS)))

# Cells holding one word whose text runs over more than one line box: a word broken mid-way.
BROKEN_WORDS = """() => [...document.querySelectorAll('article.msg.assistant .md th, article.msg.assistant .md td')].filter(cell => {
  const range = document.createRange(); range.selectNodeContents(cell);
  const tops = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
  return tops.size > 1;
}).map(cell => cell.textContent)"""


@pytest.mark.parametrize("viewport,scheme", [({"width": 1280, "height": 800}, "light"), ({"width": 375, "height": 740}, "dark")],
                         ids=["desktop-light", "phone-dark"])
def test_a_wide_table_scrolls_in_its_box_with_whole_words_and_a_sticky_header(viewport, scheme, browser, live, signed_in_state, script,
                                                                               doc_shot):
    context = browser.new_context(base_url=live.url, storage_state=signed_in_state, color_scheme=scheme, viewport=viewport)
    context.set_default_timeout(UI_HANG_MS)
    try:
        page = context.new_page()
        script(Reply(text="Here is the table:\n\n" + TABLE))
        page.goto("/")
        box = page.get_by_label("Message", exact=True)
        box.fill("A wide table please")
        box.press("Enter")
        answer = page.locator("article.msg.assistant").last
        expect(answer.locator("td").last).to_have_text(f"value_{ROWS - 1}_{COLUMNS - 1}")
        expect(page.get_by_role("button", name="Send", exact=True)).to_be_visible()
        wrap = answer.locator(".table-wrap")
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")  # the page itself never scrolls sideways
        assert wrap.evaluate("w => w.scrollWidth > w.clientWidth")  # twelve columns do not fit: the box scrolls instead
        assert page.evaluate(BROKEN_WORDS) == []
        doc_shot(page, f"chat-wide-table-{scheme}" + ("-phone" if viewport["width"] == 375 else ""))

        wrap.evaluate("w => { w.scrollIntoView({block: 'center'}); w.scrollTop = w.scrollHeight; w.scrollLeft = w.scrollWidth; }")
        header = answer.locator("th").last
        top_of = "el => Math.round(el.getBoundingClientRect().top)"
        assert abs(header.evaluate(top_of) - wrap.evaluate(top_of)) <= 2  # the header row is still at the top of the box
        assert header.evaluate("el => { const r = el.getBoundingClientRect(); return document.elementFromPoint(r.left + 4, r.top + 4) === el "
                               "|| el.contains(document.elementFromPoint(r.left + 4, r.top + 4)); }")  # and drawn above the rows
    finally:
        context.close()
