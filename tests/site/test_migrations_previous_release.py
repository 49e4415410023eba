"""A database made by the previous release, with rows in every table, migrated as an operator
would: forward to this tree's migrations, back to exactly the release's migration state, and
forward again, by the real ``manage.py migrate`` in processes of its own.

The database is ``tests/site/previous_release/db.sql`` (made by ``make_db.py`` there, from the
release's commit; its docstring says how to make it again). Every table it has must still be
there after each step with every row: a migration that drops a table, or loses rows on the way
up or down, fails a test naming the table. ``DELIBERATE`` lists what a release changes on
purpose (a table it drops or empties), with the reason; it is empty while no release has.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.site.previous_release.make_db import load, table_counts, user_tables
from tests.support.live import ShellSession

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "site" / "previous_release" / "db.sql"

# Tables a migration may add rows to: post_migrate creates a content type and its
# permissions for every new model (and leaves those of a model moved or gone).
GROWS_ON_MIGRATE = {"django_content_type", "auth_permission"}
# Tables no model owns: made by RunPython/RunSQL migrations for full-text search.
SQL_ONLY = {"memory_fact_fts", "threads_search_fts", "threads_search_state"}
# table -> why a release drops it or removes its rows on purpose.
DELIBERATE: dict[str, str] = {}

# Every concrete model the current code has, read row by row through the ORM (so every
# field's column must be there and every value must load), against the table's row count.
READ_EVERY_MODEL = """
import json
from django.apps import apps
from django.db import connection
tables = set(connection.introspection.table_names())
out = {}
for model in apps.get_models(include_auto_created=True):
    meta = model._meta
    if meta.proxy or not meta.managed:
        continue
    if meta.db_table not in tables:
        out[meta.label] = [meta.db_table, None, None, "its table does not exist"]
        continue
    with connection.cursor() as cursor:
        cursor.execute(f'SELECT count(*) FROM "{meta.db_table}"')
        in_table = cursor.fetchone()[0]
    try:
        out[meta.label] = [meta.db_table, len(list(model._base_manager.all())), in_table, ""]
    except Exception as exc:
        out[meta.label] = [meta.db_table, None, in_table, f"{type(exc).__name__}: {exc}"]
print("ORM-READ " + json.dumps(out))
"""

# Back to the release: each app to its last migration the release had applied, apps the
# release did not have to zero. Each `migrate` also unapplies what depends on what it
# unapplies, in any app; as the release's state is closed under dependencies, that is never
# one of the release's own migrations, so the order of the apps does not matter.
MIGRATE_BACK = """
import json
from django.core.management import call_command
from django.db import connection
from django.db.migrations.loader import MigrationLoader
release = {tuple(node) for node in json.loads(RELEASE)}
loader = MigrationLoader(connection, ignore_no_migrations=True)
gone = sorted({app for app, _ in release} - loader.migrated_apps)
assert not gone, f"apps the release had migrations in and this code has none: {gone}"
for i, app in enumerate(sorted(loader.migrated_apps)):
    mine = {node for node in release if node[0] == app}
    leaves = sorted(node for node in mine if not any(other != node and node in loader.graph.forwards_plan(other) for other in mine))
    assert len(leaves) <= 1, f"{app}: the release had more than one leaf migration applied: {leaves}"
    target = leaves[0][1] if leaves else "zero"
    print(f"migrate {app} {target}", flush=True)
    # The system checks, as `manage.py migrate` runs them, once: they take a third of a second.
    call_command("migrate", app, target, interactive=False, verbosity=1, skip_checks=i > 0)
"""


def _env(db: Path, home: Path) -> dict[str, str]:
    """The project's settings on the copy, as a shell would have them: nothing of this suite's."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DJANGO_", "DATABASE_URL", "CHECKPOINTER_URL", "REDIS_URL", "CELERY_", "DEER_FLOW_", "DEERFLOW_"))}
    env.update({
        "DJANGO_SETTINGS_MODULE": "deerflow_site.settings",
        "DJANGO_DEBUG": "true",
        "DEER_FLOW_HOME": str(home),
        "DATABASE_URL": f"sqlite:///{db}",
        "DEER_FLOW_CONFIG_PATH": str(ROOT / "tests" / "fixtures" / "config.yaml"),
        "DEER_FLOW_EXTENSIONS_CONFIG_PATH": str(ROOT / "tests" / "fixtures" / "extensions_config.json"),
        "CPU_PINNING": "false",
    })
    return env


def _manage(env: dict[str, str], *args: str) -> tuple[str, str]:
    """(stdout, "" or why the command failed: its exit status and the end of its output)."""
    result = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    if result.returncode == 0:
        return result.stdout, ""
    return result.stdout, f"manage.py {args[0]} exited {result.returncode}:\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}"


class Snapshot:
    """What one step left: row counts, applied migrations, each table's columns."""

    def __init__(self, db: Path):
        with sqlite3.connect(db) as conn:
            self.counts = table_counts(conn)
            self.migrations = set(conn.execute("SELECT app, name FROM django_migrations").fetchall())
            self.columns = {t: {row[1] for row in conn.execute(f'PRAGMA table_info("{t}")')} for t in user_tables(conn)}
        conn.close()


