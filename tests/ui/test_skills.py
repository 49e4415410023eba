"""The Skills page in a browser: the public skills listed, enable/disable, SKILL.md rendered,
install with findings, reinstall and rollback, a refused archive; the phone layout; and "/"
completion in the chat composer."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.support import skill_archives as sa

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def row(page, name):
    return page.locator(f'tr[data-skill="{name}"]')


def upload(page, data: bytes, name: str):
    page.locator("#skill-file").set_input_files([{"name": name, "mimeType": "application/zip", "buffer": data}])
    page.get_by_role("button", name="Install").click()


def test_browse_toggle_read_install_rollback_and_refuse(page, doc_shot):
    page.goto("/skills/")
    for name in ("deep-research", "data-analysis", "skill-creator"):
        expect(row(page, name)).to_contain_text(f"/{name}")
    expect(row(page, "data-analysis").locator(".source")).to_have_text("public")

    toggle = page.get_by_label("Enable data-analysis")
    expect(toggle).to_be_checked()
    toggle.uncheck()
    expect(row(page, "data-analysis")).to_contain_text("Off")
    page.reload()
    expect(page.get_by_label("Enable data-analysis")).not_to_be_checked()
    page.get_by_label("Enable data-analysis").check()
    expect(row(page, "data-analysis")).to_contain_text("On")

    page.get_by_role("button", name="Read data-analysis").click()
    detail = page.locator("#skill-detail")
    expect(detail.locator("h1")).to_have_text("Data analysis")  # the Markdown is rendered
    expect(detail.locator("#detail-meta")).to_contain_text("/mnt/skills/public/data-analysis")

    upload(page, sa.good("ui-skill", version="1.0"), "ui-skill.skill")
    expect(page.locator("#install-result")).to_contain_text("Skill 'ui-skill' installed.")
    expect(row(page, "ui-skill").locator(".source")).to_have_text("custom")
    upload(page, sa.good("ui-skill", version="2.0"), "ui-skill.skill")
    expect(page.locator("#install-result")).to_contain_text("updated")
    expect(row(page, "ui-skill")).to_contain_text("2.0")
    page.get_by_role("button", name="Read ui-skill").click()
    page.get_by_role("button", name="Roll back to 1.0").click()
    expect(row(page, "ui-skill")).to_contain_text("1.0")

    upload(page, sa.with_symlink(), "evil.skill")
    result = page.locator("#install-result")
    expect(result).to_contain_text("Not installed")
    expect(result.locator(".findings")).to_contain_text("path.symlink")
    expect(result.locator(".findings li.critical")).to_have_count(1)
    doc_shot(page, "skills")
    page.get_by_role("button", name="Delete ui-skill").click()

    page.get_by_role("alertdialog").get_by_role("button", name="Delete").click()  # the site's dialog, not confirm()
    expect(row(page, "ui-skill")).to_have_count(0)
    assert page.js_errors == []


def test_skills_page_fits_a_phone(phone, doc_shot):
    phone.goto("/skills/")
    expect(row(phone, "skill-creator")).to_be_visible()
    width = phone.evaluate("document.documentElement.scrollWidth")
    assert width <= 375
    expect(phone.get_by_label("Enable skill-creator")).to_be_visible()
    doc_shot(phone, "skills-phone")
    assert phone.js_errors == []


def test_slash_completion_in_the_composer(page):
    page.goto("/")
    box = page.get_by_label("Message", exact=True)
    box.fill("/da")
    options = page.locator("#skill-suggestions [role=option]")
    expect(options.first).to_contain_text("/data-analysis")
    box.press("Enter")
    expect(box).to_have_value("/data-analysis ")
    expect(page.locator("#skill-suggestions")).to_be_hidden()
    box.fill("/help")
    expect(page.locator("#skill-suggestions")).to_be_hidden()
    assert page.js_errors == []
