"""The sandbox audit trail through the API: a run of the real lead agent that writes a file and
runs a command leaves one row per call, with the run's user, thread and run; staff read it in
Django admin (read-only), others cannot; rows older than sandbox_audit.retention_days are
purged; sandbox_audit.enabled: false keeps none."""

from __future__ import annotations

import hashlib
import os
from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from django.utils import timezone

from apps.governance.models import SandboxAuditEntry
from apps.governance.stores import OrmSandboxAuditStore
from apps.runs.models import Run
from harness.testing import call, tool_reply
from tests.apps.runs.test_runs_api import new_thread
from tests.apps.threads.conftest import read_body

pytestmark = [pytest.mark.django_db(transaction=True)]

COMMAND = "ls /mnt/user-data/workspace"


@pytest.fixture
def lead(tmp_path, monkeypatch, settings, scripted_agent):
    def configure(**audit):
        base = yaml.safe_load(Path(os.environ["DEER_FLOW_CONFIG_PATH"]).read_text())
        if audit:
            base["sandbox_audit"] = audit
        path = tmp_path / "config-audit.yaml"
        path.write_text(yaml.safe_dump(base))
        monkeypatch.setenv("DEER_FLOW_CONFIG_PATH", str(path))
        settings.DEERFLOW_AGENT_FACTORY = "tests.support.agents:make_scripted_lead_agent"
        scripted_agent(tool_reply(call("write_file", description="note", path="/mnt/user-data/workspace/a.txt", content="private text")),
                       tool_reply(call("bash", description="list", command=COMMAND)), "Done.")

    return configure


def run(client, tid):
    response = client.post(f"/api/threads/{tid}/runs/wait", {"assistant_id": "lead_agent",
                           "input": {"messages": [{"role": "user", "content": "go"}]}}, format="json")
    read_body(response)
    found = Run.objects.get(thread_id=tid)
    assert found.status == "success", found.error
    return found


def test_each_file_and_shell_call_of_a_run_is_a_row(user_client, user, lead):
    lead()
    tid = new_thread(user_client)
    the_run = run(user_client, tid)
    rows = list(SandboxAuditEntry.objects.order_by("id"))
    assert [(r.tool, r.access, r.outcome) for r in rows] == [("write_file", "write", "success"), ("bash", "write", "success")]
    write, bash = rows
    assert all((r.user_id, r.thread_id, r.run_id) == (user.pk, tid, str(the_run.pk)) for r in rows)
    assert bash.digest == hashlib.sha256(COMMAND.encode()).hexdigest() and bash.preview == COMMAND
    assert bash.paths == ["/mnt/user-data/workspace"] and write.paths == ["/mnt/user-data/workspace/a.txt"]
    assert "private text" not in write.preview


def test_staff_read_the_trail_in_admin_and_nobody_edits_it(client, django_user_model, user_client, lead):
    lead()
    run(user_client, new_thread(user_client))
    entry = SandboxAuditEntry.objects.get(tool="bash")
    plain = django_user_model.objects.create_user("plain", password="pw")
    client.force_login(plain)
    assert client.get("/admin/governance/sandboxauditentry/").status_code == 302  # to the login page
    staff = django_user_model.objects.create_superuser("boss", password="pw")
    client.force_login(staff)
    listing = client.get("/admin/governance/sandboxauditentry/")
    assert listing.status_code == 200 and COMMAND in listing.content.decode()
    detail = client.get(f"/admin/governance/sandboxauditentry/{entry.pk}/change/")
    assert detail.status_code == 200 and b'name="_save"' not in detail.content  # shown, not editable
    assert client.post(f"/admin/governance/sandboxauditentry/{entry.pk}/delete/", {"post": "yes"}).status_code == 403
    assert SandboxAuditEntry.objects.filter(pk=entry.pk).exists()


def test_rows_older_than_the_retention_are_purged(user_client, lead):
    lead(retention_days=7)
    run(user_client, new_thread(user_client))
    old = SandboxAuditEntry.objects.order_by("id").first()
    SandboxAuditEntry.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=8))
    assert OrmSandboxAuditStore().purge_if_due(7, force=True) == 1
    assert not SandboxAuditEntry.objects.filter(pk=old.pk).exists() and SandboxAuditEntry.objects.count() == 1


def test_the_trail_can_be_switched_off(user_client, lead):
    lead(enabled=False)
    run(user_client, new_thread(user_client))
    assert SandboxAuditEntry.objects.count() == 0
