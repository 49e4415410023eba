"""Make ``db.sql``: a database as the previous release leaves it, with rows in every table.

``tests/site/test_migrations_previous_release.py`` loads it and migrates it forward to this
tree's migrations, back to the release's, and forward again, checking no row is lost. The
fixture must therefore be made by the *release's* code, not by the tree that tests it.

The fixture in this directory was made at commit 280a006 (the release before model moves
between apps such as ``runs`` → ``schedules``), with this script as it was then; the first
lines of ``db.sql`` name the commit that made it. The script follows the tree it is in (its
imports name today's modules), so at the next release it runs as it stands. To make it again after a release that adds migrations, from that release's
commit::

    git worktree add /tmp/deerflow-release <release commit>
    ln -s "$PWD/.venv" /tmp/deerflow-release/.venv   # or that checkout's own virtualenv
    mkdir -p /tmp/deerflow-release/tests/site/previous_release
    cp tests/site/previous_release/make_db.py /tmp/deerflow-release/tests/site/previous_release/  # if it predates this script
    (cd /tmp/deerflow-release && .venv/bin/python tests/site/previous_release/make_db.py \\
        --out "$OLDPWD/tests/site/previous_release/db.sql")
    git worktree remove --force /tmp/deerflow-release

A model the release gained needs a row here (the script fails naming any empty table). The
database is a fresh SQLite file in a temporary ``DEER_FLOW_HOME``, migrated with the
project's settings (``deerflow_site.settings``, ``DJANGO_DEBUG`` on, the suite's
``tests/fixtures`` config) and filled through the product's services where it has them (the
ORM where a row is written by a running agent or a platform worker). The dump is Python's
``sqlite3`` ``iterdump()``: text, reviewable in a diff.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
DEFAULT_OUT = Path(__file__).resolve().parent / "db.sql"

# Tables the check below does not require rows in: Django's own bookkeeping, and the tables
# SQLite keeps for an FTS5 index (filled, or not, by the index itself).
FTS_SHADOW_SUFFIXES = ("_data", "_idx", "_docsize", "_config", "_content")


def user_tables(conn: sqlite3.Connection) -> list[str]:
    """Every table of the database but django_migrations, SQLite's own and FTS5 shadow tables."""
    rows = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name").fetchall()
    virtual = [name for name, sql in rows if (sql or "").upper().startswith("CREATE VIRTUAL TABLE")]
    shadow = {f"{v}{suffix}" for v in virtual for suffix in FTS_SHADOW_SUFFIXES}
    return [name for name, _ in rows if name != "django_migrations" and not name.startswith("sqlite_") and name not in shadow]


def table_counts(conn: sqlite3.Connection) -> dict[str, int]:
    return {name: conn.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0] for name in user_tables(conn)}


def dump(conn: sqlite3.Connection) -> list[str]:
    """``iterdump()``'s statements, made loadable by a plain ``executescript``.

    ``iterdump()`` writes an FTS5 table as a row put straight into ``sqlite_master`` under
    ``PRAGMA writable_schema``, which the loading connection does not see until it reopens:
    the triggers that write to the index then fail to create. Here the table is created with
    its own ``CREATE VIRTUAL TABLE`` (which makes its shadow tables), and the shadow tables'
    dumped rows replace the ones that creation wrote, so the index is the one dumped.
    """
    virtual = dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%'"))
    shadow = {f"{v}{suffix}" for v in virtual for suffix in FTS_SHADOW_SUFFIXES}
    out = []
    for statement in conn.iterdump():
        if statement.startswith("PRAGMA writable_schema="):
            continue
        if statement.startswith("INSERT INTO sqlite_master("):
            name = next(v for v in virtual if statement.startswith(f"INSERT INTO sqlite_master(type,name,tbl_name,rootpage,sql)VALUES('table','{v}',"))
            out.append(f"{virtual[name]};")
        elif any(statement.startswith(f"CREATE TABLE '{s}'") for s in shadow):
            continue
        elif any(statement.startswith(f'INSERT INTO "{s}" ') for s in shadow):
            out.append("INSERT OR REPLACE" + statement.removeprefix("INSERT"))
        else:
            out.append(statement)
    return out


