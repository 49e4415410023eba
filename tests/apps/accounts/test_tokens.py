"""Personal access tokens: the API to manage them and bearer authentication with them."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from apps.accounts.authentication import MALFORMED
from apps.accounts.models import PersonalAccessToken
from apps.accounts.services import token_digest

pytestmark = [pytest.mark.django_db]


def test_create_shows_the_token_once_and_stores_only_its_digest(session_client, user):
    response = session_client.post("/api/tokens/", {"name": "nightly", "scopes": ["runs:read", "threads:read"], "expires_in_days": 30}, format="json", HTTP_X_CSRFTOKEN=_csrf(session_client))
    assert response.status_code == 201, response.content
    body = response.json()
    assert set(body) == {"id", "name", "token", "prefix", "scopes", "expires_at"}
    assert re.fullmatch(r"dfp_[A-Za-z0-9_-]{32,}", body["token"])
    assert body["token"].startswith(body["prefix"]) and body["scopes"] == ["runs:read", "threads:read"]
    record = PersonalAccessToken.objects.get(pk=body["id"])
    assert record.owner == user and record.digest == token_digest(body["token"])
    # The plaintext is nowhere in the row.
    assert body["token"] not in {str(v) for v in record.__dict__.values()}
    assert timedelta(days=29) < record.expires_at - timezone.now() <= timedelta(days=30)

    listing = session_client.get("/api/tokens/").json()
    assert listing == {"tokens": [{"id": record.pk, "name": "nightly", "prefix": body["prefix"], "scopes": ["runs:read", "threads:read"], "created_at": listing["tokens"][0]["created_at"], "last_used_at": None, "expires_at": listing["tokens"][0]["expires_at"]}]}
    assert body["token"] not in str(listing) and record.digest not in str(listing)


@pytest.mark.parametrize(
    ("payload", "fragment"),
    [
        ({"name": "", "scopes": ["runs:read"]}, "name:"),
        ({"name": "x" * 101, "scopes": ["runs:read"]}, "name:"),
        ({"name": "ok", "scopes": []}, "at least one scope"),
        ({"name": "ok", "scopes": ["runs:read", "admin:all"]}, "unknown admin:all"),
        ({"name": "ok", "scopes": ["runs:read"], "expires_in_days": 0}, "expires_in_days"),
        ({"name": "ok", "scopes": "runs:read"}, "scopes"),
        ({"scopes": ["runs:read"]}, "name"),
    ],
)
def test_create_rejects_bad_input_with_422(user_client, payload, fragment):
    response = user_client.post("/api/tokens/", payload, format="json")
    assert response.status_code == 422
    assert fragment in response.json()["detail"]
    assert not PersonalAccessToken.objects.exists()


def test_token_life_cycle_use_revoke(user, issue_token, bearer_client, user_client):
    issued = issue_token(user, scopes=["threads:read"])
    client = bearer_client(issued.token)
    me = client.get("/api/me")
    assert me.status_code == 200
    assert me.json() == {"id": user.pk, "username": "alice", "email": "alice@example.com", "is_staff": False}
    issued.record.refresh_from_db()
    assert issued.record.last_used_at is not None

    assert user_client.delete(f"/api/tokens/{issued.record.pk}/").status_code == 204
    revoked = client.get("/api/me")
    assert revoked.status_code == 401
    assert revoked.json() == {"detail": "this personal access token has been revoked"}
    assert revoked["WWW-Authenticate"].startswith("Bearer")
    # Gone from the owner's list, and a second revoke finds nothing.
    assert user_client.get("/api/tokens/").json() == {"tokens": []}
    assert user_client.delete(f"/api/tokens/{issued.record.pk}/").status_code == 404


def test_expired_token_is_401(user, issue_token, bearer_client):
    issued = issue_token(user, expires_in_days=1)
    client = bearer_client(issued.token)
    assert client.get("/api/me").status_code == 200
    PersonalAccessToken.objects.filter(pk=issued.record.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    response = client.get("/api/me")
    assert response.status_code == 401 and response.json()["detail"] == "this personal access token has expired"


@pytest.mark.parametrize(
    ("header", "detail"),
    [
        ("Bearer ghp_abcdefghijklmnopqrstuvwxyz0123456789ABCD", "not a DeerFlow personal access token (they start with dfp_)"),
        ("Bearer dfp_short", "malformed personal access token"),
        ("Bearer dfp_" + "A" * 43, "invalid personal access token"),
        ("Bearer", MALFORMED),
        ("Bearer dfp_a dfp_b", MALFORMED),
        ("Basic YWxpY2U6cHctYWxpY2UtMTIz", MALFORMED),
        ("Token dfp_" + "A" * 43, MALFORMED),
        ("dfp_" + "A" * 43, MALFORMED),
    ],
)
def test_bad_bearer_credentials_are_401(header, detail):
    response = APIClient().get("/api/me", HTTP_AUTHORIZATION=header)
    assert response.status_code == 401
    assert response.json() == {"detail": detail}
    assert response["WWW-Authenticate"] == 'Bearer realm="api"'


def test_truncated_token_is_401(user, issue_token, bearer_client):
    issued = issue_token(user)
    assert bearer_client(issued.token[:-1]).get("/api/me").status_code == 401
    assert bearer_client(issued.token[:36]).get("/api/me").status_code == 401
    assert bearer_client(issued.token).get("/api/me").status_code == 200


def test_token_of_a_deleted_or_deactivated_user_is_401(user, other_user, issue_token, bearer_client):
    gone = issue_token(user)
    user.delete()
    assert bearer_client(gone.token).get("/api/me").status_code == 401
    idle = issue_token(other_user)
    other_user.is_active = False
    other_user.save()
    response = bearer_client(idle.token).get("/api/me")
    assert response.status_code == 401 and response.json()["detail"] == "invalid personal access token"


def test_a_bad_bearer_never_falls_back_to_the_session_cookie(user, session_client):
    assert session_client.get("/api/me").status_code == 200
    response = session_client.get("/api/me", HTTP_AUTHORIZATION="Bearer dfp_" + "x" * 43)
    assert response.status_code == 401


def test_a_valid_bearer_acts_as_its_owner_even_beside_another_users_session(user, other_user, issue_token, session_client):
    issued = issue_token(other_user)
    body = session_client.get("/api/me", HTTP_AUTHORIZATION=f"Bearer {issued.token}").json()
    assert body["username"] == "bob"


def test_anonymous_me_is_401_with_a_bearer_challenge():
    response = APIClient().get("/api/me")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer realm="api"'


def test_token_management_needs_a_browser_session(user, issue_token, bearer_client):
    issued = issue_token(user)
    client = bearer_client(issued.token)
    refused = "personal access tokens cannot be used on this route"
    assert client.get("/api/tokens/").json() == {"detail": refused}
    create = client.post("/api/tokens/", {"name": "more", "scopes": ["runs:read"]}, format="json")
    assert create.status_code == 403 and create.json() == {"detail": refused}
    delete = client.delete(f"/api/tokens/{issued.record.pk}/")
    assert delete.status_code == 403
    assert PersonalAccessToken.objects.count() == 1 and PersonalAccessToken.objects.get().revoked_at is None


def test_users_see_and_revoke_only_their_own_tokens(user, other_user, issue_token, user_client):
    theirs = issue_token(other_user, name="bobs")
    mine = issue_token(user, name="alices")
    assert [t["name"] for t in user_client.get("/api/tokens/").json()["tokens"]] == ["alices"]
    response = user_client.delete(f"/api/tokens/{theirs.record.pk}/")
    assert response.status_code == 404 and response.json() == {"detail": f"Token {theirs.record.pk} not found"}
    theirs.record.refresh_from_db()
    assert theirs.record.revoked_at is None and mine.record.revoked_at is None


def test_last_used_is_written_at_most_once_a_minute(user, issue_token, bearer_client, settings):
    issued = issue_token(user)
    client = bearer_client(issued.token)
    client.get("/api/me")
    first = PersonalAccessToken.objects.get().last_used_at
    client.get("/api/me")
    assert PersonalAccessToken.objects.get().last_used_at == first
    past = timezone.now() - timedelta(seconds=settings.DEERFLOW_TOKEN_TOUCH_SECONDS + 1)
    PersonalAccessToken.objects.update(last_used_at=past)
    client.get("/api/me")
    assert PersonalAccessToken.objects.get().last_used_at > past


def _csrf(client) -> str:
    # A browser gets the cookie from any page with a form; the sign-in page is one.
    client.get("/accounts/tokens/")
    return client.cookies["csrftoken"].value


def test_admin_shows_a_users_tokens_without_digest_and_can_revoke(admin_client, user, issue_token):
    issued = issue_token(user, name="ci-bot")
    page = admin_client.get(f"/admin/accounts/user/{user.pk}/change/").content.decode()
    assert "ci-bot" in page and issued.record.prefix in page
    assert issued.record.digest not in page and issued.token not in page
    response = admin_client.post("/admin/accounts/personalaccesstoken/", {"action": "revoke", "_selected_action": [issued.record.pk]})
    assert response.status_code == 302
    issued.record.refresh_from_db()
    assert issued.record.revoked_at is not None
    assert APIClient(HTTP_AUTHORIZATION=f"Bearer {issued.token}").get("/api/me").status_code == 401


def test_bearer_authentication_loads_the_token_and_its_owner_as_the_orm_does(user):
    """The lookup behind every API request is prepared SQL, not a QuerySet: the records it
    returns must be the ORM's, field for field, on SQLite and on PostgreSQL."""
    from apps.accounts.authentication import authenticate_bearer
    from apps.accounts.services import token_create

    user.first_name, user.email = "Zoë", "zoe@example.com"
    user.save()
    raw = token_create(owner=user, name="ci", scopes=["runs:read", "threads:write"], expires_in_days=7).token
    PersonalAccessToken.objects.filter(digest=token_digest(raw)).update(last_used_at=timezone.now() - timedelta(hours=2))
    owner, token = authenticate_bearer(raw)
    expected = PersonalAccessToken.objects.select_related("owner").get(digest=token_digest(raw))
    for field in PersonalAccessToken._meta.concrete_fields:
        assert getattr(token, field.attname) == getattr(expected, field.attname), field.name
    for field in type(user)._meta.concrete_fields:
        assert getattr(owner, field.attname) == getattr(expected.owner, field.attname), field.name
    assert token.owner is owner and owner.pk == user.pk and not token._state.adding
    assert token.scopes == ["runs:read", "threads:write"] and timezone.is_aware(token.expires_at)


