"""The /schedules/ page in Debian's chromium against a live server: create a task from the
form (with the cron preview), run it now, see its run in the history, pause it, delete it."""

import os

import pytest

from tests.ui.conftest import browser, live, model_server, page, signed_in_state  # noqa: F401  (shared browser fixtures)

pytestmark = [
    pytest.mark.slow, pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists("/usr/bin/chromium"), reason="needs Debian's chromium at /usr/bin/chromium"),
]


@pytest.fixture(autouse=True)
def _answers(model_server):  # noqa: F811
    from harness.testing.script import Script

    model_server._script = Script(["Today's digest: all quiet."] * 3)
    yield
    model_server._script = Script([])


def test_create_preview_trigger_history_pause_delete(page):  # noqa: F811
    page.goto("/schedules/")
    page.get_by_label("Title").fill("Morning digest")
    page.get_by_label("Prompt").fill("Summarize the news")
    page.get_by_label("Time zone").fill("Europe/Berlin")
    page.get_by_label("Cron (minute hour day month weekday)").fill("30 7 * * 1-5")
    preview = page.locator("#cron-preview")
    preview.get_by_text("At 07:30, Monday through Friday").wait_for()
    assert preview.locator("li").count() == 5 and "Europe/Berlin" in preview.inner_text()

    page.get_by_label("Cron (minute hour day month weekday)").fill("99 * * * *")
    page.locator("#cron-preview.alert").get_by_text("cron: invalid expression").wait_for()
    page.get_by_label("Cron (minute hour day month weekday)").fill("30 7 * * 1-5")

    page.get_by_role("button", name="Create task").click()
    row = page.locator("#task-rows tr", has_text="Morning digest")
    row.wait_for()
    assert "enabled" in row.inner_text() and "30 7 * * 1-5 · Europe/Berlin" in row.inner_text()

    row.get_by_role("button", name="Run now").click()
    history = page.locator("#history-rows")
    history.locator("tr", has_text="manual").wait_for()
    # The page refreshes every 10 s; reopen the history until the run has finished.
    for _ in range(60):
        row.get_by_role("button", name="Runs").click()
        text = history.inner_text()
        if "success" in text or "error" in text:
            break
        page.wait_for_timeout(500)
    assert "success" in history.inner_text(), history.inner_text()
    assert history.get_by_role("link", name="open").count() == 1

    row.get_by_role("button", name="Pause").click()
    page.locator("#task-rows tr", has_text="paused").wait_for()
    page.on("dialog", lambda dialog: dialog.accept())
    page.locator("#task-rows tr", has_text="Morning digest").get_by_role("button", name="Delete").click()
    page.locator("#task-empty").wait_for(state="visible")
    assert page.js_errors == []