def _shell(shell: ShellSession, code: str) -> tuple[str, str]:
    """``manage.py shell -c code`` as `_manage` reports it, in a process forked from one that has
    set Django up once for the whole journey (the code runs on the database as it is then)."""
    try:
        return shell.run(code), ""
    except RuntimeError as exc:
        return "", f"manage.py shell failed:\n{str(exc)[-4000:]}"


def _orm_read(shell: ShellSession) -> tuple[dict[str, list], str]:
    out, error = _shell(shell, READ_EVERY_MODEL)
    line = next((line for line in out.splitlines() if line.startswith("ORM-READ ")), None)
    return (json.loads(line.removeprefix("ORM-READ ")) if line else {}), error


@pytest.fixture(scope="module")
def journey(tmp_path_factory):
    """The fixture's database through forward, back and forward again: a snapshot after each
    step, the ORM's reads after each upgrade, and in "errors" the steps whose command failed
    (the journey goes on, so each test reports its own step)."""
    work = tmp_path_factory.mktemp("previous-release")
    db = work / "deerflow.sqlite3"
    load(FIXTURE.read_text(), db)
    env = _env(db, work / "home")
    steps: dict = {"release": Snapshot(db), "errors": {}}
    release_migrations = json.dumps(json.dumps(sorted(steps["release"].migrations)))
    shell = ShellSession(env)
    try:
        for step in ("upgraded", "downgraded", "upgraded_again"):
            if step == "downgraded":
                _, steps["errors"][step] = _shell(shell, f"RELEASE = {release_migrations}\n{MIGRATE_BACK}")
            else:
                _, steps["errors"][step] = _manage(env, "migrate", "--noinput")
            steps[step] = Snapshot(db)
            if step.startswith("upgraded"):
                steps[f"{step}_read"], steps["errors"][f"{step}_read"] = _orm_read(shell)
    finally:
        shell.close()
    return steps


def _lost(before: Snapshot, after: Snapshot) -> list[str]:
    """Each table of *before* that *after* lacks or holds fewer (or, outside GROWS_ON_MIGRATE,
    other) rows than it did, as 'table: before -> after'."""
    problems = []
    for table, count in before.counts.items():
        if table in DELIBERATE:
            continue
        now = after.counts.get(table)
        if now is None:
            problems.append(f"{table}: {count} rows -> table gone")
        elif now < count or (now != count and table not in GROWS_ON_MIGRATE):
            problems.append(f"{table}: {count} rows -> {now}")
    return problems


def _unread(read: dict[str, list], release: Snapshot) -> list[str]:
    problems = []
    for label, (table, loaded, in_table, error) in sorted(read.items()):
        if error:
            problems.append(f"{label} ({table}): {error}")
        elif loaded != in_table:
            problems.append(f"{label}: the ORM read {loaded} rows of {table}, which holds {in_table}")
    models_tables = {table for table, *_ in read.values()}
    # A table of the release that no model reads any more is a model that lost its table.
    orphans = sorted(set(release.counts) - models_tables - SQL_ONLY - set(DELIBERATE))
    problems += [f"{t}: a table of the release that no model reads" for t in orphans]
    return problems


def _ran(journey, step: str) -> None:
    assert not journey["errors"][step], journey["errors"][step]


def test_the_fixture_has_rows_in_every_table(journey):
    release = journey["release"]
    assert release.migrations, "the fixture holds no applied migrations"
    assert [t for t, n in release.counts.items() if n == 0] == []


def test_an_upgraded_database_keeps_every_row(journey):
    _ran(journey, "upgraded")
    assert _lost(journey["release"], journey["upgraded"]) == []


def test_the_upgraded_code_reads_every_row(journey):
    _ran(journey, "upgraded_read")
    assert _unread(journey["upgraded_read"], journey["release"]) == []


def test_a_downgrade_returns_to_the_previous_releases_migrations(journey):
    _ran(journey, "downgraded")
    release, downgraded = journey["release"], journey["downgraded"]
    assert sorted(downgraded.migrations - release.migrations) == [], "applied after the downgrade, not in the release"
    assert sorted(release.migrations - downgraded.migrations) == [], "the release's, unapplied by the downgrade"


def test_a_downgrade_to_the_previous_release_keeps_every_row(journey):
    _ran(journey, "downgraded")
    assert _lost(journey["release"], journey["downgraded"]) == []


def test_a_downgrade_leaves_the_tables_and_columns_the_previous_release_reads(journey):
    _ran(journey, "downgraded")
    release, downgraded = journey["release"].columns, journey["downgraded"].columns
    assert sorted(set(downgraded) - set(release)) == [], "tables the downgrade left behind"
    assert sorted(set(release) - set(downgraded) - set(DELIBERATE)) == [], "tables of the release the downgrade did not bring back"
    changed = {t: {"missing": sorted(release[t] - downgraded[t]), "extra": sorted(downgraded[t] - release[t])}
               for t in release if t in downgraded and release[t] != downgraded[t]}
    assert changed == {}


def test_upgrading_again_after_a_downgrade_keeps_every_row(journey):
    _ran(journey, "upgraded_again")
    assert _lost(journey["release"], journey["upgraded_again"]) == []
    assert journey["upgraded_again"].migrations == journey["upgraded"].migrations
    _ran(journey, "upgraded_again_read")
    assert _unread(journey["upgraded_again_read"], journey["release"]) == []
