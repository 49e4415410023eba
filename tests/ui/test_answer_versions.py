"""Answer versions in a real browser: after Regenerate, ‹ 1/2 › arrows switch between the
answers, a reload keeps the one shown, and the next question continues from it; at 1280 and
375 px, light and dark."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect
from tests.ui.chat_page import send
from tests.ui.conftest import UI_HANG_MS

pytestmark = [pytest.mark.browser, pytest.mark.slow]

VIEWS = [({"width": 1280, "height": 800}, "light"), ({"width": 375, "height": 740}, "light"),
         ({"width": 1280, "height": 800}, "dark"), ({"width": 375, "height": 740}, "dark")]


def idle(page):
    expect(page.get_by_role("button", name="Send", exact=True)).to_be_visible()


def answers(page):
    return page.locator("article.msg.assistant")


@pytest.mark.parametrize("viewport,scheme", VIEWS, ids=["desktop-light", "phone-light", "desktop-dark", "phone-dark"])
def test_arrows_switch_between_regenerated_answers_and_a_reload_keeps_the_choice(viewport, scheme, browser, live, signed_in_state,
                                                                                 script, doc_shot):
    context = browser.new_context(base_url=live.url, storage_state=signed_in_state, color_scheme=scheme, viewport=viewport)
    context.set_default_timeout(UI_HANG_MS)
    suffix = ("-phone" if viewport["width"] == 375 else "") + ("-dark" if scheme == "dark" else "")
    try:
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        script("Lisbon is lovely in **May**.", "Go in *September*: warm sea, fewer crowds.", "Pack light layers.")
        page.goto("/")
        send(page, "When should I visit Lisbon?")
        expect(answers(page).last).to_contain_text("May")
        idle(page)
        expect(page.locator(".versions")).to_have_count(0)  # one answer: no arrows
        answers(page).last.get_by_role("button", name="Regenerate").click()
        expect(answers(page).last).to_contain_text("September")
        idle(page)
        arrows = answers(page).last.get_by_role("group", name="Versions of this answer")
        expect(arrows).to_contain_text("2/2")
        expect(arrows.get_by_role("button", name="Next version")).to_be_disabled()
        doc_shot(page, "answer-versions" + suffix)

        arrows.get_by_role("button", name="Previous version").click()
        expect(answers(page).last).to_contain_text("May")
        expect(page.locator("#messages")).not_to_contain_text("September")
        expect(answers(page).last.get_by_role("group", name="Versions of this answer")).to_contain_text("1/2")
        page.reload()
        expect(answers(page)).to_have_count(1)
        expect(answers(page).last).to_contain_text("May")
        expect(answers(page).last.locator(".version-count")).to_have_text("1/2")

        # The next question continues from the version shown; the arrows stay on the earlier turn.
        send(page, "And what to pack?")
        expect(answers(page).last).to_contain_text("Pack light layers.")
        idle(page)
        expect(answers(page).first.locator(".version-count")).to_have_text("1/2")
        answers(page).first.get_by_role("button", name="Next version").click()
        expect(answers(page)).to_have_count(1)
        expect(answers(page).last).to_contain_text("September")
        expect(page.locator("#messages")).not_to_contain_text("pack")
        assert errors == []
    finally:
        context.close()


def test_an_edited_question_carries_the_arrows(page, script, doc_shot):
    script("Paris.", "Rome.")
    page.goto("/")
    send(page, "Capital of France?")
    expect(answers(page).last).to_contain_text("Paris.")
    idle(page)
    page.locator("article.msg.user").last.get_by_role("button", name="Edit").click()
    page.get_by_label("Edit your message").fill("Capital of Italy?")
    page.get_by_role("button", name="Save & rerun").click()
    expect(answers(page).last).to_contain_text("Rome.")
    idle(page)
    question = page.locator("article.msg.user").last
    arrows = question.get_by_role("group", name="Versions of this message")
    expect(arrows).to_contain_text("2/2")
    doc_shot(page, "answer-versions-edit")
    arrows.get_by_role("button", name="Previous version").click()
    expect(page.locator("article.msg.user").last.locator(".bubble")).to_have_text("Capital of France?")
    expect(answers(page).last).to_contain_text("Paris.")
    page.reload()
    expect(page.locator("article.msg.user").last.locator(".version-count")).to_have_text("1/2")
    assert page.js_errors == []


def test_edit_waits_for_the_end_of_a_run_to_be_read_and_an_arrow_survives_a_refresh(page, script):
    script("Paris.", "Berlin.", "Rome.")
    page.goto("/")
    send(page, "Capital of France?")
    expect(answers(page).last).to_contain_text("Paris.")
    idle(page)
    stale = page.locator("article.msg.user").first.get_by_role("button", name="Edit")
    expect(stale).to_be_enabled()  # the first run's end is read in
    # The page reads a run's outcome once its stream ends; hold that answer back to see the
    # page between the two. The Edit it shows is still the first question's until then.
    held, holding = [], [True]
    page.route("**/api/threads/*/runs/*",
               lambda route: held.append(route) if holding[0] and route.request.method == "GET" else route.continue_())
    run_read = re.compile(r"/api/threads/[^/]+/runs/[^/?]+$")
    with page.expect_request(lambda r: r.method == "GET" and run_read.search(r.url)):
        send(page, "Capital of Germany?")
        expect(answers(page).last).to_contain_text("Berlin.")
        idle(page)
    expect(stale).to_be_visible()
    expect(stale).to_be_disabled()  # aria-disabled: the run's end is not read in yet
    stale.dispatch_event("click")  # as a user's click would: refused with a word, not silently
    expect(page.locator("#composer-note")).to_have_text("Wait for the current answer to finish.")
    expect(page.get_by_label("Edit your message")).to_have_count(0)
    holding[0] = False
    for route in held:
        route.continue_()
    edit = page.locator("article.msg.user").last.get_by_role("button", name="Edit")
    expect(edit).to_be_enabled()
    expect(stale).to_be_hidden()
    edit.click()
    page.get_by_label("Edit your message").fill("Capital of Italy?")
    page.get_by_role("button", name="Save & rerun").click()
    expect(answers(page).last).to_contain_text("Rome.")
    idle(page)

    # A press on an arrow, the arrows redrawn (the history refreshed), then the release.
    previous = page.locator("article.msg.user").last.get_by_role("group", name="Versions of this message").get_by_role(
        "button", name="Previous version")
    expect(previous).to_be_enabled()
    box = previous.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    with page.expect_response(lambda r: r.url.endswith("/versions") and r.request.method == "GET"):
        page.evaluate("window.DFMessageActions.refresh()")
    page.mouse.up()
    expect(page.locator("article.msg.user").last.locator(".bubble")).to_have_text("Capital of Germany?")
    expect(answers(page).last).to_contain_text("Berlin.")
    assert page.js_errors == []
