"""The chat sidebar in a real browser: search finds a word from a message body, pins persist
(across reloads and browsers), chats are grouped Pinned / Today / Previous 7 days / Older,
keyboard-only switching, delete through the styled dialog, and no empty chat is left behind
by an upload taken back before the first message. Desktop and a 375 px phone."""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import expect
from tests.ui.chat_page import send
from tests.support.waiting import HANG_SECONDS

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def new_chat(page, text: str, answer_text: str) -> str:
    page.goto("/")
    send(page, text)
    expect(page.locator("article.msg.assistant").last).to_contain_text(answer_text)
    expect(page).to_have_url(re.compile(r"/c/[0-9a-f-]{36}/$"))
    return page.url.rstrip("/").rsplit("/", 1)[1]


def item(page, thread_id):
    return page.locator(f'.thread-item[data-thread="{thread_id}"]')


def test_search_finds_a_word_from_a_message_body(page, phone, script, doc_shot):
    script("Quokkas live on Rottnest Island, off Perth.", "Sourdough wants a lively starter.")
    quokka = new_chat(page, "Tell me a fact about marsupials", "Rottnest")
    new_chat(page, "Bread tips", "starter")
    search = page.get_by_label("Search chats")
    search.fill("rottn")  # a prefix of a word only the answer has
    result = item(page, quokka)
    expect(result).to_be_visible()
    expect(page.locator(".thread-item")).to_have_count(1)
    expect(result.locator(".thread-snippet")).to_contain_text("Rottnest Island")
    expect(result.locator(".thread-snippet mark")).to_have_text("Rottnest")
    doc_shot(page, "sidebar-search")
    search.fill("zebra crossing")
    expect(page.get_by_text("No chat matches.")).to_be_visible()
    search.press("Escape")  # clears the search
    expect(search).to_have_value("")
    expect(item(page, quokka)).to_be_visible()

    # on a phone: the drawer's search, no sideways scroll
    phone.goto("/")
    phone.get_by_role("button", name="Show chats").click()
    phone.get_by_label("Search chats").fill("marsupials")  # a word of the user's own message
    expect(phone.get_by_role("list", name="Search results").locator(".thread-item")).to_have_count(1)
    expect(item(phone, quokka)).to_be_visible()
    phone.wait_for_function("document.getElementById('sidebar').getBoundingClientRect().left >= 0")  # the drawer has slid in
    assert phone.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    doc_shot(phone, "sidebar-search-phone")
    # focus went into the drawer when it opened; Escape closes it and gives focus back to its button
    expect(phone.get_by_label("Search chats")).to_be_focused()
    phone.keyboard.press("Escape")  # the first clears the search
    expect(phone.get_by_label("Search chats")).to_have_value("")
    phone.keyboard.press("Escape")
    expect(phone.get_by_role("button", name="Show chats")).to_be_focused()
    expect(phone.get_by_role("button", name="Show chats")).to_have_attribute("aria-expanded", "false")
    phone.get_by_role("button", name="Show chats").press("Enter")
    expect(phone.get_by_label("Search chats")).to_be_focused()
    assert page.js_errors == [] and phone.js_errors == []


def test_pins_persist_and_the_list_is_grouped_by_age(page, browser, live, signed_in_state, script, doc_shot):
    script("Answer one.", "Answer two.", "Answer three.")
    old = new_chat(page, "An old chat", "Answer one.")
    week = new_chat(page, "A chat from last week", "Answer two.")
    today = new_chat(page, "A chat from today", "Answer three.")
    live.shell(
        "from datetime import timedelta\nfrom django.utils import timezone\nfrom apps.threads.models import Thread\n"
        f"Thread.objects.filter(pk={old!r}).update(updated_at=timezone.now() - timedelta(days=30))\n"
        f"Thread.objects.filter(pk={week!r}).update(updated_at=timezone.now() - timedelta(days=3))"
    )
    page.reload()
    groups = page.locator(".thread-group")
    expect(page.locator('[data-group="today"]')).to_contain_text("A chat from today")
    expect(page.locator('[data-group="week"]')).to_contain_text("A chat from last week")
    expect(page.locator('[data-group="older"]')).to_contain_text("An old chat")
    expect(page.locator('[data-group="week"] .thread-group-title')).to_have_text("Previous 7 days")

    item(page, old).hover()
    item(page, old).get_by_role("button", name="Pin An old chat").click()
    pinned = page.locator('[data-group="pinned"]')
    expect(pinned).to_contain_text("An old chat")
    expect(groups.first).to_have_attribute("data-group", "pinned")  # pinned chats come first
    expect(item(page, old).get_by_role("button", name="Unpin An old chat")).to_have_attribute("aria-pressed", "true")
    doc_shot(page, "sidebar-groups")
    page.reload()
    expect(page.locator('[data-group="pinned"]')).to_contain_text("An old chat")
    # stored on the server: another browser sees the pin
    other = browser.new_context(base_url=live.url, storage_state=signed_in_state)
    try:
        other_page = other.new_page()
        other_page.goto("/")
        expect(other_page.locator('[data-group="pinned"]')).to_contain_text("An old chat")
    finally:
        other.close()
    item(page, old).get_by_role("button", name="Unpin An old chat").click()
    expect(page.locator('[data-group="pinned"]')).to_have_count(0)
    expect(page.locator('[data-group="older"]')).to_contain_text("An old chat")  # back in its place: pinning is not activity
    assert page.js_errors == []


