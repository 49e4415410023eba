"""Token scopes, token refusal on other routes, CSRF for sessions only, and plain Django views.

Runs on the project URL conf plus throwaway views (probe_urls) whose token rules the test sets.
"""

from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.test import APIClient

from apps.accounts.models import PersonalAccessToken

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.apps.accounts.probe_urls")]

REFUSED = {"detail": "personal access tokens cannot be used on this route"}


def test_a_read_only_token_can_read_but_not_create(user, issue_token, bearer_client):
    client = bearer_client(issue_token(user, scopes=["threads:read", "runs:read"]).token)
    read = client.get("/api/_probe/")
    assert read.status_code == 200 and read.json() == {"user": "alice", "via": "token"}
    assert client.head("/api/_probe/").status_code == 200  # HEAD needs what GET needs
    create = client.post("/api/_probe/", {}, format="json")
    assert create.status_code == 403
    assert create.json() == {"detail": "this token lacks the 'runs:create' scope"}


def test_a_token_with_the_scope_can_create(user, issue_token, bearer_client):
    client = bearer_client(issue_token(user, scopes=["runs:create"]).token)
    assert client.post("/api/_probe/", {}, format="json").status_code == 201
    assert client.get("/api/_probe/").json() == {"detail": "this token lacks the 'threads:read' scope"}


def test_tokens_are_refused_on_methods_and_routes_that_do_not_list_them(user, issue_token, bearer_client):
    client = bearer_client(issue_token(user).token)  # every scope
    assert client.delete("/api/_probe/").json() == REFUSED
    response = client.get("/api/_session_only/")
    assert response.status_code == 403 and response.json() == REFUSED


def test_sessions_are_not_limited_by_token_scopes(user_client):
    assert user_client.delete("/api/_probe/").status_code == 204
    assert user_client.get("/api/_session_only/").status_code == 200
    assert user_client.get("/api/_probe/").json() == {"user": "alice", "via": "session"}


def test_session_posts_need_the_csrf_token(user, session_client):
    refused = session_client.post("/api/_probe/", {}, format="json")
    assert refused.status_code == 403 and "CSRF" in refused.json()["detail"]
    session_client.get("/accounts/tokens/")  # any page with a form sets the cookie
    csrf = session_client.cookies["csrftoken"].value
    assert session_client.post("/api/_probe/", {}, format="json", HTTP_X_CSRFTOKEN=csrf).status_code == 201
    # The same holds for token management.
    no_csrf = session_client.post("/api/tokens/", {"name": "n", "scopes": ["runs:read"]}, format="json")
    assert no_csrf.status_code == 403 and not PersonalAccessToken.objects.exists()


def test_bearer_posts_skip_csrf(user, issue_token):
    client = APIClient(enforce_csrf_checks=True)
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issue_token(user).token}")
    assert client.post("/api/_probe/", {}, format="json").status_code == 201


def test_plain_pages_refuse_bearer_tokens_even_with_a_session(user, issue_token):
    browser = Client()
    browser.force_login(user)
    assert browser.get("/_plain_page/").json() == {"user": "alice"}
    token = issue_token(user).token
    for path in ("/_plain_page/", "/accounts/tokens/", "/admin/", "/accounts/password/change/"):
        response = browser.get(path, HTTP_AUTHORIZATION=f"Bearer {token}")
        assert response.status_code == 403, path
        assert response.json() == REFUSED


def test_a_plain_view_that_accepts_tokens(user, other_user, issue_token):
    token = issue_token(user, scopes=["runs:read"]).token
    anonymous = Client(enforce_csrf_checks=True)
    assert anonymous.get("/_plain_token/", HTTP_AUTHORIZATION=f"Bearer {token}").json() == {"user": "alice", "method": "GET"}
    # Scope missing -> 403 naming it; bad token -> 401 with the challenge.
    post = anonymous.post("/_plain_token/", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert post.status_code == 403 and post.json() == {"detail": "this token lacks the 'runs:create' scope"}
    bad = anonymous.get("/_plain_token/", HTTP_AUTHORIZATION="Bearer dfp_" + "z" * 43)
    assert bad.status_code == 401 and bad["WWW-Authenticate"] == 'Bearer realm="api"'
    # With the scope, a bearer POST passes without a CSRF token, as the token's owner, even
    # beside another user's session cookie.
    creator = issue_token(user, scopes=["runs:create"]).token
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(other_user)
    assert browser.post("/_plain_token/", HTTP_AUTHORIZATION=f"Bearer {creator}").json() == {"user": "alice", "method": "POST"}
    # Without a bearer, that browser's POST still needs CSRF.
    assert browser.post("/_plain_token/").status_code == 403
