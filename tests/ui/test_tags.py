"""Chat tags in a real browser, 1280 px light and 375 px dark: tag the open chat from its header,
another from its sidebar entry, see the tags on each entry, filter the sidebar by one tag and
by two (every one of them), and find the filter and the tags still there after a reload."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect
from tests.ui.conftest import UI_HANG_MS

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TITLES = ["Lisbon trip budget", "SQLite vs PostgreSQL", "Quarterly report draft"]


def user_with_chats(live, username: str) -> dict[str, str]:
    out = live.shell(
        "import json\n"
        "from apps.accounts.models import User\nfrom apps.threads.models import Thread\nfrom apps.runs.models import Run\n"
        f"u = User.objects.filter(username={username!r}).first() or User.objects.create_user(username={username!r}, password='pw-tags-123')\n"
        "ids = {}\n"
        f"for title in {TITLES!r}:\n"
        f"    t, made = Thread.objects.get_or_create(id='tag-{username}-' + title.split()[0].lower(), owner=u, defaults={{'title': title}})\n"
        "    made and Run.objects.create(thread=t, owner=u, status='success')\n"
        "    ids[title] = t.pk\n"
        "print(json.dumps(ids))\n")
    return json.loads(out.strip().splitlines()[-1])


def entry(page, thread_id):
    return page.locator(f'.thread-item[data-thread="{thread_id}"]')


def show_sidebar(page, phone: bool) -> None:
    if phone:
        page.get_by_role("button", name="Show chats").click()
        page.wait_for_function("document.getElementById('sidebar').getBoundingClientRect().left >= 0")


@pytest.mark.parametrize("viewport,scheme", [({"width": 1280, "height": 800}, "light"), ({"width": 375, "height": 740}, "dark")],
                         ids=["desktop-light", "phone-dark"])
def test_tag_chats_from_the_header_and_the_sidebar_and_filter_by_them(viewport, scheme, browser, live, sign_in, doc_shot):
    phone = viewport["width"] == 375
    username = "tagger-phone" if phone else "tagger"
    ids = user_with_chats(live, username)
    context = browser.new_context(base_url=live.url, storage_state=sign_in(username, "pw-tags-123"), color_scheme=scheme, viewport=viewport)
    context.set_default_timeout(UI_HANG_MS)
    suffix = f"-{scheme}" + ("-phone" if phone else "")
    try:
        page = context.new_page()
        lisbon, sqlite, report = ids["Lisbon trip budget"], ids["SQLite vs PostgreSQL"], ids["Quarterly report draft"]
        page.goto(f"/c/{lisbon}/")
        page.wait_for_function("document.body.dataset.ready === '1'")
        expect(page.locator("#tag-filter")).to_be_hidden()  # no tags yet: no filter row

        # The open chat, from its header: two new tags.
        page.get_by_role("button", name="Tags for this chat").click()
        dialog = page.get_by_role("dialog", name="Tags for “Lisbon trip budget”")
        expect(dialog).to_be_visible()
        new = dialog.get_by_label("New tag")
        new.fill("travel")
        new.press("Enter")
        new.fill("ideas")
        dialog.get_by_role("button", name="Add").click()
        expect(dialog.get_by_role("checkbox", name="travel")).to_be_checked()
        expect(dialog.get_by_role("checkbox", name="ideas")).to_be_checked()
        doc_shot(page, "tags-dialog" + suffix)
        dialog.get_by_role("button", name="Save").click()
        expect(dialog).to_be_hidden()
        expect(page.get_by_role("button", name="Tags for this chat: ideas, travel")).to_be_focused()

        # Another chat, from its sidebar entry: an existing tag ticked.
        show_sidebar(page, phone)
        expect(entry(page, lisbon).locator(".thread-tags")).to_have_text("Tags: ideastravel")
        entry(page, sqlite).get_by_role("button", name="Tags for SQLite vs PostgreSQL").click()
        dialog = page.get_by_role("dialog", name="Tags for “SQLite vs PostgreSQL”")
        dialog.get_by_role("checkbox", name="ideas").check()
        expect(dialog.get_by_role("checkbox", name="travel")).not_to_be_checked()
        dialog.get_by_role("button", name="Save").click()
        expect(entry(page, sqlite).locator(".thread-tags")).to_contain_text("ideas")

        # The filter: one tag, then two (chats carrying both), then one again.
        show_sidebar(page, phone) if phone and page.evaluate("!document.body.classList.contains('sidebar-open')") else None
        filters = page.get_by_role("group", name="Filter chats by tag")
        expect(filters.get_by_role("button", name="ideas 2")).to_be_visible()
        filters.get_by_role("button", name="ideas 2").click()
        expect(filters.get_by_role("button", name="ideas 2")).to_have_attribute("aria-pressed", "true")
        expect(page.locator(".thread-item")).to_have_count(2)
        expect(entry(page, report)).to_have_count(0)
        filters.get_by_role("button", name="travel 1").click()
        expect(page.locator(".thread-item")).to_have_count(1)
        expect(entry(page, lisbon)).to_be_visible()
        doc_shot(page, "tags-filter" + suffix)
        # The tag list failing to load (as when a reload cuts the request) forgets no choice.
        page.route("**/api/tags", lambda route: route.abort())
        with page.expect_event("requestfailed", predicate=lambda r: r.url.endswith("/api/tags")):
            filters.get_by_role("button", name="travel 1").click()
        expect(page.locator(".thread-item")).to_have_count(2)
        expect(filters.get_by_role("button", name="ideas 2")).to_have_attribute("aria-pressed", "true")
        page.unroute("**/api/tags")

        # A reload keeps the tags and the filter.
        page.reload()
        page.wait_for_function("document.body.dataset.ready === '1'")
        show_sidebar(page, phone)
        filters = page.get_by_role("group", name="Filter chats by tag")
        expect(filters.get_by_role("button", name="ideas 2")).to_have_attribute("aria-pressed", "true")
        expect(page.locator(".thread-item")).to_have_count(2)
        filters.get_by_role("button", name="Show all").click()
        expect(page.locator(".thread-item")).to_have_count(3)
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    finally:
        context.close()