def load(sql: str, path: Path) -> None:
    """A new SQLite file at *path* holding the dump. The tables' CHECK constraints call
    REGEXP (``ck_thread_id_format``), which SQLite leaves to the application; this is the
    one Django's backend registers."""
    conn = sqlite3.connect(path)
    conn.create_function("REGEXP", 2, lambda pattern, value: value is not None and re.search(pattern, str(value)) is not None,
                         deterministic=True)
    try:
        conn.executescript(sql)
    finally:
        conn.close()


def _setup(home: Path) -> Path:
    db = home / "deerflow.sqlite3"
    os.environ.update({
        "DJANGO_SETTINGS_MODULE": "deerflow_site.settings",
        "DJANGO_DEBUG": "true",
        "DEER_FLOW_HOME": str(home),
        "DATABASE_URL": f"sqlite:///{db}",
        "DEER_FLOW_CONFIG_PATH": str(ROOT / "tests" / "fixtures" / "config.yaml"),
        "DEER_FLOW_EXTENSIONS_CONFIG_PATH": str(ROOT / "tests" / "fixtures" / "extensions_config.json"),
        "CPU_PINNING": "false",
    })
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)
    return db


def _users():
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group, Permission

    User = get_user_model()
    alice = User.objects.create_superuser(username="alice", email="alice@example.com", password="pw-alice-123",
                                          first_name="Alice", last_name="Admin")
    bob = User.objects.create_user(username="bob", email="bob@example.com", password="pw-bob-123", first_name="Bob")
    carol = User.objects.create_user(username="carol", email="carol@example.com", password="pw-carol-123", is_active=False)
    operators = Group.objects.create(name="operators")
    operators.permissions.add(*Permission.objects.filter(codename__in=["view_run", "change_run", "view_thread"]))
    bob.groups.add(operators)
    bob.user_permissions.add(Permission.objects.get(codename="view_feedback"))
    return alice, bob, carol


def _accounts(alice, bob):
    from allauth.account.models import EmailAddress, EmailConfirmation
    from allauth.socialaccount.models import SocialAccount, SocialApp, SocialToken
    from django.contrib.sessions.backends.db import SessionStore
    from django.contrib.sites.models import Site
    from django.utils import timezone

    from apps.accounts.services import token_create

    token_create(owner=alice, name="ci pipeline", scopes=["threads:read", "runs:read", "runs:create"], expires_in_days=90)
    token_create(owner=bob, name="laptop", scopes=["threads:read", "threads:write"])
    EmailAddress.objects.create(user=alice, email=alice.email, verified=True, primary=True)
    address = EmailAddress.objects.create(user=bob, email=bob.email, verified=False, primary=True)
    EmailConfirmation.create(address)
    EmailConfirmation.objects.filter(email_address=address).update(sent=timezone.now())  # as send() marks it
    app = SocialApp.objects.create(provider="openid_connect", provider_id="keycloak", name="Keycloak", client_id="deerflow",
                                   secret="s3cret", settings={"server_url": "https://sso.example.com/realms/main"})
    app.sites.add(Site.objects.get_current())
    account = SocialAccount.objects.create(user=bob, provider="keycloak", uid="2f0c6a52-bob",
                                           extra_data={"preferred_username": "bob", "email": bob.email})
    SocialToken.objects.create(app=app, account=account, token="oidc-access-token", token_secret="oidc-refresh-token",
                               expires_at=timezone.now() + dt.timedelta(hours=1))
    session = SessionStore()
    session.update({"_auth_user_id": str(alice.pk), "_auth_user_backend": "django.contrib.auth.backends.ModelBackend",
                    "_auth_user_hash": alice.get_session_auth_hash()})
    session.create()


