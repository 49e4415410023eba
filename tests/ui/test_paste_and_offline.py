"""The composer in a real browser, 1280 px light and 375 px dark: an image pasted from the
clipboard is attached like a dropped file (pasted text stays text); going offline is said at
once, and what is sent meanwhile goes out when the network is back; signed out before a new
chat exists, the first message comes back to the composer."""

from __future__ import annotations

import base64

import pytest
from playwright.sync_api import expect
from tests.ui.conftest import UI_HANG_MS

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# A 1×1 PNG: what a screenshot in the clipboard looks like to the page.
PNG = base64.b64encode(base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")).decode()

PASTE = """([name, b64, text]) => {
  const input = document.getElementById("input");
  const data = new DataTransfer();
  if (name) {
    const bytes = Uint8Array.from(atob(b64), c => c.charCodeAt(0));
    data.items.add(new File([bytes], name, { type: "image/png" }));
  }
  if (text) data.setData("text/plain", text);
  const event = new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true });
  input.focus();
  return input.dispatchEvent(event);  // false when the page took the paste itself
}"""

CASES = [({"width": 1280, "height": 800}, "light"), ({"width": 375, "height": 740}, "dark")]


def _page(browser, live, state, viewport, scheme):
    context = browser.new_context(base_url=live.url, storage_state=state, color_scheme=scheme, viewport=viewport)
    context.set_default_timeout(UI_HANG_MS)
    return context, context.new_page()


@pytest.mark.parametrize("viewport,scheme", CASES, ids=["desktop-light", "phone-dark"])
def test_a_pasted_image_is_attached_and_pasted_text_is_not(viewport, scheme, browser, live, signed_in_state, script, doc_shot):
    context, page = _page(browser, live, signed_in_state, viewport, scheme)
    try:
        page.goto("/")
        assert page.evaluate(PASTE, ["", "", "just words"]) is True  # text: the textarea's own business
        expect(page.locator(".attachment")).to_have_count(0)
        assert page.evaluate(PASTE, ["screenshot.png", PNG, ""]) is False
        expect(page.locator(".attachment.done")).to_have_count(1)
        expect(page.locator(".attachment.done")).to_contain_text("screenshot.png")
        doc_shot(page.locator("#composer"), f"paste-image-{scheme}" + ("-phone" if viewport["width"] == 375 else ""))
        script("I see a one-pixel image.")
        box = page.get_by_label("Message", exact=True)
        box.fill("What is in the picture?")
        box.press("Enter")
        expect(page.locator("article.msg.assistant").last).to_contain_text("I see a one-pixel image.")
        expect(page.locator("article.msg.user").last).to_contain_text("screenshot.png")
    finally:
        context.close()


@pytest.mark.parametrize("viewport,scheme", CASES, ids=["desktop-light", "phone-dark"])
def test_offline_is_said_at_once_and_a_message_waits_for_the_network(viewport, scheme, browser, live, signed_in_state, script):
    context, page = _page(browser, live, signed_in_state, viewport, scheme)
    try:
        script("First answer.", "Sent once the network was back.")
        page.goto("/")
        box = page.get_by_label("Message", exact=True)
        box.fill("Hello")
        box.press("Enter")
        expect(page.locator("article.msg.assistant").last).to_contain_text("First answer.")
        expect(page.get_by_role("button", name="Send", exact=True)).to_be_visible()
        context.set_offline(True)
        notice = page.get_by_role("status").filter(has_text="offline")
        expect(notice).to_be_visible()
        expect(notice).to_contain_text("You are offline")
        box.fill("Are you still there?")
        box.press("Enter")
        context.set_offline(False)
        expect(page.locator("article.msg.assistant").last).to_contain_text("Sent once the network was back.")
        expect(page.get_by_role("status").filter(has_text="offline")).to_have_count(0)
        assert page.locator("#messages").inner_text().count("Sent once the network was back.") == 1
    finally:
        context.close()


def test_signed_out_while_a_new_chats_first_message_is_on_its_way(browser, live, signed_in_state):
    """The page's socket is dropped and its session cookie is gone (signed out in another
    tab, or expired), so the reconnect is refused for good (4401) before the first message
    created the chat. The message comes back to the composer, and a file added next says why
    it cannot be uploaded instead of waiting forever for a chat that will never exist."""
    context, page = _page(browser, live, signed_in_state, {"width": 1280, "height": 800}, "light")
    try:
        sockets = []

        def through_to_server(ws):
            sockets.append(ws)
            ws.connect_to_server()

        page.route_web_socket("**/ws/threads/**", through_to_server)
        with page.expect_websocket():  # the page opens its socket at load, for the chat it will create
            page.goto("/")
        for _ in range(UI_HANG_MS // 50):  # the route's callback runs while Playwright is called
            if sockets:
                break
            page.wait_for_timeout(50)
        context.clear_cookies(name="sessionid")
        sockets[0].close(code=4000, reason="dropped")

        box = page.get_by_label("Message", exact=True)
        box.fill("Are you there?")
        box.press("Enter")
        expect(page.get_by_role("status").filter(has_text="signed out")).to_be_visible()
        expect(box).to_have_value("Are you there?")
        expect(page.locator("article.msg.user")).to_have_count(0)
        assert "/c/" not in page.url

        page.locator("#file-input").set_input_files([{"name": "notes.txt", "mimeType": "text/plain", "buffer": b"a few words\n"}])
        expect(page.locator("#composer-note.error-text")).to_be_visible()
        expect(page.locator(".attachment")).to_have_count(0)
    finally:
        context.close()
