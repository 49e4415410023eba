"""Message actions in a real browser: copy, regenerate, edit-and-rerun (↑), branch, the
stopped marker, at desktop width and at 375 px; reloads after regenerate and after branch
show every message once."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import expect

from harness.testing.script import Reply, call, tool_reply
from tests.support.waiting import HANG_SECONDS, wait_until
from tests.ui.chat_page import send

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def answers(page):
    return page.locator("article.msg.assistant")


def questions(page):
    return page.locator("article.msg.user")


def idle(page):
    expect(page.get_by_role("button", name="Send", exact=True)).to_be_visible()


def test_regenerate_replaces_the_answer_and_a_reload_agrees(page, script, doc_shot):
    script("The first answer.", "A better answer.")
    page.goto("/")
    send(page, "Tell me something")
    expect(answers(page).last).to_contain_text("The first answer.")
    idle(page)
    doc_shot(page, "message-actions")
    answers(page).last.get_by_role("button", name="Regenerate").click()
    expect(answers(page).last).to_contain_text("A better answer.")
    idle(page)
    expect(page.locator("#messages")).not_to_contain_text("The first answer.")
    expect(questions(page)).to_have_count(1)
    page.reload()
    expect(answers(page)).to_have_count(1)
    expect(answers(page).last).to_contain_text("A better answer.")
    expect(questions(page)).to_have_count(1)
    assert page.js_errors == []


def test_arrow_up_edits_the_last_question_and_reruns(page, script, doc_shot):
    script("Paris is the capital of France.", "Rome is the capital of Italy.")
    page.goto("/")
    send(page, "Capital of France?")
    expect(answers(page).last).to_contain_text("Paris")
    idle(page)
    box = page.get_by_label("Message", exact=True)
    box.focus()
    box.press("ArrowUp")
    editor = page.get_by_label("Edit your message")
    expect(editor).to_have_value("Capital of France?")
    editor.fill("Capital of Italy?")
    doc_shot(page, "message-edit")
    page.get_by_role("button", name="Save & rerun").click()
    expect(answers(page).last).to_contain_text("Rome")
    idle(page)
    expect(questions(page).last.locator(".bubble")).to_have_text("Capital of Italy?")
    page.reload()
    expect(questions(page)).to_have_count(1)
    expect(questions(page).last.locator(".bubble")).to_have_text("Capital of Italy?")
    expect(answers(page)).to_have_count(1)
    expect(page.locator("#messages")).not_to_contain_text("Paris")
    assert page.js_errors == []


def test_branch_from_an_older_answer_opens_a_new_thread_that_survives_reload(page, script):
    script("Answer one.", "Answer two.", "Answer on the branch.")
    page.goto("/")
    send(page, "First question")
    expect(answers(page).last).to_contain_text("Answer one.")
    idle(page)
    send(page, "Second question")
    expect(answers(page).last).to_contain_text("Answer two.")
    idle(page)
    source_url = page.url
    answers(page).first.get_by_role("button", name="Branch").click()
    expect(page).not_to_have_url(source_url)
    expect(page).to_have_url(re.compile(r"/c/[0-9a-f-]{36}/"))
    expect(page.locator("#composer-note")).to_contain_text("files of the later conversation were not copied")
    expect(answers(page)).to_have_count(1)
    expect(answers(page).first).to_contain_text("Answer one.")
    expect(page.locator("#thread-title")).to_contain_text("(branch)")
    send(page, "Branch question")
    expect(answers(page).last).to_contain_text("Answer on the branch.")
    idle(page)
    page.reload()
    expect(questions(page)).to_have_count(2)
    expect(answers(page)).to_have_count(2)
    expect(page.locator("#messages")).not_to_contain_text("Answer two.")
    # the source thread is as it was
    page.goto(source_url)
    expect(answers(page)).to_have_count(2)
    expect(answers(page).last).to_contain_text("Answer two.")
    assert page.js_errors == []


def test_copy_markdown_plain_and_the_shortcut(page, script):
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    script("Some **bold** words.")
    page.goto("/")
    send(page, "Copy me")
    expect(answers(page).last.locator("strong")).to_have_text("bold")
    idle(page)
    answers(page).last.get_by_role("button", name="Copy", exact=True).click()
    expect(page.locator("#composer-note")).to_contain_text("Markdown copied")
    assert page.evaluate("navigator.clipboard.readText()") == "Some **bold** words."
    answers(page).last.get_by_role("button", name="Copy text").click()
    expect(page.locator("#composer-note")).to_contain_text("Text copied")
    assert page.evaluate("navigator.clipboard.readText()") == "Some bold words."
    page.evaluate("navigator.clipboard.writeText('')")
    page.keyboard.press("Control+Shift+C")
    expect(page.locator("#composer-note")).to_contain_text("Last answer copied")
    assert page.evaluate("navigator.clipboard.readText()") == "Some **bold** words."


def test_a_stopped_run_is_marked_and_stays_marked_after_reload(page, script, model_server):
    script(Reply(text="Too late.", delay=HANG_SECONDS))
    page.goto("/")
    send(page, "Take your time")
    expect(page.get_by_role("button", name="Stop")).to_be_visible()
    wait_until(lambda: model_server.requests, "the run's model request")  # stopped mid-answer, not before it began
    page.get_by_role("button", name="Stop").click()
    expect(page.locator(".stopped-marker")).to_contain_text("Stopped")
    idle(page)
    page.reload()
    expect(page.locator(".stopped-marker")).to_contain_text("Stopped")
    assert page.js_errors == []


def test_message_actions_on_a_phone(phone, script, doc_shot):
    page = phone
    script("A phone-sized answer.", "A regenerated phone answer.")
    page.goto("/")
    send(page, "Hello from a phone")
    expect(answers(page).last).to_contain_text("A phone-sized answer.")
    idle(page)
    regenerate = answers(page).last.get_by_role("button", name="Regenerate")
    expect(regenerate).to_be_visible()
    expect(questions(page).last.get_by_role("button", name="Edit")).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= 375
    doc_shot(page, "message-actions-phone")
    regenerate.click()
    expect(answers(page).last).to_contain_text("A regenerated phone answer.")
    idle(page)
    page.reload()
    expect(answers(page)).to_have_count(1)
    assert page.evaluate("document.documentElement.scrollWidth") <= 375


@pytest.fixture
def short_keep(live):
    """summarization.keep: 2 messages, so two turns make a thread worth compacting."""
    original = live.config_path.read_text()
    live.config_path.write_text(original + "summarization:\n  enabled: false\n  keep:\n    type: messages\n    value: 2\n")
    yield
    live.config_path.write_text(original)


def test_context_meter_and_compaction_of_a_long_thread(page, script, short_keep, doc_shot):
    script("Answer one.", "Answer two.", "SUMMARY of the first turn.")
    page.goto("/")
    send(page, "First question")
    expect(answers(page).last).to_contain_text("Answer one.")
    idle(page)
    meter = page.locator("#context-meter")
    expect(meter).to_contain_text(re.compile(r"Context [\d.k]+ / 32k"))
    send(page, "Second question")
    expect(answers(page).last).to_contain_text("Answer two.")
    idle(page)
    compact = page.get_by_role("button", name="Compact")
    expect(compact).to_be_visible()
    doc_shot(page, "compaction")
    compact.click()
    expect(page.locator("#composer-note")).to_contain_text("Compacted:")
    expect(compact).to_be_hidden()
    # the history on the page (and after a reload) still shows every message
    page.reload()
    expect(questions(page)).to_have_count(2)
    expect(answers(page)).to_have_count(2)
    expect(meter).to_be_visible()
    assert page.js_errors == []


@pytest.fixture
def suggestions_enabled(live):
    original = live.config_path.read_text()
    live.config_path.write_text(original + "suggestions:\n  enabled: true\n  max_suggestions: 3\n")
    yield
    live.config_path.write_text(original)


@pytest.mark.parametrize("width", [1280, 375])
def test_follow_up_suggestions_appear_after_the_answer_and_send(page, script, suggestions_enabled, width, doc_shot):
    page.set_viewport_size({"width": width, "height": 800})
    script("Llamas live in the Andes.", '["What do llamas eat?", "How tall are llamas?"]', "They eat grass.", "[]")
    page.goto("/")
    send(page, "Where do llamas live?")
    expect(answers(page).last).to_contain_text("Andes")
    chips = page.get_by_role("listitem").filter(has_text="What do llamas eat?")
    expect(chips).to_be_visible()
    expect(page.locator(".suggestion-chip")).to_have_count(2)
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    doc_shot(page, "suggestions" if width > 600 else "suggestions-phone")
    chips.click()
    expect(questions(page).last.locator(".bubble")).to_have_text("What do llamas eat?")
    expect(answers(page).last).to_contain_text("They eat grass.")
    idle(page)
    expect(page.locator(".suggestion-chip")).to_have_count(0)


def verdict(satisfied: bool, blocker: str = "goal_not_met_yet", reason: str = "") -> str:
    """The goal evaluator's answer (the live server's one loopback model answers it too, in turn)."""
    return json.dumps({"satisfied": satisfied, "blocker": "none" if satisfied else blocker, "reason": reason})


@pytest.mark.parametrize("width", [1280, 375])
def test_a_goal_set_from_the_composer_continues_until_the_evaluator_says_met(page, script, width, doc_shot):
    page.set_viewport_size({"width": width, "height": 800})
    script("Step one is written.", verdict(False, reason="step two is missing"),
           "Step two is written.", verdict(True, reason="both steps are written"))
    page.goto("/")
    send(page, "/goal Write two steps")
    banner = page.locator("#goal-banner")
    expect(banner).to_contain_text("Goal: Write two steps")
    expect(questions(page).first.locator(".bubble")).to_have_text("Write two steps")
    expect(answers(page).first).to_contain_text("Step one is written.")
    expect(answers(page).last).to_contain_text("Step two is written.")
    expect(page.locator("#goal-state")).to_have_text("Met — both steps are written")
    expect(page.locator("#goal-blocker")).to_be_hidden()
    idle(page)
    doc_shot(page, "goal" if width > 600 else "goal-phone")
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    page.reload()
    expect(questions(page)).to_have_count(1)  # the continuation instruction stays hidden
    expect(answers(page)).to_have_count(2)
    expect(page.locator("#goal-state")).to_contain_text("Met")
    page.get_by_role("button", name="Clear goal").click()
    expect(banner).to_be_hidden()
    assert page.js_errors == []


@pytest.mark.parametrize("viewport", [{"width": 1280, "height": 800}, {"width": 375, "height": 740}], ids=["desktop", "phone"])
def test_a_blocked_goal_shows_its_blocker_in_the_dark_theme(viewport, browser, live, signed_in_state, script, doc_shot):
    context = browser.new_context(base_url=live.url, storage_state=signed_in_state, color_scheme="dark", viewport=viewport)
    try:
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        script("Which database should I use, Postgres or SQLite?",
               verdict(False, "needs_user_input", "the assistant asked which database to use"))
        page.goto("/")
        send(page, "/goal Set up the database")
        expect(answers(page).last).to_contain_text("Which database should I use")
        chip = page.locator("#goal-blocker")
        expect(chip).to_have_text("Needs your input")
        expect(page.locator("#goal-state")).to_contain_text("Blocked — the assistant asked which database to use")
        idle(page)
        assert page.evaluate(DARK_BANNER) < 0.4  # the banner follows the dark theme
        assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
        doc_shot(page, "goal-blocked-dark" + ("-phone" if viewport["width"] == 375 else ""))
        assert errors == []
    finally:
        context.close()


DARK_BANNER = """() => {
    const [r, g, b] = getComputedStyle(document.querySelector("#goal-banner")).backgroundColor.match(/\\d+/g).map(Number);
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
}"""


def test_an_answered_clarification_stays_in_the_history_after_reload(page, script):
    script(tool_reply(call("ask_clarification", question="Which colour should the chart use?", options=["red", "blue"])),
           Reply(text="Drawing it in blue."))
    page.goto("/")
    send(page, "Draw a chart")
    card = page.locator("#clarify")
    expect(card).to_contain_text("Which colour should the chart use?")
    card.get_by_label("blue").check()
    card.get_by_role("button", name="Send answer").click()
    expect(answers(page).last).to_contain_text("Drawing it in blue.")
    idle(page)
    page.reload()
    expect(answers(page).last).to_contain_text("Drawing it in blue.")
    answered = page.locator(".clarify.answered")
    expect(answered).to_contain_text("Which colour should the chart use?")
    expect(answered).to_contain_text("You answered: blue")
    expect(questions(page)).to_have_count(1)
    assert page.js_errors == []


def test_a_message_of_tool_calls_only_has_nothing_to_copy(page, script):
    script(tool_reply(call("ls", path="/mnt/user-data/workspace")), "The workspace is empty.")
    page.goto("/")
    send(page, "What is in the workspace?")
    expect(answers(page).last).to_contain_text("The workspace is empty.")
    idle(page)
    calls_only, answer = answers(page).first, answers(page).last
    assert answers(page).count() == 2
    expect(calls_only.locator(".tool-card, .tool")).not_to_have_count(0)
    expect(calls_only.get_by_role("button", name="Copy", exact=True)).to_be_hidden()
    expect(calls_only.get_by_role("button", name="Copy text")).to_be_hidden()
    expect(answer.get_by_role("button", name="Copy", exact=True)).to_be_attached()
    page.reload()
    expect(answers(page).last).to_contain_text("The workspace is empty.")
    expect(answers(page).first.get_by_role("button", name="Copy text")).to_be_hidden()
