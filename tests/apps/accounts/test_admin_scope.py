"""Staff operations by token need the ``admin`` scope, and the scope never makes anyone staff.

A staff member's token with an unrelated scope (``threads:write``, ``runs:read``) acts as an
ordinary user: it cannot set budgets, read the operator's overview, cancel other users' runs or
read everyone's usage and decisions. MCP settings, global skills, Django admin and the staff
pages stay session-only whatever the token holds.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.accounts.models import PersonalAccessToken
from apps.accounts.services import token_create
from apps.errors import InvalidRequest

pytestmark = pytest.mark.django_db

LACKS_ADMIN = {"detail": "this token lacks the 'admin' scope"}


def _running_run(owner):
    from apps.runs.models import Run
    from apps.threads.models import Thread

    thread = Thread.objects.create(owner=owner, status=Thread.Status.BUSY)
    return Run.objects.create(thread=thread, owner=owner, status=Run.Status.RUNNING, lease_owner="elsewhere:1",
                              lease_expires_at=timezone.now() + timedelta(seconds=60))


def test_a_staff_token_without_admin_cannot_set_budgets(staff_user, user, issue_token, bearer_client):
    from apps.governance.models import Budget

    writer = bearer_client(issue_token(staff_user, scopes=["threads:write"]).token)
    for target in ("default", str(user.pk)):
        response = writer.put(f"/api/budgets/{target}", {"daily_tokens": 5}, format="json")
        assert response.status_code == 403 and response.json() == {"detail": "this token lacks the 'admin' scope"}, target
    assert not Budget.objects.exists()
    admin = bearer_client(issue_token(staff_user, scopes=["admin"]).token)
    assert admin.put(f"/api/budgets/{user.pk}", {"daily_tokens": 5}, format="json").status_code == 200
    assert Budget.objects.get(user=user).daily_tokens == 5


def test_a_staff_token_without_admin_cannot_use_the_operator_routes(staff_user, user, issue_token, bearer_client):
    run = _running_run(user)
    token = bearer_client(issue_token(staff_user, scopes=["threads:read", "threads:write", "runs:read", "runs:create", "runs:cancel"]).token)
    assert token.get("/api/console/overview").json() == LACKS_ADMIN
    refused = token.post(f"/api/console/runs/{run.pk}/cancel")
    assert refused.status_code == 403 and refused.json() == LACKS_ADMIN
    run.refresh_from_db()
    assert run.cancel_requested_at is None
    admin = bearer_client(issue_token(staff_user, scopes=["admin"]).token)
    assert admin.get("/api/console/overview").status_code == 200
    assert admin.post(f"/api/console/runs/{run.pk}/cancel").status_code == 200
    run.refresh_from_db()
    assert run.cancel_requested_at is not None


def test_a_staff_token_reads_everyones_numbers_only_with_admin(staff_user, user, issue_token, bearer_client):
    reader = bearer_client(issue_token(staff_user, scopes=["runs:read", "threads:read"]).token)
    assert reader.get("/api/console/stats").status_code == 200  # its owner's own numbers
    for path in ("/api/console/stats?user=all", f"/api/console/runs?user={user.username}", "/api/console/usage/export?user=all",
                 "/api/console/feedback?user=all", "/api/approvals/decisions?all=1"):
        response = reader.get(path)
        assert response.status_code == 403 and response.json() == LACKS_ADMIN, path
    both = bearer_client(issue_token(staff_user, scopes=["runs:read", "threads:read", "admin"]).token)
    for path in ("/api/console/stats?user=all", f"/api/console/runs?user={user.username}", "/api/approvals/decisions?all=1"):
        assert both.get(path).status_code == 200, path


def test_the_admin_scope_never_makes_anyone_staff(staff_user, user, issue_token, bearer_client):
    """A token minted while its owner was staff, kept after the owner lost staff rights."""
    run = _running_run(staff_user)
    client = bearer_client(issue_token(staff_user, scopes=["admin", "runs:read", "threads:read", "threads:write"]).token)
    staff_user.is_staff = False
    staff_user.save(update_fields=["is_staff"])
    for method, path, body in (("put", "/api/budgets/default", {"daily_tokens": 5}), ("get", "/api/console/overview", None),
                               ("post", f"/api/console/runs/{run.pk}/cancel", None), ("get", "/api/console/stats?user=all", None),
                               ("get", "/api/approvals/decisions?all=1", None), ("get", "/api/mcp/config", None)):
        response = getattr(client, method)(path, body, format="json")
        assert response.status_code == 403 and response.json()["detail"], path


def test_session_only_staff_routes_refuse_even_an_admin_token(staff_user, issue_token, bearer_client):
    client = bearer_client(issue_token(staff_user, scopes=list(PersonalAccessToken.Scope.values)).token)
    for method, path in (("get", "/api/mcp/config"), ("put", "/api/mcp/config"), ("patch", "/api/mcp/config"), ("get", "/api/mcp/status"),
                         ("post", "/api/mcp/servers/x/test"), ("get", "/admin/"), ("get", "/console/"), ("get", "/observability/")):
        response = getattr(client, method)(path, {}, format="json")
        assert response.status_code == 403 and response.json() == {"detail": "personal access tokens cannot be used on this route"}, path


def test_only_staff_can_mint_an_admin_token(user, staff_user):
    with pytest.raises(InvalidRequest, match="admin: only staff accounts can hold the admin scope"):
        token_create(owner=user, name="x", scopes=["admin", "runs:read"])
    assert token_create(owner=staff_user, name="x", scopes=["admin"]).record.scopes == ["admin"]


def test_the_token_page_describes_admin_to_staff_and_never_preselects_it(client, user, staff_user):
    client.force_login(staff_user)
    page = client.get("/accounts/tokens/").content.decode()
    assert 'value="admin"' in page and "staff operations" in page
    assert 'value="admin" checked' not in page and 'value="admin"  checked' not in page
    client.force_login(user)
    assert 'value="admin"' not in client.get("/accounts/tokens/").content.decode()
