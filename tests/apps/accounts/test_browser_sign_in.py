"""A person in a real browser (Playwright driving Debian's chromium): sign in from the landing
page, create a token on the tokens page, sign out."""

from __future__ import annotations

import os

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CHROMIUM = "/usr/bin/chromium"


@pytest.fixture
def page(live_server):
    if not os.path.exists(CHROMIUM):
        pytest.skip("needs Debian's chromium at /usr/bin/chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield browser.new_page(base_url=live_server.url)
        finally:
            browser.close()


def test_sign_in_create_a_token_and_sign_out(user, page):  # user first: made before the browser loop runs
    page.goto("/")
    page.get_by_role("link", name="Sign in").click()
    page.get_by_label("Username or email").fill("alice@example.com")
    page.get_by_label("Password").fill("pw-alice-123")
    page.get_by_label("Remember me").check()
    page.get_by_role("button", name="Sign in").click()
    assert "Signed in as alice" in page.locator("main").inner_text()

    page.get_by_role("link", name="Settings").click()  # from the chat's sidebar to the hub
    page.get_by_role("link", name="Access tokens").click()
    page.get_by_label("Name", exact=True).fill("laptop")
    page.get_by_label("threads:read").check()
    page.get_by_role("button", name="Create token").click()
    token = page.locator("#new-token").input_value()
    assert token.startswith("dfp_") and len(token) >= 36
    assert page.locator("table.tokens").inner_text().count("laptop") == 1

    page.get_by_role("link", name="Sign out").click()
    page.get_by_role("button", name="Sign Out").click()
    assert page.get_by_role("link", name="Sign in").is_visible()
    page.goto("/accounts/tokens/")
    assert "/accounts/login/" in page.url
