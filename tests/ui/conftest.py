"""Browser tests: Debian's chromium (driven by Playwright) against a live Daphne server whose
agent is the real lead agent talking to a LoopbackOpenAIServer in this process.

One server for the session, one sign-in per account and server, one browser for the browser
tests in a row; each test gets a fresh, signed-in browser context. A failing test saves a screenshot (path printed in the report) under
``$DEERFLOW_UI_FAILURES`` (default ``<tmp>/deerflow-ui-failures``). With
``DEERFLOW_UI_SCREENSHOTS=docs/screenshots`` the tests also write the documentation shots.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from harness.testing import loopback_config_text
from tests.support.live import start_live_server

# Playwright's waits end on what they wait for; this bound only stops a hang (milliseconds).
UI_HANG_MS = 60_000

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
PASSWORD = "pw-ui-tester-123"
# Thinking on (the reasoning model shows its thoughts), a small upload cap for the size test.
UI_EXTRA_YAML = ("    supports_thinking: true\nsandbox:\n  use: local\n  bash_command_timeout: 30\nuploads:\n  max_file_size: 200000\n"
                 "subagents:\n  enabled: true\n")



def pytest_collection_modifyitems(config, items):
    if not os.path.exists(CHROMIUM):
        for item in items:
            if "tests/ui/" in str(item.fspath).replace(os.sep, "/"):
                item.add_marker(pytest.mark.skip(reason="needs Debian's chromium at /usr/bin/chromium (`make test` installs it)"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    setattr(item, "rep_" + report.when, report)


@pytest.fixture(scope="session", autouse=True)
def _patient_expectations():
    """Runs are real (agent, sandbox, HTTP model): under a loaded CI machine an answer can
    take longer than Playwright's 5 s default, which would be a flake, not a finding. A
    bound only ends a hang: 15 s was passed while an image built beside the suite."""
    from playwright.sync_api import expect

    expect.set_options(timeout=UI_HANG_MS)


@pytest.fixture(scope="session")
def live(tmp_path_factory, model_server):
    server = start_live_server(tmp_path_factory.mktemp("ui-home"), config_text=loopback_config_text(model_server.base_url, use="harness.models.reasoning:ReasoningChatOpenAI", timeout=60, extra_yaml=UI_EXTRA_YAML))
    server.config_path = Path(server.env["DEER_FLOW_CONFIG_PATH"])
    server.shell(
        "from apps.accounts.models import User\n"
        f"u = User.objects.create_user(username='tester', email='tester@example.com', password={PASSWORD!r})\n"
        "u.is_staff = True; u.save()"
    )
    yield server
    server.stop()


class _SharedBrowser:
    """One Chromium for the browser tests that run one after another, closed as soon as the
    next test is not one of them. Not a session fixture: while Playwright's sync API is open
    it keeps an event loop running in this thread, which breaks every async test, and any
    other sync_playwright, that runs after it (see ``pytest_runtest_teardown`` below)."""

    def __init__(self) -> None:
        self._playwright = None
        self._browser = None

    def get(self):
        if self._browser is None:
            from playwright.sync_api import sync_playwright

            self._playwright = sync_playwright().start()
            self._browser = self._playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        return self._browser

    def close(self) -> None:
        if self._browser is not None:
            self._browser.close()
            self._playwright.stop()
            self._browser = self._playwright = None


_shared = _SharedBrowser()


def _in_this_directory(item) -> bool:
    return item is not None and Path(str(item.fspath)).resolve().is_relative_to(Path(__file__).resolve().parent)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    if not _in_this_directory(nextitem):
        _shared.close()


@pytest.fixture
def browser():
    return _shared.get()


# Storage states by (server home, username): each account signs in once per server. The home
# directory, not the URL: a module's own server that stopped may leave its port to another.
_states: dict[tuple[str, str], str] = {}


@pytest.fixture
def sign_in(live, tmp_path_factory):
    """Sign ``username`` in through the real form, once per server; the storage state's path."""

    def sign_in(username: str, password: str) -> str:
        key = (live.env["DEER_FLOW_HOME"], username)
        if key not in _states:
            context = _shared.get().new_context(base_url=live.url)
            page = context.new_page()
            page.goto("/accounts/login/")
            page.get_by_label("Username or email").fill(username)
            page.get_by_label("Password").fill(password)
            page.get_by_role("button", name="Sign in").click()
            page.wait_for_url(f"{live.url}/")
            path = tmp_path_factory.mktemp("ui-state") / "state.json"
            context.storage_state(path=str(path))
            context.close()
            _states[key] = str(path)
        return _states[key]

    return sign_in


@pytest.fixture
def signed_in_state(sign_in):
    """The admin tester's signed-in session; tests reuse its cookie."""
    return sign_in("tester", PASSWORD)


def _failure_dir() -> Path:
    path = Path(os.environ.get("DEERFLOW_UI_FAILURES") or Path(tempfile.gettempdir()) / "deerflow-ui-failures")
    path.mkdir(parents=True, exist_ok=True)
    return path


def _open_page(request, browser, live, *, storage_state=None, viewport=None):
    context = browser.new_context(base_url=live.url, storage_state=storage_state, viewport=viewport or {"width": 1280, "height": 800})
    context.set_default_timeout(UI_HANG_MS)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.js_errors = errors
    return context, page


def _finish(request, context, page):
    failed = getattr(request.node, "rep_call", None)
    if failed is not None and failed.failed:
        shot = _failure_dir() / f"{request.node.name}.png"
        try:
            page.screenshot(path=str(shot), full_page=True)
            print(f"\nscreenshot of the failure: {shot}")
        except Exception as exc:  # the page may be gone; the failure itself matters more
            print(f"\nno screenshot: {exc}")
    context.close()


@pytest.fixture
def page(request, browser, live, signed_in_state):
    context, page = _open_page(request, browser, live, storage_state=signed_in_state)
    yield page
    _finish(request, context, page)


@pytest.fixture
def phone(request, browser, live, signed_in_state):
    context, page = _open_page(request, browser, live, storage_state=signed_in_state, viewport={"width": 375, "height": 740})
    yield page
    _finish(request, context, page)


@pytest.fixture
def anon_page(request, browser, live):
    context, page = _open_page(request, browser, live)
    yield page
    _finish(request, context, page)


@pytest.fixture
def doc_shot():
    """Save a documentation screenshot when DEERFLOW_UI_SCREENSHOTS names a directory."""
    target = os.environ.get("DEERFLOW_UI_SCREENSHOTS")

    def shot(page_or_locator, name: str) -> None:
        if target:
            Path(target).mkdir(parents=True, exist_ok=True)
            page_or_locator.screenshot(path=str(Path(target) / f"{name}.png"))

    return shot
