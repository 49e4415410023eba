"""The subagent card in a real browser: live while the subagent works, and rebuilt from the
stored records after a reload (its steps loaded when it is opened), on desktop and phone."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from harness.testing.script import Reply, call, tool_reply
from tests.ui.chat_page import open_details, send

from .test_chat import assistant

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def delegating_script(script):
    script(
        tool_reply(call("task", description="Count the workspace files", prompt="Count the files in /mnt/user-data/workspace.",
                        subagent_type="bash"), text="I will ask a subagent."),
        tool_reply(call("bash", command="sleep 2; ls /mnt/user-data/workspace | wc -l", description="Count files")),
        Reply(text="The workspace holds 0 files."),
        Reply(text="The subagent found 0 files in the workspace."),
    )


def check_card_live_then_after_reload(page, doc_shot, shot_name):
    page.goto("/")
    page.get_by_label("Mode", exact=True).select_option("pro")
    send(page, "How many files are in the workspace? Use a subagent.")
    card = page.locator(".tool-card.subagent-card")
    expect(card).to_have_attribute("data-subagent-status", "running")
    expect(card.locator(".tool-name")).to_contain_text("Subagent · bash")
    expect(card.locator(".tool-args-summary")).to_have_text("Count the workspace files")
    open_details(card)
    expect(card.locator(".subagent-step").first).to_contain_text("calls bash")  # a live step, while it runs
    expect(card).to_have_attribute("data-subagent-status", "completed")
    expect(card.locator(".subagent-step")).to_have_count(3)
    expect(card.locator(".subagent-meta")).to_contain_text("tokens")
    expect(assistant(page).last).to_contain_text("The subagent found 0 files in the workspace.")
    doc_shot(page, shot_name)

    page.reload()
    card = page.locator(".tool-card.subagent-card")
    expect(card).to_have_attribute("data-subagent-status", "completed")
    expect(card.locator(".subagent-desc")).to_have_text("Count the workspace files")
    expect(card.locator(".subagent-step")).to_have_count(0)
    open_details(card)  # opening it loads the persisted steps
    expect(card.locator(".subagent-step")).to_have_count(3)
    expect(card.locator(".subagent-step").last).to_contain_text("The workspace holds 0 files.")
    expect(card.locator(".subagent-meta")).to_contain_text("tokens")
    assert not page.js_errors


def test_subagent_card_live_and_after_reload(page, script, doc_shot):
    delegating_script(script)
    check_card_live_then_after_reload(page, doc_shot, "subagent-card")


def test_subagent_card_on_a_phone(phone, script, doc_shot):
    delegating_script(script)
    check_card_live_then_after_reload(phone, doc_shot, "subagent-card-phone")
    assert phone.evaluate("document.documentElement.scrollWidth") <= 375
    expect(phone.get_by_label("Mode", exact=True)).to_be_in_viewport()


def test_subagent_card_after_a_reload_mid_run(page, script):
    script(
        tool_reply(call("task", description="Wait a little", prompt="Wait three seconds, then report.", subagent_type="bash")),
        tool_reply(call("bash", command="sleep 3; echo waited", description="Wait")),
        Reply(text="I waited three seconds."),
        Reply(text="The subagent waited."),
    )
    page.goto("/")
    page.get_by_label("Mode", exact=True).select_option("pro")
    send(page, "Wait using a subagent.")
    card = page.locator(".tool-card.subagent-card")
    expect(card).to_have_attribute("data-subagent-status", "running")
    page.reload()  # the resumed stream replays the task events into the rebuilt card
    card = page.locator(".tool-card.subagent-card")
    expect(assistant(page).last).to_contain_text("The subagent waited.")
    expect(card).to_have_attribute("data-subagent-status", "completed")
    card.locator("summary").click()
    expect(card.locator(".subagent-step")).to_have_count(3)  # replayed and loaded steps are not doubled
    expect(page.locator(".tool-card.subagent-card")).to_have_count(1)
    assert not page.js_errors
