"""The /schedules/ page in Debian's chromium against a live server: create a task from the
form (with the cron preview), run it now, see its run in the history, pause it, delete it."""

import os

import pytest

from harness.testing import loopback_config_text
from tests.support.live import start_live_server

CHROMIUM = "/usr/bin/chromium"
PASSWORD = "pw-schedules-123"

pytestmark = [
    pytest.mark.slow, pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="needs Debian's chromium at /usr/bin/chromium"),
]



# Module-scoped on purpose: Playwright's sync API keeps an event loop running in this thread
# while it is open, which would break every async test that runs after this module.
@pytest.fixture(scope="module")
def page(tmp_path_factory):
    from playwright.sync_api import sync_playwright

    from harness.testing import LoopbackOpenAIServer

    with LoopbackOpenAIServer(["Today's digest: all quiet."] * 3) as model_server:
        server = start_live_server(tmp_path_factory.mktemp("schedules-home"), config_text=loopback_config_text(model_server.base_url, timeout=60, extra_yaml="sandbox:\n  use: local\n"))
        try:
            server.shell("from apps.accounts.models import User\n"
                         f"User.objects.create_user(username='planner', email='planner@example.com', password={PASSWORD!r})")
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                                     args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
                context = browser.new_context(base_url=server.url, viewport={"width": 1280, "height": 900})
                context.set_default_timeout(15_000)
                page = context.new_page()
                page.js_errors = []
                page.on("pageerror", lambda exc: page.js_errors.append(str(exc)))
                page.goto("/accounts/login/")
                page.get_by_label("Username or email").fill("planner")
                page.get_by_label("Password").fill(PASSWORD)
                page.get_by_role("button", name="Sign in").click()
                page.wait_for_url(f"{server.url}/")
                yield page
                context.close()
                browser.close()
        finally:
            server.stop()


def test_create_preview_trigger_history_pause_delete(page):
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
    if os.environ.get("DEERFLOW_UI_SCREENSHOTS"):  # the documentation shot (docs/screenshots/)
        page.screenshot(path=os.path.join(os.environ["DEERFLOW_UI_SCREENSHOTS"], "schedules.png"), full_page=True)
    assert history.get_by_role("link", name="open").count() == 1
    assert "enabled" in row.inner_text()  # the list refreshed with the history: no longer running
    assert not page.get_by_label("Thread id").is_visible() and not page.get_by_role("button", name="Cancel editing").is_visible()

    row.get_by_role("button", name="Pause").click()
    page.locator("#task-rows tr", has_text="paused").wait_for()
    page.locator("#task-rows tr", has_text="Morning digest").get_by_role("button", name="Delete").click()
    page.get_by_role("alertdialog").get_by_role("button", name="Delete").click()  # the site's dialog, not confirm()
    page.locator("#task-empty").wait_for(state="visible")
    assert page.js_errors == []


@pytest.mark.parametrize("width", [1280, 375])
def test_a_one_off_task_from_the_form(page, width):
    page.set_viewport_size({"width": width, "height": 900})
    page.goto("/schedules/")
    page.get_by_label("Title").fill(f"Launch summary {width}")
    page.get_by_label("Prompt").fill("Summarize the launch coverage")
    page.get_by_label("Time zone").fill("Europe/Berlin")
    page.get_by_label("Runs").select_option("once")
    assert not page.get_by_label("Cron (minute hour day month weekday)").is_visible()
    page.get_by_label("Date and time").fill("2001-01-01T09:00")
    page.locator("#cron-preview.alert").get_by_text("is in the past").wait_for()
    page.get_by_label("Date and time").fill("2999-12-24T09:00")
    page.locator("#cron-preview").get_by_text("Once, on Tue 24 Dec 2999 at 09:00").wait_for()

    page.get_by_role("button", name="Create task").click()
    row = page.locator("#task-rows tr", has_text=f"Launch summary {width}")
    row.wait_for()
    assert "once · Europe/Berlin" in row.inner_text() and "enabled" in row.inner_text()
    page.locator("#cron-preview").get_by_text("At 08:00, Monday through Friday").wait_for()  # the form is back to a new task
    if width == 375 and os.environ.get("DEERFLOW_UI_SCREENSHOTS"):
        page.screenshot(path=os.path.join(os.environ["DEERFLOW_UI_SCREENSHOTS"], "schedules-once-phone.png"), full_page=True)
    # Editing shows the time back on the task's wall clock.
    row.get_by_role("button", name="Edit").click()
    assert page.get_by_label("Date and time").input_value() == "2999-12-24T09:00"
    assert page.evaluate("document.documentElement.scrollWidth") <= width + 1  # nothing wider than the screen
    page.get_by_role("button", name="Cancel editing").click()
    row.get_by_role("button", name="Delete").click()
    page.get_by_role("alertdialog").get_by_role("button", name="Delete").click()  # the site's dialog, not confirm()
    row.wait_for(state="detached")
    assert page.js_errors == []
