"""A signed-in user who is not staff, opening the operator pages, at 1280 and 375 px in both
themes: the site's own "not allowed" page with the reason and a way back, never a bare 403;
and an unknown address gets the site's 404 the same way."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect
from tests.ui.conftest import UI_HANG_MS


pytestmark = [pytest.mark.browser, pytest.mark.slow]

MEMBER_PASSWORD = "member-pw-4242"
STAFF_PAGES = {"/console/": "console", "/observability/": "observability page", "/settings/mcp": "MCP settings"}


@pytest.fixture
def member_state(live, sign_in):
    live.shell(
        "from apps.accounts.models import User\n"
        f"User.objects.filter(username='visitor').exists() or User.objects.create_user(username='visitor', email='visitor@example.com', password={MEMBER_PASSWORD!r})"
    )
    return sign_in("visitor", MEMBER_PASSWORD)


@pytest.mark.parametrize("viewport,scheme", [({"width": 1280, "height": 800}, "light"), ({"width": 1280, "height": 800}, "dark"),
                                             ({"width": 375, "height": 740}, "light"), ({"width": 375, "height": 740}, "dark")],
                         ids=["desktop-light", "desktop-dark", "phone-light", "phone-dark"])
def test_staff_pages_tell_a_member_why_and_lead_back(viewport, scheme, browser, live, member_state, doc_shot):
    context = browser.new_context(base_url=live.url, storage_state=member_state, color_scheme=scheme, viewport=viewport)
    context.set_default_timeout(UI_HANG_MS)
    try:
        page = context.new_page()
        for path, what in STAFF_PAGES.items():
            response = page.goto(path)
            assert response.status == 403, path
            expect(page.get_by_role("heading", name="You can't open this page")).to_be_visible()
            expect(page.locator("main")).to_contain_text(what)
            expect(page.locator("main")).to_contain_text("signed in as visitor")
            # The site's page: its top bar, and the way back drawn as the site's button.
            expect(page.locator(".site-topbar")).to_be_visible()
            back = page.get_by_role("link", name="Back to chat")
            assert back.evaluate("a => getComputedStyle(a).backgroundColor") == page.evaluate(
                "(() => { const p = document.createElement('p'); p.style.color = 'var(--accent)'; document.body.append(p); "
                "const c = getComputedStyle(p).color; p.remove(); return c; })()")
            assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), path
        doc_shot(page, f"forbidden-{scheme}" + ("-phone" if viewport["width"] == 375 else ""))
        page.get_by_role("link", name="Back to chat").click()
        expect(page.get_by_label("Message", exact=True)).to_be_visible()

        missing = page.goto("/no-such-page/")
        assert missing.status == 404
        expect(page.get_by_role("heading", name="Page not found")).to_be_visible()
        expect(page.get_by_role("link", name="Back to DeerFlow")).to_be_visible()
    finally:
        context.close()
