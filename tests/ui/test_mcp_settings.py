"""The MCP settings page in a real browser, against real stdio servers: status, tools, test
connection, the last error with the crashed server's stderr, and a per-thread server, at
desktop width (light) and on a 375 px phone (light and dark)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from playwright.sync_api import expect
from tests.ui.conftest import UI_HANG_MS

pytestmark = [pytest.mark.browser, pytest.mark.slow]
SERVERS = str(Path(__file__).parents[1] / "harness" / "mcp" / "servers.py")


@pytest.fixture
def mcp_live(live):
    path = Path(live.env["DEER_FLOW_EXTENSIONS_CONFIG_PATH"])
    original = path.read_text() if path.exists() else None
    path.write_text(json.dumps({"mcpServers": {
        "calculator": {"command": sys.executable, "args": [SERVERS, "stdio"], "description": "adds numbers",
                       "env": {"CALC_API_KEY": "sk-live-secret"}},
        "broken": {"command": sys.executable, "args": [SERVERS, "stdio", "crash"]},
        "notebook": {"command": sys.executable, "args": [SERVERS, "stdio", "stateful"], "session_scope": "thread"},
        "drafts": {"enabled": False, "type": "http", "url": ""},
    }}))
    yield live
    if original is None:
        path.unlink(missing_ok=True)
    else:
        path.write_text(original)


def _check_page(page):
    page.goto("/settings/mcp")
    calc = page.locator('tr[data-server="calculator"]')
    expect(calc).to_be_visible()
    expect(page.locator('tr[data-server="drafts"] .status')).to_have_text("disabled")
    calc.get_by_role("button", name="Test connection").click()
    expect(calc.locator(".status")).to_have_text("ready")
    expect(calc.locator(".tool-list")).to_contain_text("add")
    broken = page.locator('tr[data-server="broken"]')
    broken.get_by_role("button", name="Test connection").click()
    expect(broken.locator(".status")).to_have_text("error")
    expect(broken.locator(".last-error")).to_contain_text("boom: this server cannot start")  # its stderr
    notebook = page.locator('tr[data-server="notebook"]')
    notebook.get_by_role("button", name="Test connection").click()
    expect(notebook.locator(".status")).to_have_text("ready")
    expect(notebook.locator(".session-scope")).to_have_text("per thread · 0 open")
    assert "sk-live-secret" not in page.content()
    assert '"CALC_API_KEY": "********"' in page.locator("#mcp-json").input_value()


def test_mcp_settings_at_desktop_width(page, mcp_live, doc_shot):
    _check_page(page)
    assert not page.js_errors
    doc_shot(page, "mcp-settings-desktop")


def test_mcp_settings_on_a_phone(phone, mcp_live, doc_shot):
    _check_page(phone)
    assert phone.evaluate("document.documentElement.scrollWidth") <= 375
    assert not phone.js_errors
    phone.evaluate("window.scrollTo(0, 0)")
    doc_shot(phone, "mcp-settings-phone")


def test_mcp_settings_on_a_phone_in_the_dark(browser, live, signed_in_state, mcp_live, doc_shot):
    context = browser.new_context(base_url=live.url, storage_state=signed_in_state, color_scheme="dark",
                                  viewport={"width": 375, "height": 740})
    context.set_default_timeout(UI_HANG_MS)
    try:
        phone = context.new_page()
        _check_page(phone)
        assert phone.evaluate("document.documentElement.dataset.theme") == "dark"
        assert phone.evaluate("document.documentElement.scrollWidth") <= 375
        phone.evaluate("window.scrollTo(0, 0)")
        doc_shot(phone, "mcp-settings-phone-dark")
        doc_shot(phone.locator('tr[data-server="notebook"]'), "mcp-settings-thread-server-phone-dark")
    finally:
        context.close()


def test_toggling_a_server_from_the_page(page, mcp_live):
    page.goto("/")
    page.get_by_role("link", name="MCP servers").click()  # staff find the page from the chat
    page.wait_for_url("**/settings/mcp")
    row = page.locator('tr[data-server="drafts"]')
    row.get_by_role("button", name="Enable").click()
    expect(page.locator("#mcp-error")).to_contain_text("mcp_servers.drafts: a http server needs 'url'")
    calc = page.locator('tr[data-server="calculator"]')
    calc.get_by_role("button", name="Disable").click()
    expect(calc.locator(".status")).to_have_text("disabled")