def test_switch_chats_and_delete_with_the_keyboard_only(page, script):
    script("First answer.", "Second answer.")
    first = new_chat(page, "Keyboard chat one", "First answer.")
    second = new_chat(page, "Keyboard chat two", "Second answer.")
    # Alt+↓ opens the next chat in the list (the list is newest first: two, then one)
    page.get_by_label("Message", exact=True).focus()
    page.keyboard.press("Alt+ArrowDown")
    expect(page).to_have_url(re.compile(f"/c/{first}/$"))
    expect(page.locator(".thread-item.active")).to_have_attribute("data-thread", first)  # the list is there
    page.keyboard.press("Alt+ArrowUp")
    expect(page).to_have_url(re.compile(f"/c/{second}/$"))
    expect(page.locator(".thread-item.active")).to_have_attribute("data-thread", second)
    # from the search box, ↓ walks into the list, Enter opens the focused chat
    page.get_by_label("Search chats").focus()
    page.keyboard.press("ArrowDown")
    links = page.locator(".thread-link")
    expect(links.first).to_be_focused()
    page.keyboard.press("ArrowDown")
    expect(links.nth(1)).to_be_focused()
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(f"/c/{first}/$"))
    expect(page.locator(".thread-item.active")).to_have_attribute("data-thread", first)

    # delete: Tab to the chat's Delete button; Esc in the dialog keeps the chat, Enter deletes
    delete = item(page, first).get_by_role("button", name="Delete Keyboard chat one")
    delete.focus()
    page.keyboard.press("Enter")
    dialog = page.get_by_role("alertdialog", name="Delete “Keyboard chat one”?")
    expect(dialog).to_be_visible()
    page.keyboard.press("Escape")
    expect(dialog).to_have_count(0)
    expect(delete).to_be_focused()  # focus comes back to what opened the dialog
    expect(item(page, first)).to_be_visible()
    page.keyboard.press("Enter")
    expect(page.get_by_role("alertdialog")).to_be_visible()
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/$"))
    expect(item(page, first)).to_have_count(0)
    assert page.js_errors == []


def test_no_empty_chat_is_left_behind_by_an_upload_taken_back(page, live):
    page.goto("/")
    page.locator("#file-input").set_input_files([{"name": "notes.txt", "mimeType": "text/plain", "buffer": b"draft notes\n"}])
    expect(page).to_have_url(re.compile(r"/c/[0-9a-f-]{36}/$"))  # the upload needed a thread
    draft = page.url.rstrip("/").rsplit("/", 1)[1]
    expect(page.locator(".attachment.done")).to_be_visible()
    expect(item(page, draft)).to_have_count(0)  # a draft is not a chat in the list
    page.get_by_role("button", name="Remove notes.txt").click()
    expect(page).to_have_url(re.compile(r"/$"))
    # The page deletes the draft as it leaves it: wait for the row to go (a generous deadline,
    # not a guess at how long the request takes).
    deadline = time.monotonic() + HANG_SECONDS
    while live.shell(f"from apps.threads.models import Thread; print(Thread.objects.filter(pk={draft!r}).exists())") != "False":
        assert time.monotonic() < deadline, f"the draft thread {draft} was never deleted"
        time.sleep(0.1)

    # uploaded, then left for a new chat without sending: still not listed
    page.locator("#file-input").set_input_files([{"name": "left.txt", "mimeType": "text/plain", "buffer": b"left behind\n"}])
    expect(page.locator(".attachment.done")).to_be_visible()
    left = page.url.rstrip("/").rsplit("/", 1)[1]
    page.get_by_role("link", name="New chat").click()
    expect(page.locator(".thread-list")).not_to_contain_text("Untitled")
    expect(item(page, left)).to_have_count(0)
    assert page.js_errors == []


def test_a_click_survives_a_refresh_of_the_list_between_press_and_release(page, live, script):
    # The list refreshes when a run ends, a title arrives or a chat is pinned elsewhere. A
    # refresh that landed between a button's press and its release used to replace the button,
    # and the browser then fires no click: the user's click was lost.
    script("A short answer.")
    thread_id = new_chat(page, "Something to rename", "short answer")
    rename = item(page, thread_id).get_by_role("button", name=re.compile("^Rename"))
    rename.hover()  # the actions show on hover
    box = rename.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    # Meanwhile the chat's title changes (another tab renamed it), and the list refreshes.
    page.evaluate("""async (id) => {
        const csrf = window.DFKit.csrf();
        await fetch(`/api/threads/${id}`, {method: "PATCH", headers: {"Content-Type": "application/json", "X-CSRFToken": csrf},
                                            body: JSON.stringify({metadata: {title: "Renamed elsewhere"}})});
        await window.DFSidebar.refresh();
    }""", thread_id)
    expect(item(page, thread_id).locator(".thread-name")).to_have_text("Renamed elsewhere")
    page.mouse.up()
    field = page.get_by_label("New title")
    expect(field).to_be_focused()
    expect(field).to_have_value("Renamed elsewhere")  # what the list shows now, not what it showed at the press
    field.press("Escape")
    expect(item(page, thread_id).get_by_role("button", name="Rename Renamed elsewhere")).to_be_visible()
