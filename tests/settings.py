"""Test settings: the embedded stack with fast hashing, in a throwaway DEER_FLOW_HOME.

DATABASE_URL / REDIS_URL still switch backends, which is how `make test` runs the
PostgreSQL and Redis tiers.
"""

import atexit
import os
import shutil
import tempfile
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[1]


def _made_home(prefix: str) -> str:
    """A throwaway home that the process making it removes when it ends. Only that process: a
    child forked from it runs its atexit handlers too, and the servers, workers and shells a
    test starts inherit the home through the environment and make none of their own."""
    home, creator = tempfile.mkdtemp(prefix=prefix), os.getpid()
    atexit.register(lambda: os.getpid() == creator and shutil.rmtree(home, ignore_errors=True))
    return home


os.environ.setdefault("DJANGO_DEBUG", "true")
_worker = os.environ.get("PYTEST_XDIST_WORKER", "")
if _worker and os.environ.get("DEERFLOW_TEST_HOME_OF") != _worker:
    # Each parallel worker gets its own home (and so its own SQLite file): the one it inherits
    # from the controlling process would be shared by all of them. Servers and Celery workers
    # a test starts inherit the marker and so keep the worker's home.
    os.environ["DEER_FLOW_HOME"] = _made_home(f"deerflow-test-home-{_worker}-")
    os.environ["DEERFLOW_TEST_HOME_OF"] = _worker
    # And its own Redis database: Celery workers that two test files start at once would
    # otherwise take each other's tasks from the shared queue.
    _redis = os.environ.get("DEERFLOW_TEST_REDIS_URL", "")
    if _redis:
        _base, _, _db = _redis.rpartition("/")
        if _db.isdigit():
            os.environ["DEERFLOW_TEST_REDIS_URL"] = f"{_base}/{1 + int(_worker.removeprefix('gw') or 0)}"
elif not os.environ.get("DEER_FLOW_HOME"):
    os.environ["DEER_FLOW_HOME"] = _made_home("deerflow-test-home-")
os.environ.setdefault("DEER_FLOW_CONFIG_PATH", str(_ROOT / "tests" / "fixtures" / "config.yaml"))
os.environ.setdefault("DEER_FLOW_EXTENSIONS_CONFIG_PATH", str(_ROOT / "tests" / "fixtures" / "extensions_config.json"))

from deerflow_site.settings import *  # noqa: E402,F401,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
CELERY_TASK_ALWAYS_EAGER = os.environ.get("CELERY_TASK_ALWAYS_EAGER", "true").lower() == "true"

# A file, not SQLite's shared-cache memory database: runs write from their own threads, and
# shared-cache mode answers concurrent writers with "table is locked" instead of waiting.
# A file with WAL and a busy timeout behaves like production.
if DATABASES["default"]["ENGINE"] == "deerflow_site.db.sqlite_backend":  # noqa: F405
    DATABASES["default"]["TEST"] = {"NAME": os.path.join(os.environ["DEER_FLOW_HOME"], "test-db.sqlite3")}  # noqa: F405

# The test process is not a server: it shares the machine with the live servers it starts,
# which take the cores (harness/runtime/cpu_affinity.py).
CPU_PINNING = False
SKILL_STATE_CACHE_SECONDS = 0  # the suite flushes tables between tests, which sends no signals
CONFIG_RECHECK_SECONDS = 0  # tests edit config files and run at once
