"""Browser accounts through allauth: sign-up switch and first admin, sign-in by username or
e-mail, remember-me, rate limiting, sign-out, password change and reset, the admin's door."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.core.management import call_command
from django.test import Client

pytestmark = [pytest.mark.django_db]

PASSWORD = "Correct-Horse-42-battery"
User = get_user_model()


def _signup(client, username, email, password=PASSWORD):
    return client.post("/accounts/signup/", {"username": username, "email": email, "password1": password, "password2": password})


def _sign_in(client, login, password, **extra):
    return client.post("/accounts/login/", {"login": login, "password": password, **extra})


def _signed_in_as(client) -> str | None:
    body = client.get("/api/me")
    return body.json()["username"] if body.status_code == 200 else None


def test_the_first_account_becomes_the_admin_and_then_sign_up_closes(client):
    page = client.get("/accounts/signup/")
    assert "becomes the administrator" in page.content.decode()
    response = _signup(client, "root", "root@example.com")
    assert response.status_code == 302
    admin = User.objects.get(username="root")
    assert admin.is_superuser and admin.is_staff
    assert _signed_in_as(client) == "root"

    stranger = Client()
    closed = stranger.get("/accounts/signup/")
    assert "Sign-up is closed" in closed.content.decode()
    _signup(stranger, "mallory", "m@example.com")
    assert not User.objects.filter(username="mallory").exists()
    # The landing page stops offering it.
    assert 'href="/accounts/signup/"' not in stranger.get("/").content.decode()


def test_sign_up_switch_opens_sign_up_for_ordinary_users(client, admin_user, settings):
    settings.DEERFLOW_ALLOW_SIGNUP = True
    assert 'href="/accounts/signup/"' in client.get("/").content.decode()
    assert _signup(client, "carol", "carol@example.com").status_code == 302
    carol = User.objects.get(username="carol")
    assert not carol.is_staff and not carol.is_superuser


def test_createsuperuser_works_and_closes_sign_up(client, monkeypatch):
    monkeypatch.setenv("DJANGO_SUPERUSER_PASSWORD", PASSWORD)
    call_command("createsuperuser", interactive=False, username="ops", email="ops@example.com", verbosity=0)
    assert "Sign-up is closed" in client.get("/accounts/signup/").content.decode()
    assert _sign_in(client, "ops@example.com", PASSWORD).status_code == 302
    assert _signed_in_as(client) == "ops"


@pytest.mark.parametrize("login", ["alice", "alice@example.com", "  ALICE@example.com "])
def test_sign_in_by_username_or_email(client, user, login):
    response = _sign_in(client, login, "pw-alice-123")
    assert response.status_code == 302 and response["Location"] == "/"
    assert _signed_in_as(client) == "alice"


def test_wrong_password_reads_like_an_unknown_user(client, user):
    wrong = _sign_in(client, "alice", "not-her-password").content.decode()
    unknown = _sign_in(client, "nobody", "not-her-password").content.decode()
    message = "The username and/or password you specified are not correct."
    assert message in wrong and message in unknown
    assert _signed_in_as(client) is None


def test_ten_quick_failures_lock_sign_in_for_a_while(client, user):
    for _ in range(10):
        assert "not correct" in _sign_in(client, "alice", "guess").content.decode()
    locked = _sign_in(client, "alice", "pw-alice-123")
    assert locked.status_code == 200
    assert "Too many failed login attempts" in locked.content.decode()
    assert _signed_in_as(client) is None


def test_remember_me_keeps_the_session_past_the_browser(user):
    forgetful, remembered = Client(), Client()
    _sign_in(forgetful, "alice", "pw-alice-123")
    _sign_in(remembered, "alice", "pw-alice-123", remember="on")
    assert forgetful.session.get_expire_at_browser_close() is True
    assert remembered.session.get_expire_at_browser_close() is False
    assert 'name="remember"' in Client().get("/accounts/login/").content.decode()


def test_sign_out_is_a_post(client, user):
    _sign_in(client, "alice", "pw-alice-123")
    confirm = client.get("/accounts/logout/")
    assert confirm.status_code == 200 and _signed_in_as(client) == "alice"
    assert client.post("/accounts/logout/").status_code == 302
    assert _signed_in_as(client) is None


def test_password_change(client, user):
    client.force_login(user)
    response = client.post("/accounts/password/change/", {"oldpassword": "pw-alice-123", "password1": PASSWORD, "password2": PASSWORD})
    assert response.status_code == 302
    user.refresh_from_db()
    assert user.check_password(PASSWORD)


def test_password_reset_by_email_link(client, user):
    response = client.post("/accounts/password/reset/", {"email": "alice@example.com"})
    assert response.status_code == 302
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["alice@example.com"]
    assert mail.outbox[0].subject.startswith("[DeerFlow]")
    link = re.search(r"http://testserver(/accounts/password/reset/key/\S+/)", mail.outbox[0].body).group(1)
    form_page = client.get(link, follow=True)
    assert form_page.status_code == 200
    done = client.post(form_page.redirect_chain[-1][0], {"password1": PASSWORD, "password2": PASSWORD})
    assert done.status_code == 302
    assert _sign_in(Client(), "alice", PASSWORD).status_code == 302
    # An unknown address gets the same answer (no account enumeration); allauth tells that
    # mailbox that it has no account here, without a reset link.
    assert client.post("/accounts/password/reset/", {"email": "nobody@example.com"}).status_code == 302
    assert mail.outbox[-1].to == ["nobody@example.com"] and "/password/reset/key/" not in mail.outbox[-1].body


def test_email_defaults_to_the_console():
    from deerflow_site.settings import auth

    assert auth.EMAIL_BACKEND == "django.core.mail.backends.console.EmailBackend"


def test_the_admin_signs_in_through_allauth(client, admin_user):
    response = client.get("/admin/login/?next=/admin/")
    assert response.status_code == 302 and response["Location"] == "/accounts/login/?next=%2Fadmin%2F"
    signed_in = _sign_in(client, "admin", "password", next="/admin/")
    assert signed_in["Location"] == "/admin/"
    assert client.get("/admin/").status_code == 200


def test_a_signed_in_non_staff_user_gets_no_admin(client, user):
    client.force_login(user)
    assert client.get("/admin/login/").status_code == 403


def test_account_pages_use_the_product_layout(client, user):
    for path in ("/accounts/login/", "/accounts/signup/", "/accounts/password/reset/"):
        html = client.get(path).content.decode()
        assert '<link rel="stylesheet" href="/static/css/app.css">' in html, path
        assert 'class="topbar' in html and 'class="card"' in html, path
        # Scripts are the site's own (the theme and dialogs), never a third party's.
        assert not re.search(r"(//|\.)cdn[.\w-]*\.", html.lower()) and 'src="http' not in html and 'src="//' not in html, path
    client.force_login(user)
    html = client.get("/accounts/password/change/").content.decode()
    assert 'href="/accounts/tokens/"' in html and 'class="button"' in html


def test_token_page_creates_shows_once_and_revokes(client, user):
    client.force_login(user)
    client.get("/accounts/tokens/")
    created = client.post("/accounts/tokens/", {"action": "create", "name": "laptop", "scopes": ["threads:read", "runs:create"], "expires_in_days": "7"})
    assert created.status_code == 200 and created["Cache-Control"] == "no-store"
    token = re.search(r'value="(dfp_[A-Za-z0-9_-]+)"', created.content.decode()).group(1)
    assert Client(HTTP_AUTHORIZATION=f"Bearer {token}").get("/api/me").json()["username"] == "alice"

    listing = client.get("/accounts/tokens/").content.decode()
    assert "laptop" in listing and token not in listing and token[:10] in listing

    record = user.access_tokens.get()
    assert client.post("/accounts/tokens/", {"action": "revoke", "token_id": record.pk}).status_code == 302
    assert Client(HTTP_AUTHORIZATION=f"Bearer {token}").get("/api/me").status_code == 401

    bad = client.post("/accounts/tokens/", {"action": "create", "name": "x", "expires_in_days": "7"})
    assert bad.status_code == 422 and "choose at least one scope" in bad.content.decode()
    never = client.post("/accounts/tokens/", {"action": "create", "name": "x", "scopes": ["runs:read"], "expires_in_days": "soon"})
    assert never.status_code == 422 and "whole number of days" in never.content.decode()
    # The form keeps what was chosen.
    assert 'value="runs:read" checked' in never.content.decode()


def test_token_page_needs_sign_in(client):
    response = client.get("/accounts/tokens/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
