"""Every page once on a 375 px phone in the dark theme: no sideways scroll (non-chat pages),
the dark theme applied from the system setting, the favicon found (no 404 on any page), the
shared navigation present; then the same pages' light and dark documentation shots."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect
from tests.ui.conftest import UI_HANG_MS

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PHONE = {"width": 375, "height": 740}
DESKTOP = {"width": 1280, "height": 800}
# (path, name for the screenshot, is the chat page)
PAGES = [
    ("/settings/", "settings", False),
    ("/schedules/", "schedules", False),
    ("/skills/", "skills", False),
    ("/memory/", "memory-page", False),
    ("/agents/", "agents", False),
    ("/approvals/", "approvals", False),
    ("/usage/", "usage", False),
    ("/console/", "console", False),
    ("/observability/", "observability", False),
    ("/settings/mcp", "mcp", False),
    ("/accounts/tokens/", "tokens", False),
    ("/accounts/password/change/", "account-password", False),
    ("/accounts/email/", "account-email", False),
    ("/", "chat", True),
]


DOC_SHOTS = {"settings", "schedules", "tokens", "chat", "skills"}


def open_context(browser, live, state, *, viewport, scheme):
    context = browser.new_context(base_url=live.url, storage_state=state, viewport=viewport, color_scheme=scheme)
    context.set_default_timeout(UI_HANG_MS)
    page = context.new_page()
    page.missing = []
    page.js_errors = []
    page.on("response", lambda r: page.missing.append(r.url) if r.status == 404 else None)
    page.on("pageerror", lambda exc: page.js_errors.append(str(exc)))
    return context, page


def test_every_page_fits_a_phone_in_the_dark_theme_with_a_favicon(browser, live, signed_in_state, doc_shot):
    context, page = open_context(browser, live, signed_in_state, viewport=PHONE, scheme="dark")
    try:
        for path, name, is_chat in PAGES:
            page.goto(path)
            page.wait_for_load_state("load")
            assert page.evaluate("document.documentElement.dataset.theme") == "dark", path
            # the page's own background follows: no light card left on a dark page
            assert page.evaluate("getComputedStyle(document.body).backgroundColor") in ("rgb(17, 19, 23)", "rgb(24, 27, 33)"), path
            if not is_chat:  # the chat page's phone layout is its own (a drawer), tested with the chat
                width = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
                assert width[0] <= width[1], f"{path} scrolls sideways at 375 px: {width}"
                nav = page.get_by_role("navigation", name="Main")
                expect(nav.get_by_role("link", name="Chat")).to_be_visible()
                expect(nav.get_by_role("link", name="Settings")).to_be_visible()
            assert page.locator("link[rel=icon][type='image/svg+xml']").count() == 1, path
            if name in DOC_SHOTS:
                doc_shot(page, f"{name}-phone-dark")
        # the browser's own request for /favicon.ico (pages without our <link>, like the admin) is answered too
        assert page.request.get("/favicon.ico").ok
        assert not [u for u in page.missing if "favicon" in u], page.missing
        assert page.missing == [], page.missing
        assert page.js_errors == [], page.js_errors
    finally:
        context.close()


def test_the_skip_link_and_focus_ring_are_there_for_keyboard_users(page):
    page.goto("/schedules/")
    page.keyboard.press("Tab")
    skip = page.get_by_role("link", name="Skip to content")
    expect(skip).to_be_focused()
    expect(skip).to_be_in_viewport()
    ring = page.evaluate("(() => { const s = getComputedStyle(document.activeElement); return [s.outlineStyle, s.outlineWidth]; })()")
    assert ring == ["solid", "3px"]
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "main"


def test_appearance_toggle_switches_and_persists(page, doc_shot):
    page.goto("/settings/")
    appearance = page.get_by_role("radiogroup", name="Theme")
    expect(appearance.get_by_role("radio", name="System")).to_be_checked()
    appearance.get_by_text("Dark").click()
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"
    doc_shot(page, "settings-dark")
    page.goto("/schedules/")
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"  # stored, applied on the next page
    page.goto("/settings/")
    expect(page.get_by_role("radiogroup", name="Theme").get_by_role("radio", name="Dark")).to_be_checked()
    page.get_by_role("radiogroup", name="Theme").get_by_text("Light").click()
    assert page.evaluate("document.documentElement.dataset.theme") == "light"
    doc_shot(page, "settings")


def test_desktop_documentation_shots_light_and_dark(browser, live, signed_in_state, doc_shot):
    for scheme in ("light", "dark"):
        context, page = open_context(browser, live, signed_in_state, viewport=DESKTOP, scheme=scheme)
        try:
            for path, name in (("/schedules/", "site-schedules"), ("/accounts/tokens/", "tokens"), ("/", "chat-home")):
                page.goto(path)
                page.wait_for_load_state("load")
                width = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
                assert width[0] <= width[1], path
                doc_shot(page, name if scheme == "light" else f"{name}-dark")
        finally:
            context.close()