@pytest.mark.parametrize("header", ["Basic YWxpY2U6cHctYWxpY2UtMTIz", "Token {token}", "{token}", "Bearer", "Bearer dfp_" + "A" * 43])
def test_an_authorization_header_that_is_not_a_valid_bearer_is_401_even_with_a_session(user, issue_token, header):
    """A script that believes it sends a limited token must not get the session's full rights."""
    token = issue_token(user, scopes=["threads:read"]).token
    client = Client()
    client.force_login(user)
    assert client.get("/api/me").status_code == 200  # the session alone works
    for path in ("/api/me", "/api/threads/search", "/api/tokens/"):
        response = client.get(path, HTTP_AUTHORIZATION=header.format(token=token))
        assert response.status_code == 401, (path, response.content)
        assert response["WWW-Authenticate"] == 'Bearer realm="api"'
    # A plain Django page too: the header decides, not the cookie.
    page = client.get("/", HTTP_AUTHORIZATION=header.format(token=token))
    assert page.status_code == 401 and "detail" in page.json()


def test_an_unsupported_method_with_a_token_is_405(user, issue_token, bearer_client):
    client = bearer_client(issue_token(user).token)
    response = client.put("/api/threads/search", {}, format="json")
    assert response.status_code == 405, response.content
    assert client.delete("/api/me").status_code == 405
