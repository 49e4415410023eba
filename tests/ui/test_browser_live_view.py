"""The agent's browser seen from the chat: while a browser step runs the live panel shows the
page's frames (read-only), the step's card keeps its screenshot after the run and after a
reload, and the panel closes when the run ends; at 1280 px and on a 375 px phone, in both
themes. The agent's browser opens a page served by this test on loopback, allow-listed in the
server's config for this test only."""

from __future__ import annotations

import http.server
import re
import threading

import pytest
import yaml
from playwright.sync_api import expect

from harness.testing.script import Reply, call, tool_reply
from tests.ui.chat_page import open_details, send

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PAGE = (b"<html><head><title>Harbour timetable</title><style>body{font:24px sans-serif;background:#fdf6e3;padding:40px}</style></head>"
        b"<body><h1>Harbour timetable</h1><p id=when></p><button>Book a seat</button>"
        b"<script>document.getElementById('when').textContent='Next ferry: 14:20 to the island';</script></body></html>")


class _Site(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)


@pytest.fixture(scope="module")
def site():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Site)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/timetable"
    server.shutdown()


@pytest.fixture
def browser_live(live, site):
    original = live.config_path.read_text()
    config = yaml.safe_load(original)
    config["tool_groups"] = [{"name": "browser"}]
    config["tools"] = [{"name": n, "group": "browser", "use": f"harness.tools.browser:{cls}"} for n, cls in (
        ("browser_navigate", "BrowserNavigateTool"), ("browser_click", "BrowserClickTool"), ("browser_close", "BrowserCloseTool"))]
    config["browser"] = {"allowed_private_networks": ["127.0.0.1/32"], "frame_interval_ms": 200}
    live.config_path.write_text(yaml.safe_dump(config))
    try:
        yield site
    finally:
        live.config_path.write_text(original)


def watch_the_agent_browse(page, script, url, theme):
    page.goto("/")
    page.evaluate(f"document.documentElement.dataset.theme = {theme!r}")
    # The model's next answer is held back, so the run is still going while the test looks.
    script(tool_reply(call("browser_navigate", url=url), text="Opening the timetable."),
           Reply(text="The next ferry leaves at 14:20.", delay=120))
    send(page, "When is the next ferry? Check the harbour page.")
    card = page.locator('.tool-card[data-tool="browser_navigate"]')
    expect(card).to_have_attribute("data-status", "success")
    panel = page.get_by_role("region", name="The agent's browser, live")
    expect(panel).to_be_visible()
    expect(panel.locator(".browser-live-url")).to_have_text(url)
    frame = panel.locator("img.browser-live-frame")
    expect(frame).to_have_attribute("src", re.compile(r"^data:image/jpeg;base64,.{100,}"))
    page.wait_for_function("() => { const i = document.querySelector('img.browser-live-frame'); return i && i.naturalWidth > 0; }")
    # Clear of the composer and its Stop button.
    box, composer = panel.bounding_box(), page.get_by_label("Message", exact=True).bounding_box()
    assert box["y"] + box["height"] <= composer["y"]
    # Read-only: the user's clicks do not reach the page.
    assert frame.evaluate("el => getComputedStyle(el).pointerEvents") == "none"
    shot = page.locator(".browser-shot-row img.browser-shot")
    expect(shot).to_be_visible()
    page.wait_for_function("() => { const i = document.querySelector('.browser-shot-row img.browser-shot'); return i && i.complete && i.naturalWidth > 0; }")
    return panel, card


def stop_and_check(page, panel):
    page.get_by_role("button", name="Stop").click()
    expect(panel).to_be_hidden()
    # the step's screenshot stays in the transcript, also after a reload
    page.reload()
    card = page.locator('.tool-card[data-tool="browser_navigate"]')
    expect(card.locator(".tool-name")).to_contain_text("Open page")
    page.wait_for_function("() => { const i = document.querySelector('.browser-shot-row img.browser-shot'); return i && i.complete && i.naturalWidth > 0; }")
    assert page.js_errors == []


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_live_view_at_desktop_width(page, script, browser_live, doc_shot, theme):
    panel, card = watch_the_agent_browse(page, script, browser_live, theme)
    doc_shot(page, f"browser-live-{theme}")
    open_details(card)
    expect(card.locator(".browser-card-url")).to_have_text(browser_live)
    expect(card.locator(".tool-result")).to_contain_text("Next ferry: 14:20 to the island")
    stop_and_check(page, panel)


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_live_view_on_a_phone(phone, script, browser_live, doc_shot, theme):
    page = phone
    panel, _ = watch_the_agent_browse(page, script, browser_live, theme)
    box = panel.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 375
    assert page.evaluate("document.documentElement.scrollWidth") <= 375
    doc_shot(page, f"browser-live-phone-{theme}")
    page.get_by_role("button", name="Hide the live browser view").click()
    expect(panel).to_be_hidden()
    stop_and_check(page, panel)
