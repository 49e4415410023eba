"""The command palette in a real browser, 1280 px light and 375 px dark: Ctrl+K (or, on a phone,
the search button) opens it; a fuzzy query finds a chat by its title, the arrow keys move through
the options (aria-activedescendant on the box, aria-selected on the option) and Enter opens it;
Esc closes it and gives the focus back; it switches the agent of a new chat, toggles the theme,
opens settings pages (staff-only ones for staff only) and lists the keyboard shortcuts;
Ctrl+Shift+O starts a new chat from anywhere."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import expect

from tests.ui.test_chat import send
from tests.ui.conftest import UI_HANG_MS

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TITLES = ["Lisbon trip budget", "SQLite vs PostgreSQL", "Quarterly report draft"]


def chats(live, username: str, titles: list[str]) -> dict[str, str]:
    """Started chats (each has a finished run, as the sidebar and the palette list) by title."""
    out = live.shell(
        "import json\n"
        "from apps.accounts.models import User\nfrom apps.threads.models import Thread\nfrom apps.runs.models import Run\n"
        f"u = User.objects.get(username={username!r})\nids = {{}}\n"
        f"for title in {titles!r}:\n"
        f"    t, made = Thread.objects.get_or_create(id='pal-{username}-' + title.split()[0].lower(), owner=u, defaults={{'title': title}})\n"
        "    made and Run.objects.create(thread=t, owner=u, status='success')\n"
        "    ids[title] = t.pk\n"
        "print(json.dumps(ids))\n")
    return json.loads(out.strip().splitlines()[-1])


def opened(page, phone: bool):
    if phone:
        page.get_by_role("button", name="Search and commands").click()
    else:
        page.keyboard.press("Control+k")
    dialog = page.get_by_role("dialog", name="Command palette")
    expect(dialog).to_be_visible()
    expect(page.get_by_role("combobox", name="Go to a chat, page or command")).to_be_focused()
    return dialog


@pytest.mark.parametrize("viewport,scheme", [({"width": 1280, "height": 800}, "light"), ({"width": 375, "height": 740}, "dark")],
                         ids=["desktop-light", "phone-dark"])
def test_the_palette_jumps_to_a_chat_by_a_fuzzy_title_from_the_keyboard(viewport, scheme, browser, live, signed_in_state, doc_shot):
    ids = chats(live, "tester", TITLES)
    phone = viewport["width"] == 375
    context = browser.new_context(base_url=live.url, storage_state=signed_in_state, color_scheme=scheme, viewport=viewport)
    context.set_default_timeout(UI_HANG_MS)
    try:
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto("/")
        page.wait_for_function("document.body.dataset.ready === '1'")
        dialog = opened(page, phone)
        box = page.get_by_role("combobox", name="Go to a chat, page or command")
        listbox = page.get_by_role("listbox", name="Results")
        expect(listbox.get_by_role("option", name="Lisbon trip budget")).to_be_visible()  # a recent chat, before typing
        expect(listbox.get_by_role("option", name=re.compile(r"^New chat( Ctrl Shift O)?$"))).to_be_visible()
        doc_shot(page, f"palette-{scheme}" + ("-phone" if phone else ""))

        box.fill("lsbn bdgt")  # letters of the title, in order, not a word of it
        first = listbox.get_by_role("option").first
        expect(first).to_contain_text("Lisbon trip budget")
        expect(first).to_have_attribute("aria-selected", "true")
        assert box.get_attribute("aria-activedescendant") == first.get_attribute("id")
        doc_shot(page, f"palette-fuzzy-{scheme}" + ("-phone" if phone else ""))

        box.fill("")
        options = listbox.get_by_role("option")
        expect(options.first).to_have_attribute("aria-selected", "true")
        box.press("ArrowDown")
        second = options.nth(1)
        expect(second).to_have_attribute("aria-selected", "true")
        expect(options.first).to_have_attribute("aria-selected", "false")
        assert box.get_attribute("aria-activedescendant") == second.get_attribute("id")
        box.press("ArrowUp")
        box.press("ArrowUp")  # wraps round to the last option
        expect(options.last).to_have_attribute("aria-selected", "true")
        box.fill("sqlite")
        expect(options.first).to_contain_text("SQLite vs PostgreSQL")
        expect(options.first).to_have_attribute("aria-selected", "true")
        box.press("Enter")
        expect(page).to_have_url(f"{live.url}/c/{ids['SQLite vs PostgreSQL']}/")
        expect(dialog).to_be_hidden()
        assert not errors, errors
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    finally:
        context.close()


def test_escape_closes_the_palette_and_the_focus_goes_back(page, phone, doc_shot):
    page.goto("/")
    page.wait_for_function("document.body.dataset.ready === '1'")
    page.get_by_label("Search chats").focus()
    opened(page, False)
    page.keyboard.press("Tab")  # the focus stays inside the dialog
    assert page.evaluate("document.getElementById('palette').contains(document.activeElement)")
    page.keyboard.press("Escape")
    expect(page.get_by_role("dialog", name="Command palette")).to_be_hidden()
    expect(page.get_by_label("Search chats")).to_be_focused()

    phone.goto("/settings/")  # another page: the top bar's button opens the same palette
    button = phone.get_by_role("button", name="Search and commands")
    expect(button).to_be_visible()
    doc_shot(phone, "palette-topbar-light-phone")
    opened(phone, True)
    phone.keyboard.press("Escape")
    expect(button).to_be_focused()


def test_commands_switch_agent_toggle_theme_and_open_settings_pages(page, live, sign_in, script):
    live.shell(
        "from apps.accounts.models import User\nfrom apps.agents.models import Agent\n"
        "u = User.objects.get(username='tester')\n"
        "Agent.objects.get_or_create(owner=u, name='poet', defaults={'display_name': 'Poet', 'avatar': '🪶'})\n")
    # A chat whose title holds p…o…e…t scattered, and the word "themes": neither may outrank
    # the agent named Poet or the theme switch.
    script("Happy to.")
    page.goto("/")
    send(page, "Please compare three themes")
    expect(page.locator("article.msg.assistant").last).to_contain_text("Happy to.")
    page.goto("/")
    page.wait_for_function("document.body.dataset.ready === '1'")
    box = page.get_by_role("combobox", name="Go to a chat, page or command")

    # Switch agent: on a new chat the picker changes in place and the composer has the focus.
    opened(page, False)
    box.fill("poet")
    expect(page.get_by_role("listbox", name="Results").get_by_role("option").first).to_contain_text("New chat with Poet")
    box.press("Enter")
    expect(page.get_by_role("dialog", name="Command palette")).to_be_hidden()
    assert page.locator("#agent option:checked").inner_text().endswith("Poet")
    expect(page.get_by_label("Message", exact=True)).to_be_focused()

    # Toggle theme: it flips, and stays flipped after a reload.
    before = page.evaluate("document.documentElement.dataset.theme")
    opened(page, False)
    box.fill("theme")
    expect(page.get_by_role("listbox", name="Results").get_by_role("option").first).to_contain_text("theme")
    expect(page.get_by_role("listbox", name="Results").get_by_role("option").first).not_to_have_attribute("data-chat", re.compile("."))
    box.press("Enter")
    after = page.evaluate("document.documentElement.dataset.theme")
    assert {before, after} == {"light", "dark"}
    page.reload()
    assert page.evaluate("document.documentElement.dataset.theme") == after

    # Settings pages: every one this staff user can reach, MCP servers included.
    opened(page, False)
    box.fill("settings")
    listbox = page.get_by_role("listbox", name="Results")
    for name in ("Settings: Access tokens", "Settings: Memory", "Settings: Skills", "Settings: Agents", "Settings: MCP servers"):
        expect(listbox.get_by_role("option", name=re.compile("^" + re.escape(name)))).to_be_visible()
    box.fill("access tokens")
    box.press("Enter")
    expect(page).to_have_url(f"{live.url}/accounts/tokens/")
    # The URL changes before the new page's deferred palette script has run: a key pressed
    # in that gap reaches no listener.
    page.wait_for_load_state("domcontentloaded")

    # Shortcuts: "?" outside a text box lists them; the footer shows the main ones.
    page.locator("body").click(position={"x": 5, "y": 300})
    page.keyboard.press("?")
    help_view = page.get_by_role("region", name="Keyboard shortcuts")
    expect(help_view).to_be_visible()
    expect(help_view).to_contain_text("New chat")
    expect(help_view).to_contain_text("Open or close this palette")
    page.keyboard.press("Escape")  # back to the palette
    expect(page.locator(".palette-foot")).to_contain_text("new chat")
    page.keyboard.press("Escape")
    page.keyboard.press("Control+/")  # DeerFlow's key for the same list
    expect(help_view).to_be_visible()
    page.keyboard.press("Escape")

    # Ctrl+Shift+O: a new chat from any page.
    page.keyboard.press("Escape")
    page.keyboard.press("Control+Shift+O")
    expect(page).to_have_url(f"{live.url}/")

    # A user who is not staff is offered no staff page.
    live.shell("from apps.accounts.models import User\n"
               "User.objects.filter(username='walker').exists() or User.objects.create_user(username='walker', password='pw-walker-123')\n")
    context = page.context.browser.new_context(base_url=live.url, storage_state=sign_in("walker", "pw-walker-123"))
    try:
        other = context.new_page()
        other.goto("/")
        other.wait_for_function("document.body.dataset.ready === '1'")
        opened(other, False)
        labels = other.evaluate("[...document.querySelectorAll('#palette-list [role=option]')].map(o => o.textContent)")
        assert any("Settings: Access tokens" in label for label in labels)
        for staff_only in ("MCP servers", "Console", "Observability", "Admin"):
            assert not any(staff_only in label for label in labels), labels
        assert not any(t in label for t in TITLES for label in labels)  # another user's chats never show
    finally:
        context.close()
