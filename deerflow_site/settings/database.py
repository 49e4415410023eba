"""The Django database and the LangGraph checkpointer location.

SQLite files under DEER_FLOW_HOME unless DATABASE_URL names PostgreSQL; the checkpointer
follows the database (same PostgreSQL, or its own SQLite file beside the Django one).
"""

from deerflow_site.settings.environment import DEER_FLOW_HOME, env

DEER_FLOW_HOME.mkdir(parents=True, exist_ok=True)

_sqlite_url = f"sqlite:///{DEER_FLOW_HOME / 'deerflow.sqlite3'}"
DATABASES = {"default": env.db_url("DATABASE_URL", default=_sqlite_url)}

_engine = DATABASES["default"]["ENGINE"]
if _engine == "django.db.backends.sqlite3":
    # Django's backend with writers queued across processes (see its module docstring).
    DATABASES["default"]["ENGINE"] = "deerflow_site.db.sqlite_backend"
    # WAL lets the API read while a run writes events; the busy timeout turns brief
    # write contention into a wait instead of "database is locked". The WAL is folded back
    # every 1 MB and cut back to 1 MB after (SQLite's 4 MB default stays on disk for good).
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {"timeout": 20, "transaction_mode": "IMMEDIATE",
         "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA wal_autocheckpoint=256; "
                         "PRAGMA journal_size_limit=1048576;"}
    )
    # Keep SQLite connections: opening one (and its PRAGMAs) costs more than most queries.
    DATABASES["default"]["CONN_MAX_AGE"] = None
    CHECKPOINTER_URL = env.str("CHECKPOINTER_URL", default=f"sqlite:///{DEER_FLOW_HOME / 'checkpoints.sqlite3'}")
elif _engine in {"django.db.backends.postgresql", "django.db.backends.postgresql_psycopg2"}:
    DATABASES["default"]["ENGINE"] = "django.db.backends.postgresql"
    if env.bool("DB_POOL", default=True):
        # Under ASGI each request runs its sync code in a fresh thread, so per-thread
        # persistent connections are never reused: without a pool every request would open
        # a new PostgreSQL connection. psycopg's pool (Django's "pool" option) shares them.
        DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
            "min_size": 1, "max_size": env.int("DB_POOL_MAX_SIZE", default=20), "timeout": env.float("DB_POOL_TIMEOUT", default=10.0),
        }
        DATABASES["default"]["CONN_MAX_AGE"] = 0  # the pool keeps them; Django must not as well
    else:
        DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("DB_CONN_MAX_AGE", default=0))
        DATABASES["default"].setdefault("CONN_HEALTH_CHECKS", True)
    CHECKPOINTER_URL = env.str("CHECKPOINTER_URL", default=env.str("DATABASE_URL"))
else:
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured(f"DATABASE_URL must name SQLite or PostgreSQL, not {_engine}")