def _messages(question: str, answer: str, n: int):
    from langchain_core.messages import AIMessage, HumanMessage

    return [HumanMessage(content=question, id=f"human-{n}"),
            AIMessage(content=answer, id=f"ai-{n}", usage_metadata={"input_tokens": 120, "output_tokens": 40, "total_tokens": 160},
                      response_metadata={"deerflow_model": "test-model"})]


def _finished_run(*, thread, owner, question: str, answer: str, n: int, metadata: dict | None = None):
    """A run as the engine leaves it after success: its row, its journal, the thread's title."""
    from django.utils import timezone

    from apps.runs.journal import JournalEvent, RunProgress, journal_append, message_events
    from apps.runs.models import Run
    from apps.threads.services import thread_status_set, thread_title_set

    started = timezone.now()
    run = Run.objects.create(thread=thread, owner=owner, assistant_id="lead_agent", status=Run.Status.RUNNING,
                             kwargs={"input": {"messages": [{"role": "user", "content": question}]}, "stream_mode": ["values"]},
                             metadata=metadata or {}, model_name="test-model", request_id=f"req-{n}", started_at=started)
    progress = RunProgress()
    events = [JournalEvent("run.start", "trace", {}, {"caller": "lead_agent"}),
              *message_events(_messages(question, answer, n), progress, "test-model"),
              JournalEvent("run.end", "trace", {"status": "success"}, {"caller": "lead_agent"})]
    journal_append(thread_id=thread.pk, run_id=str(run.pk), events=events)
    usage = progress.usage.get("test-model", {})
    Run.objects.filter(pk=run.pk).update(status=Run.Status.SUCCESS, finished_at=timezone.now(), stop_reason="end_turn",
                                         input_tokens=usage.get("input_tokens", 0), output_tokens=usage.get("output_tokens", 0),
                                         token_usage=progress.usage)
    thread_status_set(thread_id=thread.pk, status="idle", now=timezone.now(), assistant_id="lead_agent")
    thread_title_set(thread_id=thread.pk, title=question[:60], only_if_untitled=True)
    run.refresh_from_db()
    return run


def _threads(alice, bob):
    from apps.runs.selectors import run_message_contents
    from apps.threads.feedback import feedback_upsert
    from apps.runs.search import thread_text_matches
    from apps.threads.services import thread_create, thread_set_pinned

    soup = thread_create(owner=alice, metadata={"project": "kitchen"})
    run = _finished_run(thread=soup, owner=alice, question="What soup goes with rye bread?", answer="Leek and potato soup.", n=1)
    feedback_upsert(user=alice, run=run, messages=run_message_contents(run=run), data={"rating": 1, "comment": "just right"})
    thread_set_pinned(thread=soup, pinned=True)
    trip = thread_create(owner=bob, thread_id="bob-trip-2024")
    _finished_run(thread=trip, owner=bob, question="Plan a weekend in Lisbon", answer="Day one: Alfama and the castle.", n=2)
    thread_text_matches(user=alice, query="soup")  # indexes the journal's messages for search
    return soup, run


def _agents(alice):
    from apps.agents.services import agent_create, agent_update

    agent = agent_create(owner=alice, data={"name": "researcher", "display_name": "Researcher", "description": "Finds sources.",
                                            "soul": "You cite every claim.", "model": "test-model", "shared": True,
                                            "model_settings": {"temperature": 0.2, "max_tokens": 4000}})
    agent_update(agent=agent, data={"description": "Finds and cites sources."})
    return agent


def _skills(alice):
    from apps.skills.models import GlobalSkillChange, SkillState
    from apps.skills.services import skill_set_enabled

    skill_set_enabled(user=alice, name="slide-deck", enabled=False)
    SkillState.objects.create(owner=None, name="data-analysis", enabled=False)
    # What skill_install_* records for an admin's install for everyone.
    GlobalSkillChange.objects.create(name="team-style", action=GlobalSkillChange.Action.INSTALL, version="v1", actor=alice,
                                     findings=[{"rule": "network", "severity": "warning", "file": "SKILL.md", "line": 3,
                                                "message": "mentions curl"}])


