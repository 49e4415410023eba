"""Shared fixtures: users and API clients."""

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


def _schedule_group(path: str) -> str:
    """The unit pytest-xdist hands to one worker: a file, except where files share what is
    costly to start. The browser files share one Chromium and must not run beside each other;
    the `langgraph-sdk` files share the session's two live stacks (tests/sdk/conftest.py),
    which split across workers would each start again on every file."""
    if _browser_file(path):
        return "browser"
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
        def _split_scope(self, nodeid: str) -> str:
            return _schedule_group(nodeid.split("::", 1)[0])

    return SharedSetupTogether(config, log)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """Tell the workers of a ``--dist loadfile`` run to collect in `_costly_first` order (a
    worker's own options say ``dist=no``)."""
    if node.config.getvalue("dist") == "loadfile":
        node.workerinput["deerflow_costly_first"] = True


def _costly_first(items) -> None:
    """Order the schedule groups by what they cost, most first, as a longest-first schedule
    does: the browser group (the largest unit), the SDK files' shared stacks, then files with
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
