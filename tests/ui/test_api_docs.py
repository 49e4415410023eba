"""/api/docs/ (Swagger UI) in a real browser, light and dark, desktop and 375 px: it follows the
site's theme and leads back to the app."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect
from tests.ui.conftest import UI_HANG_MS

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LUMINANCE = """sel => {
    const [r, g, b] = getComputedStyle(document.querySelector(sel)).backgroundColor.match(/\\d+/g).map(Number);
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
}"""


@pytest.mark.parametrize("viewport,scheme", [({"width": 1280, "height": 800}, "light"), ({"width": 375, "height": 740}, "dark")],
                         ids=["desktop-light", "phone-dark"])
def test_the_api_docs_follow_the_theme_and_lead_back(viewport, scheme, browser, live, signed_in_state, doc_shot):
    context = browser.new_context(base_url=live.url, storage_state=signed_in_state, color_scheme=scheme, viewport=viewport)
    context.set_default_timeout(UI_HANG_MS)
    try:
        page = context.new_page()
        page.goto("/api/docs/")
        expect(page.locator(".swagger-ui .info .title")).to_contain_text("DeerFlow API")
        assert page.evaluate("document.documentElement.dataset.theme") == scheme
        bar = page.evaluate(LUMINANCE, ".docs-bar")
        assert bar < 0.3 if scheme == "dark" else bar > 0.8
        # Swagger UI's own panel is turned dark by a filter in the dark theme, and left alone in the light one.
        panel_filter = page.evaluate("getComputedStyle(document.getElementById('swagger-ui')).filter")
        assert ("invert" in panel_filter) == (scheme == "dark")
        doc_shot(page, f"api-docs-{scheme}" + ("-phone" if viewport["width"] == 375 else ""))
        page.get_by_role("link", name="Back to DeerFlow").click()
        expect(page.get_by_label("Message", exact=True)).to_be_visible()
    finally:
        context.close()
