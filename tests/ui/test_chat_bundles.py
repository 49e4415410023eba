"""The chat page's modules arrive as one script and one stylesheet (apps/chat/bundles.py) and
the page runs on them: at desktop and phone widths, in both themes."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from apps.chat import bundles
from harness.testing.script import Reply
from tests.ui.chat_page import send


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("viewport", [{"width": 1280, "height": 800}, {"width": 375, "height": 740}], ids=["desktop", "phone"])
def test_the_chat_runs_on_its_two_bundles(viewport, scheme, browser, live, signed_in_state, script):
    context = browser.new_context(base_url=live.url, storage_state=signed_in_state, color_scheme=scheme, viewport=viewport)
    try:
        page = context.new_page()
        js_errors: list[str] = []
        page.on("pageerror", lambda exc: js_errors.append(str(exc)))
        answered: dict[str, int] = {}
        page.on("response", lambda response: answered.__setitem__(response.url.split(live.url, 1)[-1], response.status))
        script(Reply(text="Answered by the bundled page."))
        page.goto("/")
        send(page, "Does the page work?")
        expect(page.locator("article.msg.assistant").last).to_contain_text("Answered by the bundled page.")
        joined = sorted(path for path in answered if path.startswith("/bundles/"))
        # One stylesheet and one script, whichever digest sorts first.
        assert sorted(path.rsplit(".", 1)[-1] for path in joined) == ["css", "js"], joined
        assert all(answered[path] == 200 for path in joined)
        modules = {f"/static/{name}" for name in (*bundles.SCRIPTS, *bundles.STYLES)}
        assert not modules & set(answered), sorted(modules & set(answered))
        # The theme's own sheets still switch with the theme.
        assert page.evaluate("document.documentElement.dataset.theme || 'light'") == scheme
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        assert js_errors == []
    finally:
        context.close()
