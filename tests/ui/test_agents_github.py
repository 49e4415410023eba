"""The agent editor's GitHub control in a real browser, at 1280 px and 375 px in light and
dark: repositories and the events that start the agent are saved as its ``github`` block and
shown again when the agent is opened."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect
from tests.ui.conftest import UI_HANG_MS

pytestmark = [pytest.mark.browser, pytest.mark.slow]

VIEWPORTS = [({"width": 1280, "height": 800}, "light"), ({"width": 1280, "height": 800}, "dark"),
             ({"width": 375, "height": 740}, "light"), ({"width": 375, "height": 740}, "dark")]


@pytest.mark.parametrize("viewport,scheme", VIEWPORTS, ids=["desktop-light", "desktop-dark", "phone-light", "phone-dark"])
def test_the_github_block_is_edited_in_the_agent_editor(viewport, scheme, browser, live, signed_in_state, doc_shot):
    context = browser.new_context(base_url=live.url, storage_state=signed_in_state, color_scheme=scheme, viewport=viewport)
    context.set_default_timeout(UI_HANG_MS)
    phone = viewport["width"] == 375
    name = f"gh-{'phone' if phone else 'desk'}-{scheme}"
    try:
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto("/agents/")
        page.get_by_role("button", name="Create with a form").click()
        page.get_by_label("Name", exact=True).fill(name)
        page.get_by_label("Repositories, one per line").fill("octo/hello\nocto/world")
        page.get_by_role("checkbox", name="Pull request opened").check()
        page.get_by_role("checkbox", name="Pull request updated (new commits)").check()
        page.get_by_role("checkbox", name="Label added").check()
        page.get_by_label("Labels (comma-separated)").fill("triage, needs-review")
        page.get_by_label("Bot login").fill("review-bot")
        page.get_by_role("button", name="Save").click()
        expect(page.locator("#editor-version")).to_contain_text("Saved · version 1")
        saved = page.evaluate(f"fetch('/api/agents/{name}').then(r => r.json())")
        triggers = {"pull_request": {"actions": ["opened", "synchronize", "labeled"], "labels": ["triage", "needs-review"]},
                    "issues": {"actions": ["labeled"], "labels": ["triage", "needs-review"]}}
        assert saved["github"] == {"bot_login": "review-bot", "bindings": [{"repo": "octo/hello", "triggers": triggers},
                                                                           {"repo": "octo/world", "triggers": triggers}]}
        fieldset = page.locator("#f-github")
        fieldset.evaluate("e => e.scrollIntoView({block: 'end'})")  # below the sticky top bar
        doc_shot(fieldset, f"agents-github-{scheme}{'-phone' if phone else ''}")
        if phone:
            assert page.evaluate("document.documentElement.scrollWidth") <= 375

        # A bad repository is refused with the server's reason; reopening shows what was saved.
        page.get_by_label("Repositories, one per line").fill("not a repository")
        page.get_by_role("button", name="Save").click()
        expect(page.locator("#form-error")).to_contain_text("github.bindings.0.repo")
        page.reload()
        page.get_by_role("button", name=f"Edit {name}").click()
        expect(page.get_by_label("Repositories, one per line")).to_have_value("octo/hello\nocto/world")
        expect(page.get_by_role("checkbox", name="Pull request updated (new commits)")).to_be_checked()
        expect(page.get_by_role("checkbox", name="Issue opened")).not_to_be_checked()
        expect(page.get_by_label("Labels (comma-separated)")).to_have_value("triage, needs-review")
        assert errors == []
    finally:
        context.close()