def _memory(alice):
    from dataclasses import asdict

    from apps.memory.models import MemoryProfile, PendingMemoryUpdate
    from apps.memory.services import fact_create
    from harness.memory.updater import UpdateJob

    fact_create(user=alice, content="Prefers metric units", category="preference", confidence=0.9)
    fact_create(user=alice, content="Works on a bakery's ordering system", category="context", confidence=0.7, agent="researcher")
    MemoryProfile.objects.filter(owner=alice, agent="").update(work_context="Runs a small bakery.", top_of_mind="Winter menu.")
    job = UpdateJob(owner=str(alice.pk), agent="", thread_id="left-over-thread", run_id="left-over-run",
                    messages=[{"role": "user", "content": "Remember I am vegetarian", "id": "m1"}])
    PendingMemoryUpdate.objects.create(owner=alice, thread_id=job.thread_id, job=asdict(job))


def _channels(bob, run):
    from apps.channels.base import ChatRef
    from apps.channels.conversations import conversation_thread
    from apps.channels.status import status_set
    from apps.channels.connections import connect_code_consume, connect_code_issue
    from apps.channels.outbox import delivery_enqueue

    issued = connect_code_issue(user=bob, provider="telegram", ttl_seconds=600)
    connection = connect_code_consume(provider="telegram", code_text=issued.code, external_id="424242", display_name="Bob B.")
    connect_code_issue(user=bob, provider="slack", ttl_seconds=600)  # one left unused
    conversation_thread(connection=connection, chat=ChatRef(provider="telegram", workspace="", chat="424242"), chat_title="Bob B.")
    status_set("telegram", state="connected", bot_name="deerflow_bot")
    status_set("slack", state="disabled", detail="channels.slack.enabled is false")
    delivery_enqueue(run_id=str(run.pk), connection_id=connection.pk, task_id="", title="")
    return connection


def _schedules(alice, bob, connection):
    from django.utils import timezone
    from django_celery_beat.models import IntervalSchedule, PeriodicTask, SolarSchedule

    from apps.schedules.models import ScheduledTaskRun
    from apps.schedules.services import scheduled_task_create
    from apps.threads.services import thread_create

    daily = scheduled_task_create(user=bob, data={"title": "Morning news", "prompt": "Summarise today's headlines.",
                                                  "cron": "0 7 * * 1-5", "timezone": "Europe/Lisbon", "deliver_to": connection.pk})
    scheduled_task_create(user=alice, data={"title": "Quarterly report", "prompt": "Draft the quarterly report.",
                                            "schedule_type": "once",
                                            "run_at": (timezone.now() + dt.timedelta(days=30)).isoformat()})
    # A firing, as dispatch leaves it once its run has settled.
    thread = thread_create(owner=bob, metadata={"scheduled_task_id": daily.pk})
    run = _finished_run(thread=thread, owner=bob, question="Summarise today's headlines.", answer="Three stories today.", n=3,
                        metadata={"scheduled_task_id": daily.pk, "deliver_to": connection.pk})
    ScheduledTaskRun.objects.create(task=daily, run=run, thread_id=thread.pk, trigger=ScheduledTaskRun.Trigger.SCHEDULED,
                                    status=ScheduledTaskRun.Status.SUCCESS, scheduled_for=run.started_at,
                                    started_at=run.started_at, finished_at=run.finished_at)
    ScheduledTaskRun.objects.create(task=daily, thread_id="", trigger=ScheduledTaskRun.Trigger.MANUAL,
                                    status=ScheduledTaskRun.Status.SKIPPED, error="the previous run was still going")
    # The other schedule kinds django-celery-beat keeps (an operator's own entries).
    every_hour = IntervalSchedule.objects.create(every=1, period=IntervalSchedule.HOURS)
    PeriodicTask.objects.create(name="operator: cleanup", task="apps.runs.tasks.cleanup", interval=every_hour, enabled=False)
    dawn = SolarSchedule.objects.create(event="sunrise", latitude=38.72, longitude=-9.14)
    PeriodicTask.objects.create(name="operator: sunrise", task="apps.runs.tasks.cleanup", solar=dawn, enabled=False)


