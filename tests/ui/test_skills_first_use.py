"""Skills as a new user meets them (the issue's "done when"): the five public skills listed,
``/data-analysis`` on an uploaded CSV putting a chart in the Files panel, and a skill that
``skill-creator`` packaged in a chat installed from that chat's outputs on the Skills page.
The model is the loopback server; the skills' scripts really run in the sandbox."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from harness.testing.script import Reply, call, tool_reply
from tests.ui.chat_page import send

pytestmark = [pytest.mark.browser, pytest.mark.slow]
PUBLIC = "/mnt/skills/public"
FIVE = ("deep-research", "data-analysis", "report-writer", "slide-deck", "skill-creator")


def bash(command: str):
    return tool_reply(call("bash", description="run the skill's script", command=command))


def thread_id(page) -> str:
    return re.search(r"/c/([0-9a-f-]{36})/", page.url).group(1)


def test_the_five_public_skills_are_listed(page):
    page.goto("/skills/")
    for name in FIVE:
        row = page.locator(f'tr[data-skill="{name}"]')
        expect(row.locator(".source")).to_have_text("public")
        expect(page.get_by_label(f"Enable {name}")).to_be_checked()


def test_data_analysis_on_an_uploaded_csv_shows_a_chart_in_the_files_panel(page, script):
    script(
        bash(f"python3 {PUBLIC}/data-analysis/scripts/analyze.py /mnt/user-data/uploads/sales.csv --out /mnt/user-data/outputs"),
        tool_reply(call("present_files", filepaths=["/mnt/user-data/outputs/sales-sales.png", "/mnt/user-data/outputs/sales-summary.md"])),
        Reply(text="Oslo sells most."),
    )
    page.goto("/")
    page.locator("#file-input").set_input_files([{"name": "sales.csv", "mimeType": "text/csv",
                                                  "buffer": b"city,sales\nOslo,120\nBergen,80\nTromso,15\n"}])
    expect(page.locator(".attachment")).to_have_class(re.compile(r"\bdone\b"))
    send(page, "/data-analysis which city sells most?")
    expect(page.locator("article.msg.assistant").last).to_contain_text("Oslo sells most.")
    expect(page.locator("#files-count")).to_have_text("2")
    page.get_by_role("button", name="Open sales-sales.png").click()
    preview = page.get_by_role("complementary", name="sales-sales.png")  # the file viewer
    image = preview.locator("img")
    expect(image).to_be_visible()
    page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=image.element_handle())
    assert image.evaluate("img => img.naturalWidth") == 640
    assert page.js_errors == []


def test_a_skill_made_by_skill_creator_installs_from_the_chat(page, script):
    work = "/mnt/user-data/workspace"
    script(
        bash(f"python3 {PUBLIC}/skill-creator/scripts/init_skill.py weekly-digest --description 'Write the weekly digest.' --dir {work}"),
        bash(f"python3 {PUBLIC}/skill-creator/scripts/validate_skill.py {work}/weekly-digest"),
        bash(f"python3 {PUBLIC}/skill-creator/scripts/package_skill.py {work}/weekly-digest --out /mnt/user-data/outputs"),
        Reply(text="Install weekly-digest.skill on the Skills page."),
    )
    page.goto("/")
    send(page, "/skill-creator make me a weekly digest skill")
    expect(page.locator("article.msg.assistant").last).to_contain_text("Install weekly-digest.skill")
    chat = thread_id(page)

    page.goto("/skills/")
    page.get_by_label("Chat id").fill(chat)
    page.get_by_label("Path").fill("/mnt/user-data/outputs/weekly-digest.skill")
    page.get_by_role("button", name="Install").click()
    expect(page.locator("#install-result")).to_contain_text("Skill 'weekly-digest' installed.")
    row = page.locator('tr[data-skill="weekly-digest"]')
    expect(row.locator(".source")).to_have_text("custom")
    page.get_by_role("button", name="Delete weekly-digest").click()
    page.get_by_role("alertdialog").get_by_role("button", name="Delete").click()  # the site's dialog, not confirm()
    expect(row).to_have_count(0)
    assert page.js_errors == []
