"""Installing a skill for everyone from the Skills page: the control only an admin sees, the
global row every user then sees (with no delete for a non-admin), at desktop and phone width."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.support import skill_archives as sa
from tests.ui.conftest import _finish, _open_page

pytestmark = [pytest.mark.browser, pytest.mark.slow]
MEMBER_PASSWORD = "pw-member-456"


def row(page, name):
    return page.locator(f'tr[data-skill="{name}"]')


def install(page, data: bytes, name: str, *, everyone: bool):
    page.locator("#skill-file").set_input_files([{"name": name, "mimeType": "application/zip", "buffer": data}])
    box = page.get_by_label("Install for everyone")
    box.check() if everyone else box.uncheck()
    page.get_by_role("button", name="Install").click()


@pytest.fixture
def member_state(live, sign_in):
    """A second, non-admin account, signed in through the real form."""
    live.shell(
        "from apps.accounts.models import User\n"
        f"User.objects.filter(username='member').exists() or User.objects.create_user(username='member', email='member@example.com', password={MEMBER_PASSWORD!r})"
    )
    return sign_in("member", MEMBER_PASSWORD)


@pytest.fixture
def member_page(request, browser, live, member_state):
    context, page = _open_page(request, browser, live, storage_state=member_state)
    yield page
    _finish(request, context, page)


@pytest.fixture
def member_phone(request, browser, live, member_state):
    context, page = _open_page(request, browser, live, storage_state=member_state, viewport={"width": 375, "height": 740})
    yield page
    _finish(request, context, page)


def test_admin_installs_for_everyone_and_a_member_sees_it(page, member_page, doc_shot):
    page.goto("/skills/")
    install(page, sa.good("team-way", version="1.0"), "team-way.skill", everyone=True)
    expect(page.locator("#install-result")).to_contain_text("Skill 'team-way' installed for everyone.")
    expect(row(page, "team-way").locator(".source")).to_have_text("global")
    expect(page.get_by_role("button", name="Delete team-way")).to_be_visible()
    # a second install for everyone keeps the first for rollback
    install(page, sa.good("team-way", version="2.0"), "team-way.skill", everyone=True)
    expect(page.locator("#install-result")).to_contain_text("updated for everyone")
    expect(row(page, "team-way")).to_contain_text("2.0")
    page.get_by_role("button", name="Read team-way").click()
    expect(page.locator("#detail-meta")).to_contain_text("/mnt/skills/global/team-way")
    page.get_by_role("button", name="Roll back to 1.0").click()
    expect(row(page, "team-way")).to_contain_text("1.0")
    doc_shot(page, "skills-global")

    member_page.goto("/skills/")
    expect(row(member_page, "team-way").locator(".source")).to_have_text("global")
    expect(row(member_page, "team-way")).to_contain_text("1.0")
    expect(member_page.get_by_label("Install for everyone")).to_have_count(0)
    expect(member_page.get_by_role("button", name="Delete team-way")).to_have_count(0)
    # the member can still turn it off for themselves only
    member_page.get_by_label("Enable team-way").uncheck()
    expect(row(member_page, "team-way")).to_contain_text("Off")
    page.reload()
    expect(page.get_by_label("Enable team-way")).to_be_checked()
    page.get_by_role("button", name="Delete team-way").click()

    page.get_by_role("alertdialog").get_by_role("button", name="Delete").click()  # the site's dialog, not confirm()
    expect(row(page, "team-way")).to_have_count(0)
    member_page.reload()
    expect(row(member_page, "skill-creator")).to_be_visible()
    expect(row(member_page, "team-way")).to_have_count(0)
    assert page.js_errors == [] and member_page.js_errors == []


def test_admin_control_and_global_row_fit_a_phone(phone, member_phone, doc_shot):
    phone.goto("/skills/")
    install(phone, sa.good("phone-team", version="1.0"), "phone-team.skill", everyone=True)
    expect(row(phone, "phone-team").locator(".source")).to_have_text("global")
    expect(phone.get_by_label("Install for everyone")).to_be_visible()
    assert phone.evaluate("document.documentElement.scrollWidth") <= 375
    phone.get_by_label("Install for everyone").scroll_into_view_if_needed()
    doc_shot(phone, "skills-global-phone")

    member_phone.goto("/skills/")
    expect(row(member_phone, "phone-team").locator(".source")).to_have_text("global")
    expect(member_phone.get_by_label("Install for everyone")).to_have_count(0)
    assert member_phone.evaluate("document.documentElement.scrollWidth") <= 375
    phone.get_by_role("button", name="Delete phone-team").click()

    phone.get_by_role("alertdialog").get_by_role("button", name="Delete").click()  # the site's dialog, not confirm()
    expect(row(phone, "phone-team")).to_have_count(0)
    assert phone.js_errors == [] and member_phone.js_errors == []