def _governance(alice, bob, soup, run):
    from django.utils import timezone

    from apps.governance.models import ModelProbe
    from apps.governance.probes import probe_store
    from apps.governance.services import approval_rule_create, budget_set
    from apps.governance.stores import OrmApprovalStore
    from harness.governance.probe import ProbeResult, StepResult
    from harness.governance.stores import ApprovalRecord

    approval_rule_create(user=alice, data={"name": "ask-before-shell", "tool": "bash", "action": "ask"})
    OrmApprovalStore().record([ApprovalRecord(user_id=str(alice.pk), thread_id=soup.pk, run_id=str(run.pk), tool_call_id="call-1",
                                              tool="bash", args_digest="0" * 64, rule_name="ask-before-shell", rule_source="user",
                                              decision="approved", decided_by=str(alice.pk), reason="read-only command")])
    budget_set(user_id=None, data={"daily_tokens": 200000, "monthly_cost": "50.00", "note": "everyone"})
    budget_set(user_id=bob.pk, data={"daily_tokens": 50000, "note": "trial"})
    probe_store(ProbeResult(model="test-model", status="passed", steps=[StepResult(name="chat", status="passed", seconds=0.4),
                                                                        StepResult(name="tool_call", status="passed", seconds=0.9)]))
    ModelProbe.objects.create(model_name="retired-model", status=ModelProbe.Status.FAILED, failed_steps=["tool_call"],
                              steps=[{"name": "tool_call", "status": "failed", "detail": "", "error": "no tools", "seconds": 1.0}],
                              blocks_agent=True, probed_at=timezone.now())


def _admin_log(alice, agent):
    from django.contrib.admin.models import CHANGE, LogEntry

    from apps.agents.models import Agent

    LogEntry.objects.log_actions(user_id=alice.pk, queryset=Agent.objects.filter(pk=agent.pk), action_flag=CHANGE,
                                 change_message=[{"changed": {"fields": ["Description"]}}], single_object=True)


def fill() -> None:
    alice, bob, _carol = _users()
    _accounts(alice, bob)
    soup, run = _threads(alice, bob)
    agent = _agents(alice)
    _skills(alice)
    _memory(alice)
    connection = _channels(bob, run)
    _schedules(alice, bob, connection)
    _governance(alice, bob, soup, run)
    _admin_log(alice, agent)


def _commit() -> str:
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{head}{' (with uncommitted changes)' if dirty else ''}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"where the SQL dump goes (default: {DEFAULT_OUT})")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="deerflow-previous-release-") as home:
        db = _setup(Path(home))
        fill()
        from django.db import connections

        connections.close_all()
        conn = sqlite3.connect(db)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        counts = table_counts(conn)
        for name, count in counts.items():
            print(f"{name:45} {count}")
        empty = sorted(name for name, count in counts.items() if count == 0)
        assert not empty, f"tables left empty (give each a row in make_db.py): {', '.join(empty)}"
        lines = [f"-- Made by tests/site/previous_release/make_db.py at commit {_commit()};",
                 f"-- {len(counts)} tables, every one with rows. Regenerate: see that script's docstring.", *dump(conn)]
        conn.close()
        sql = "\n".join(lines) + "\n"
        copy = Path(home) / "reloaded.sqlite3"
        load(sql, copy)  # the dump must load back into the same tables and rows
        with sqlite3.connect(copy) as reloaded:
            assert table_counts(reloaded) == counts, "the dump does not load back into the same rows"
            for (fts,) in reloaded.execute("SELECT name FROM sqlite_master WHERE sql LIKE 'CREATE VIRTUAL TABLE%USING fts5%'").fetchall():
                reloaded.execute(f"INSERT INTO {fts}({fts}) VALUES('integrity-check')")
    args.out.write_text(sql)
    print(f"{len(counts)} tables, {sum(counts.values())} rows -> {args.out}")


if __name__ == "__main__":
    main()
