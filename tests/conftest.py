"""Shared fixtures: users and API clients."""

import functools
from pathlib import Path

import pytest
from rest_framework.test import APIClient


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup):
    """pytest-django's test database, with the runs loop stopped before it is dropped: its
    recovery sweep would otherwise query a database that is gone while the process exits.
    Transactional tests' flushes put back what post_migrate made instead of remaking it
    (tests/support/flush.py)."""
    from tests.support.flush import restore_post_migrate_rows_on_flush

    restore_post_migrate_rows_on_flush()
    yield
    from apps.runs.runtime import stop_runtime

    stop_runtime()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """A test's runs end with the test, before its database is flushed: a run still going
    (a model call retrying, say) would otherwise write while the next test's flush truncates
    the tables, a deadlock on PostgreSQL."""
    from apps.runs import runtime as runs_runtime

    runtime = runs_runtime._runtime
    if runtime is not None and runtime._loop is not None:

        async def settle_leftovers() -> None:
            for run_id in list(runtime.active):
                runtime.cancel_here(run_id, "interrupt")
            for run_id in list(runtime.active):
                await runtime.wait_done(run_id, timeout=10)

        runtime.call(settle_leftovers, timeout=30)
    yield


@pytest.fixture
def user(django_user_model):
    return django_user_model.objects.create_user(username="alice", email="alice@example.com", password="pw-alice-123")


@pytest.fixture
def other_user(django_user_model):
    return django_user_model.objects.create_user(username="bob", email="bob@example.com", password="pw-bob-123")


@pytest.fixture
def api_client():
    return APIClient()


@pytest.fixture
def user_client(user):
    client = APIClient()
    client.force_authenticate(user)
    return client


def _browser_file(path: str) -> bool:
    return path.startswith("tests/ui/") or "browser" in path.rsplit("/", 1)[-1]


# Test time of the slower browser files (scripts/test_times.py, 2026-12-06); any other browser
# file counts as a short one. Only how evenly the browser groups split depends on these.
_BROWSER_FILE_SECONDS = {
    "tests/ui/test_chat.py": 53, "tests/ui/test_chat_ergonomics.py": 39,
    "tests/harness/tools/test_browser_tools.py": 32, "tests/ui/test_message_actions.py": 32,
    "tests/ui/test_contrast.py": 27, "tests/ui/test_approvals.py": 25,
    "tests/apps/schedules/test_scheduling_browser.py": 23, "tests/ui/test_connections_wechat.py": 22,
    "tests/ui/test_sidebar.py": 17, "tests/ui/test_palette.py": 17, "tests/ui/test_agents.py": 17,
    "tests/ui/test_connections.py": 16, "tests/ui/test_share.py": 15, "tests/ui/test_answer_versions.py": 14,
    "tests/ui/test_browser_live_view.py": 14, "tests/ui/test_subagents_ui.py": 14,
    "tests/ui/test_workspace_changes.py": 13, "tests/ui/test_connections_slack_github.py": 12,
    "tests/ui/test_mcp_settings.py": 12, "tests/ui/test_tags.py": 11,
}
_SHORT_BROWSER_FILE_SECONDS = 6


@functools.cache
def _browser_groups(count: int) -> dict[str, str]:
    """The browser files on disk dealt into ``count`` groups of about equal test time, the
    longest file first to the least loaded group: the same split on every run."""
    root = Path(__file__).resolve().parent.parent
    found = {*root.glob("tests/ui/test_*.py"), *root.glob("tests/**/test_*browser*.py")}
    files = sorted((path.relative_to(root).as_posix() for path in found),
                   key=lambda path: (-_BROWSER_FILE_SECONDS.get(path, _SHORT_BROWSER_FILE_SECONDS), path))
    loads, groups = [0] * count, {}
    for path in files:
        least = loads.index(min(loads))
        groups[path] = f"browser-{least + 1}"
        loads[least] += _BROWSER_FILE_SECONDS.get(path, _SHORT_BROWSER_FILE_SECONDS)
    return groups


def _schedule_group(path: str, browser_groups: int = 1) -> str:
    """The unit pytest-xdist hands to one worker: a file, except where files share what is
    costly to start. The browser files share a Chromium and the UI's live server, which a group
    starts once on its worker. On two workers they are one group, so that two Chromiums never
    take both cores; on more, ``browser_groups`` (half the workers) groups of about equal test
    time, since the one group was longer than a quarter of the run (575 s of 1,790 s of test
    time). The `langgraph-sdk` files share the session's two live stacks (tests/sdk/conftest.py),
    which split across workers would each start again on every file."""
    if _browser_file(path):
        return "browser" if browser_groups <= 1 else _browser_groups(browser_groups).get(path, "browser-1")
    if path.startswith("tests/sdk/"):
        return "sdk"
    return path


