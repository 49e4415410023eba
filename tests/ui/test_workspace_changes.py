"""The files a run changed, shown after its answer: a card listing each file with its line
counts, which of the outputs were presented, and the diff on opening a file. At desktop and
phone widths, light and dark; after a reload the card comes back from the run's record."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from harness.testing.script import Reply, call, tool_reply
from tests.ui.chat_page import open_details, send

pytestmark = [pytest.mark.browser, pytest.mark.slow]

OUT = "/mnt/user-data/outputs"
NO_SIDEWAYS = "document.documentElement.scrollWidth <= window.innerWidth"
LIGHTNESS = """sel => {
    const [r, g, b] = getComputedStyle(document.querySelector(sel)).backgroundColor.match(/\\d+/g).map(Number);
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
}"""


def write(path: str, content: str):
    return call("write_file", description=f"Write {path.rsplit('/', 1)[-1]}", path=path, content=content)


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("viewport", [{"width": 1280, "height": 800}, {"width": 375, "height": 740}], ids=["desktop", "phone"])
def test_the_changed_files_follow_the_answer(viewport, scheme, browser, live, signed_in_state, script, doc_shot):
    context = browser.new_context(base_url=live.url, storage_state=signed_in_state, color_scheme=scheme, viewport=viewport)
    try:
        page = context.new_page()
        script(
            tool_reply(write(f"{OUT}/report.md", "# Quarterly report\n\nRevenue is up.\n"),
                       write(f"{OUT}/data.csv", "quarter,revenue\nQ1,10\nQ2,12\n"),
                       write("/mnt/user-data/workspace/draft.py", "print('draft')\n")),
            tool_reply(call("present_files", filepaths=[f"{OUT}/report.md", f"{OUT}/data.csv"])),
            Reply(text="The report and its data are ready."),
        )
        page.goto("/")
        send(page, "Write the quarterly report")
        answer = page.locator("article.msg.assistant").last
        expect(answer).to_contain_text("The report and its data are ready.")
        card = answer.get_by_role("region", name="Files changed by this answer")
        expect(card).to_contain_text("3 files changed")
        rows = card.locator(".ws-file")
        expect(rows).to_have_count(3)
        expect(card.locator(".ws-tag.presented")).to_have_count(2)
        expect(card.locator(".ws-undelivered")).to_have_count(0)
        report = card.locator('.ws-file[data-path="/mnt/user-data/outputs/report.md"]')
        expect(report.locator(".ws-delta")).to_contain_text("+3")
        open_details(report)
        expect(report.locator(".ws-line.ws-add").first).to_have_text("+# Quarterly report")
        # The card sits between the answer's text and its rating.
        assert answer.evaluate("a => [...a.children].indexOf(a.querySelector('.ws-changes')) > [...a.children].indexOf(a.querySelector('.md'))")
        assert page.evaluate(NO_SIDEWAYS)
        light = page.evaluate(LIGHTNESS, ".ws-changes")
        assert (light < 0.3) if scheme == "dark" else (light > 0.8)
        suffix = ("-phone" if viewport["width"] == 375 else "") + ("-dark" if scheme == "dark" else "")
        doc_shot(page, "workspace-changes" + suffix)

        page.reload()
        answer = page.locator("article.msg.assistant").last
        expect(answer.locator(".ws-changes .ws-file")).to_have_count(3)
    finally:
        context.close()


def test_outputs_never_presented_are_called_out(page, script):
    script(tool_reply(write(f"{OUT}/notes.md", "# Notes\n")), Reply(text="I wrote the notes."))
    page.goto("/")
    send(page, "Write notes")
    answer = page.locator("article.msg.assistant").last
    expect(answer).to_contain_text("I wrote the notes.")
    card = answer.get_by_role("region", name="Files changed by this answer")
    expect(card.get_by_role("status")).to_contain_text("never presented")
    expect(card.locator(".ws-tag.unpresented")).to_have_text("Not presented")


def test_an_answer_that_changed_nothing_has_no_card(page, script):
    script(Reply(text="Nothing to write."))
    page.goto("/")
    send(page, "Just answer")
    answer = page.locator("article.msg.assistant").last
    expect(answer).to_contain_text("Nothing to write.")
    expect(page.get_by_role("button", name="Send")).to_be_visible()
    expect(answer.locator(".ws-changes")).to_have_count(0)
