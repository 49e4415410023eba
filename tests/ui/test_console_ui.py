"""Usage, Console and feedback in the browser: rate an answer (thumbs down with a comment),
see the rating come back after a reload, see the run's tokens and cost on the Usage page and
the rating in the admin Console, at desktop width and on a 375 px phone."""

from __future__ import annotations

import re

import pytest
import yaml
from playwright.sync_api import expect

from harness.testing.script import Reply
from tests.support.waiting import HANG_SECONDS
from tests.ui.chat_page import send

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture
def priced(live):
    """The loopback model priced for this test only (the server reads the config on change)."""
    original = live.config_path.read_text()
    data = yaml.safe_load(original)
    for model in data["models"]:
        model["pricing"] = {"input_per_million": 2.0, "output_per_million": 8.0, "input_cache_hit_per_million": 0.5}
    live.config_path.write_text(yaml.safe_dump(data))
    yield
    live.config_path.write_text(original)


def fits_phone(page) -> None:
    assert page.evaluate("document.documentElement.scrollWidth") <= 375


def test_rate_an_answer_and_see_usage_cost_and_feedback(page, phone, live, script, priced, doc_shot):
    script(Reply(text="Leek and potato soup is a good start.", usage={"input_tokens": 120_000, "output_tokens": 30_000, "cache_read": 20_000}))
    page.goto("/")
    send(page, "Suggest a winter soup")
    answer = page.locator("article.msg.assistant").last
    expect(answer).to_contain_text("Leek and potato")
    bar = answer.get_by_role("group", name="Rate this answer")
    expect(bar).to_be_visible()
    bar.get_by_role("button", name="Bad answer").click()
    expect(bar.get_by_role("button", name="Bad answer")).to_have_attribute("aria-pressed", "true")
    bar.get_by_role("button", name="Add a comment").click()
    bar.get_by_label("Comment on this answer").fill("I wanted a vegan one")
    bar.get_by_role("button", name="Send feedback").click()
    expect(bar).to_contain_text("I wanted a vegan one")
    doc_shot(answer, "feedback")

    page.reload()
    bar = page.locator("article.msg.assistant").last.get_by_role("group", name="Rate this answer")
    expect(bar.get_by_role("button", name="Bad answer")).to_have_attribute("aria-pressed", "true")
    expect(bar.get_by_role("button", name="Good answer")).to_have_attribute("aria-pressed", "false")
    expect(bar).to_contain_text("I wanted a vegan one")
    # Pressing the other thumb replaces the rating and keeps the comment.
    bar.get_by_role("button", name="Good answer").click()
    expect(bar.get_by_role("button", name="Good answer")).to_have_attribute("aria-pressed", "true")
    bar.get_by_role("button", name="Good answer").click()  # pressed again: the rating is removed
    expect(bar.get_by_role("button", name="Good answer")).to_have_attribute("aria-pressed", "false")
    bar.get_by_role("button", name="Bad answer").click()
    expect(bar.get_by_role("button", name="Bad answer")).to_have_attribute("aria-pressed", "true")
    bar.get_by_role("button", name="Add a comment").click()
    bar.get_by_label("Comment on this answer").fill("I wanted a vegan one")
    bar.get_by_role("button", name="Send feedback").click()
    expect(bar).to_contain_text("I wanted a vegan one")

    page.goto("/usage/")
    expect(page.get_by_role("heading", name="Usage")).to_be_visible()
    expect(page.locator("#tokens-chart svg")).to_be_visible()
    expect(page.locator("#cost-chart svg")).to_be_visible()
    expect(page.locator("#model-table")).to_contain_text("loopback")
    expect(page.locator("#recent-runs tbody tr").first).to_contain_text("success")
    assert page.locator("#stat-runs").inner_text() != "0"
    assert page.locator("#stat-cost").inner_text().startswith("$")
    page.get_by_role("link", name="30 days").click()
    expect(page.get_by_role("link", name="30 days")).to_have_attribute("aria-current", "page")
    doc_shot(page, "usage")

    phone.goto("/usage/")
    expect(phone.locator("#tokens-chart svg")).to_be_visible()
    fits_phone(phone)
    doc_shot(phone, "usage-phone")

    page.goto("/console/")
    expect(page.get_by_role("heading", name="Console")).to_be_visible()
    expect(page.locator("#feedback-table")).to_contain_text("I wanted a vegan one")
    expect(page.locator("#active-runs")).to_contain_text("Nothing running")
    page.get_by_label("Rating").select_option("up")
    expect(page.locator("#feedback-table")).to_contain_text("No feedback in this period")
    page.get_by_label("Rating").select_option("down")
    expect(page.locator("#feedback-table")).to_contain_text("I wanted a vegan one")
    with page.expect_download() as download:
        page.get_by_role("link", name="Feedback (CSV)").click()
    assert "I wanted a vegan one" in open(download.value.path(), encoding="utf-8").read()
    doc_shot(page, "console")
    doc_shot(page.locator("section.card", has=page.locator("#feedback-table")), "console-feedback")

    phone.goto("/console/")
    expect(phone.locator("#feedback-table")).to_contain_text("I wanted a vegan one")
    fits_phone(phone)
    doc_shot(phone, "console-phone")
    assert not page.js_errors and not phone.js_errors


def test_the_console_cancels_a_run_that_is_going(page, script):
    """A run stuck waiting on its model shows under Active runs; Cancel stops it, and the chat
    that started it sees the run end."""
    script(Reply(text="This answer comes too late.", delay=HANG_SECONDS))
    page.goto("/")
    send(page, "Take all the time you need")
    expect(page.get_by_role("button", name="Stop")).to_be_visible()
    # Stop shows as soon as the message is sent; the console lists the run once it is admitted
    page.wait_for_function("() => !!window.DeerFlowChat.state().runId")
    console = page.context.new_page()
    console.goto("/console/")
    row = console.locator("#active-runs tbody tr[data-run-id]")
    expect(row).to_have_count(1)
    expect(row).to_contain_text(re.compile("running|pending"))
    row.get_by_role("button", name="Cancel").click()
    expect(console.locator(".message.success")).to_contain_text("cancelled (interrupted)")
    expect(console.locator("#active-runs")).to_contain_text("Nothing running")
    expect(page.get_by_role("button", name="Send")).to_be_visible()
    assert "comes too late" not in page.locator("#messages").inner_text()
    console.close()