def pytest_xdist_make_scheduler(config, log):
    """`make test` runs the suite on pytest-xdist workers with ``--dist loadfile``: a file's
    tests, and the live servers its module fixtures start, stay on one worker, and so do the
    groups of files `_schedule_group` names. The groups go out in the order the workers
    collected them (`_costly_first`), not xdist's default of the most tests first, which left
    the slow files of few tests (a site started as a user does, the migration journey) to the
    end, where one worker ran them while the other had nothing left."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    config.option.loadscopereorder = False

    class SharedSetupTogether(LoadFileScheduling):
        browser_groups: int | None = None

        def _split_scope(self, nodeid: str) -> str:
            # First called once every worker has collected, when all are registered; counted
            # once, since a worker left without work is dropped and the count must not change.
            if self.browser_groups is None:
                self.browser_groups = len(self.nodes) // 2
            return _schedule_group(nodeid.split("::", 1)[0], browser_groups=self.browser_groups)

    return SharedSetupTogether(config, log)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """Tell the workers of a ``--dist loadfile`` run to collect in `_costly_first` order (a
    worker's own options say ``dist=no``)."""
    if node.config.getvalue("dist") == "loadfile":
        node.workerinput["deerflow_costly_first"] = True


def _costly_first(items) -> None:
    """Order the schedule groups by what they cost, most first, as a longest-first schedule
    does: the browser groups (the largest units), the SDK files' shared stacks, then files with
    a test marked ``slow``, then the rest; each group's tests keep their order. The container
    files come after the slow ones: on a fresh machine they wait for the sandbox image, whose
    build scripts/test.sh starts as the suite starts."""
    def groups_marked(marker: str) -> set[str]:
        return {_schedule_group(item.nodeid.split("::", 1)[0]) for item in items if marker in item.keywords}

    slow, container = groups_marked("slow"), groups_marked("container")

    def cost_rank(item) -> int:
        group = _schedule_group(item.nodeid.split("::", 1)[0])
        if group in ("browser", "sdk"):
            return 0 if group == "browser" else 1
        return 3 if group in container else 2 if group in slow else 4

    items.sort(key=cost_rank)  # stable: a group's tests stay together and in order


def pytest_collection_modifyitems(config, items):
    """Tier markers skip with a reason where their service is not there. With
    DEERFLOW_TIER2_FILES set (scripts/test.sh, in tier 1), the files that hold tier-2 tests are
    written there, so that tier 2 collects those files instead of the whole suite again."""
    import os

    from django.conf import settings

    on_postgres = settings.DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql"
    redis_url = os.environ.get("DEERFLOW_TEST_REDIS_URL")
    tier2_files = set()
    for item in items:
        if "postgres" in item.keywords or "db_tier" in item.keywords:
            tier2_files.add(item.nodeid.split("::", 1)[0])
        if "postgres" in item.keywords and not on_postgres:
            item.add_marker(pytest.mark.skip(reason="needs PostgreSQL: runs in the second tier of `make test`"))
        if "redis" in item.keywords and not redis_url:
            item.add_marker(pytest.mark.skip(reason="needs a Redis server (DEERFLOW_TEST_REDIS_URL); `make test` starts one"))
    if getattr(config, "workerinput", {}).get("deerflow_costly_first"):
        _costly_first(items)
    listing = os.environ.get("DEERFLOW_TIER2_FILES")
    if listing:
        # Each xdist worker collects the same suite and writes the same list; replace, never append.
        scratch = f"{listing}.{os.getpid()}"
        with open(scratch, "w") as out:
            out.write("".join(f"{path}\n" for path in sorted(tier2_files)))
        os.replace(scratch, listing)


@pytest.fixture
def scripted_agent(settings):
    """Set what the test agent's model answers; compiled graphs are cached, so start afresh."""
    from apps.runs.graphs import clear_graph_cache
    from tests.support import agents

    settings.DEERFLOW_AGENT_FACTORY = "tests.support.agents:make_scripted_agent"

    def set_script(*items, loop=False):
        clear_graph_cache()
        return agents.set_script(*items, loop=loop)

    yield set_script
    clear_graph_cache()


@pytest.fixture
def scripted_lead_agent(settings):
    """The real lead agent (every middleware) around the scripted model; set its replies."""
    from apps.runs.graphs import clear_graph_cache
    from tests.support import agents

    settings.DEERFLOW_AGENT_FACTORY = "tests.support.agents:make_scripted_lead_agent"

    def set_script(*items, loop=False):
        clear_graph_cache()
        return agents.set_script(*items, loop=loop)

    yield set_script
    clear_graph_cache()


@pytest.fixture
def redis_url():
    import os

    return os.environ["DEERFLOW_TEST_REDIS_URL"]


@pytest.fixture
def own_redis_url(redis_url):
    """An emptied Redis database of this test's own, for a test that starts Celery workers on
    Redis: the session's distributed live stack (tests/sdk) keeps a Celery worker on
    ``redis_url``'s queue, which would take their tasks and run them against its own database."""
    import redis

    base, _, db = redis_url.rpartition("/")
    url = f"{base}/{int(db) + 8}"
    client = redis.Redis.from_url(url)
    client.flushdb()
    client.close()
    return url


@pytest.fixture(scope="session")
def model_server():
    """One loopback OpenAI-compatible server for the live-server tests (SDK, UI)."""
    from harness.testing import LoopbackOpenAIServer

    with LoopbackOpenAIServer() as server:
        yield server


@pytest.fixture
def script(model_server):
    """Set what the model answers, in order, for this test only."""
    yield model_server.reset
    model_server.reset()
