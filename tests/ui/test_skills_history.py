"""The history of a skill the agent keeps (``skill_manage``) on the Skills page: each change
with its file, its text before and after, and Restore, which puts the earlier text back and is
itself listed; at desktop and phone width, in light and dark."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def agent_kept(live, name: str) -> None:
    """Three changes made the way the tool makes them (scanned, renamed into place, recorded)."""
    live.shell(
        "from apps.accounts.models import User\n"
        "from harness.skills.manage import SkillChange, commit_change, get_skill_history_store, prepare_change\n"
        "user = User.objects.get(username='tester')\n"
        f"name = '{name}'\n"
        "md = f'---\\nname: {name}\\ndescription: How the weekly report is built.\\n---\\n# Weekly report\\n1. Pull the numbers.\\n2. Chart them.\\n'\n"
        "steps = [dict(action='create', content=md),\n"
        "         dict(action='patch', find='2. Chart them.', replace='2. Chart them as bars.'),\n"
        "         dict(action='write_file', path='references/sources.md', content='Numbers come from the sales export.\\n')]\n"
        "for step in steps:\n"
        "    c = prepare_change(user_id=str(user.pk), name=name, **step)\n"
        "    commit_change(c)\n"
        "    get_skill_history_store().record(SkillChange(user_id=str(user.pk), name=name, action=step['action'],\n"
        "        file_path=c.file_path, prev_content=c.prev_content, new_content=c.new_content, thread_id='t-weekly'))\n"
    )


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_history_lists_the_agents_changes_and_restores_one(browser, live, signed_in_state, doc_shot, scheme):
    name = f"weekly-{scheme}"
    agent_kept(live, name)
    context = browser.new_context(base_url=live.url, storage_state=signed_in_state, color_scheme=scheme,
                                  viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto("/skills/")
        page.get_by_role("button", name=f"Read {name}").click()
        history = page.locator("#detail-history")
        expect(history).to_be_visible()
        rows = history.locator(".history-row")
        expect(rows).to_have_count(3)
        expect(rows.nth(0)).to_contain_text("wrote references/sources.md")
        expect(rows.nth(1)).to_contain_text("patched SKILL.md")
        expect(rows.nth(2)).to_contain_text("created")
        expect(rows.nth(2).get_by_role("button", name="Restore")).to_have_count(0)  # nothing before a create
        expect(rows.nth(0).get_by_role("link", name="in a chat")).to_have_attribute("href", "/c/t-weekly/")
        rows.nth(1).locator("summary").click()
        expect(rows.nth(1).locator(".history-diff")).to_contain_text("2. Chart them as bars.")
        expect(page.locator("#detail-body")).to_contain_text("Chart them as bars")
        history.scroll_into_view_if_needed()
        doc_shot(page, f"skills-history-{scheme}")

        rows.nth(1).get_by_role("button", name="Restore").click()
        page.get_by_role("dialog").get_by_role("button", name="Restore").click()
        expect(page.locator("#install-result")).to_contain_text(f"Restored SKILL.md of '{name}'")
        expect(page.locator("#detail-body")).not_to_contain_text("as bars")
        expect(rows).to_have_count(4)
        expect(rows.nth(0)).to_contain_text("restored SKILL.md")

        page.set_viewport_size({"width": 375, "height": 740})
        history.scroll_into_view_if_needed()
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 375, f"the page scrolls sideways on a phone ({width}px)"
        doc_shot(page, f"skills-history-phone-{scheme}")
        assert errors == []
    finally:
        context.close()
