"""DeerFlow's frontend signs in here: /api/v1/auth/* as its Next.js code calls and reads it.

Each request below is the one the frontend sends (frontend/src/app/(auth)/login/page.tsx,
setup/page.tsx, core/auth/server.ts, AuthProvider.tsx, core/api/fetcher.ts): the sign-in as a
form with the e-mail address in ``username``, writes carrying ``X-CSRF-Token`` echoed from the
readable ``csrf_token`` cookie, and its server side asking ``me`` with nothing but the
``access_token`` cookie. The client enforces CSRF, as a browser's requests are checked.
"""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from apps.accounts.permissions import TOKEN_NOT_ALLOWED
from apps.accounts.services import token_create
from deerflow_site.settings.auth import social_providers_from_env

pytestmark = pytest.mark.django_db

User = get_user_model()
PASSWORD = "correct-horse-battery"


def browser() -> Client:
    return Client(enforce_csrf_checks=True)


def sign_in(client: Client, email: str, password: str = PASSWORD, **extra):
    # As the login page sends it: URLSearchParams, the address in `username`.
    return client.post("/api/v1/auth/login/local", {"username": email, "password": password, "remember_me": "true"}, **extra)


def csrf_header(client: Client) -> dict:
    return {"HTTP_X_CSRF_TOKEN": client.cookies["csrf_token"].value}


@pytest.fixture
def admin():
    return User.objects.create_user(username="admin", email="admin@example.com", password=PASSWORD, is_staff=True, is_superuser=True)


@pytest.fixture
def member(admin):
    return User.objects.create_user(username="member", email="member@example.com", password=PASSWORD)


# --- first run -------------------------------------------------------------------------------


def test_setup_status_asks_for_the_first_admin_until_there_is_one():
    client = browser()
    assert client.get("/api/v1/auth/setup-status").json() == {"needs_setup": True, "registration_enabled": True}
    User.objects.create_user(username="root", email="root@example.com", password=PASSWORD, is_staff=True, is_superuser=True)
    assert client.get("/api/v1/auth/setup-status").json() == {"needs_setup": False, "registration_enabled": False}


def test_initialize_creates_the_admin_and_signs_in_only_while_there_is_none():
    client = browser()
    response = client.post("/api/v1/auth/initialize", {"email": "boss@example.com", "password": PASSWORD, "remember_me": True},
                           content_type="application/json")
    assert response.status_code == 201, response.content
    body = response.json()
    boss = User.objects.get(email="boss@example.com")
    assert body == {"id": str(boss.pk), "email": "boss@example.com", "system_role": "admin", "needs_setup": False, "oauth_provider": None}
    assert boss.is_superuser and boss.is_staff
    assert response.cookies["access_token"]["httponly"] and not response.cookies["csrf_token"]["httponly"]
    assert client.get("/api/v1/auth/me").json()["email"] == "boss@example.com"

    again = browser().post("/api/v1/auth/initialize", {"email": "second@example.com", "password": PASSWORD},
                           content_type="application/json")
    assert again.status_code == 409
    assert again.json() == {"detail": {"code": "system_already_initialized", "message": "System already initialized"}}
    assert not User.objects.filter(email="second@example.com").exists()


def test_initialize_lost_to_a_racing_setup_leaves_no_account(monkeypatch):
    """The check before the lock passed, but an admin appeared before the insert: no account."""
    from apps.accounts import deerflow_auth

    monkeypatch.setattr(deerflow_auth.selectors, "superuser_exists", lambda: False)
    User.objects.create_user(username="first", email="first@example.com", password=PASSWORD, is_staff=True, is_superuser=True)
    response = browser().post("/api/v1/auth/initialize", {"email": "late@example.com", "password": PASSWORD},
                              content_type="application/json")
    assert response.status_code == 409 and response.json()["detail"]["code"] == "system_already_initialized"
    assert not User.objects.filter(email="late@example.com").exists()


def test_initialize_applies_our_password_rules():
    response = browser().post("/api/v1/auth/initialize", {"email": "boss@example.com", "password": "password"},
                              content_type="application/json")
    assert response.status_code == 422
    errors = response.json()["detail"]
    assert errors and all(e["type"] == "value_error" and e["loc"][0] == "body" and e["msg"] for e in errors)
    assert not User.objects.exists()


# --- signing in ------------------------------------------------------------------------------


def test_login_sets_the_cookies_the_frontend_checks_and_me_answers_the_user(member):
    client = browser()
    response = sign_in(client, "member@example.com")
    assert response.status_code == 200, response.content
    assert response.json()["needs_setup"] is False and response.json()["expires_in"] > 0
    access, csrf = response.cookies["access_token"], response.cookies["csrf_token"]
    assert access["httponly"] and not csrf["httponly"]
    # One session, under both names; one CSRF secret, readable under the frontend's name.
    assert access.value == response.cookies["sessionid"].value
    assert csrf.value == response.cookies["csrftoken"].value

    me = client.get("/api/v1/auth/me")
    assert me.json() == {"id": str(member.pk), "email": "member@example.com", "system_role": "user",
                         "needs_setup": False, "oauth_provider": None}

    # The frontend's server side forwards the access_token cookie alone.
    ssr = Client()
    ssr.cookies["access_token"] = access.value
    assert ssr.get("/api/v1/auth/me").json()["id"] == str(member.pk)
    # The rest of the API knows the session too (the frontend's LangGraph calls).
    assert ssr.get("/api/me").json()["username"] == "member"


def test_staff_are_admins_to_the_frontend(admin):
    client = browser()
    assert sign_in(client, "admin@example.com").status_code == 200
    assert client.get("/api/v1/auth/me").json()["system_role"] == "admin"


def test_wrong_password_is_401_with_deerflows_error_code(member):
    response = sign_in(browser(), "member@example.com", "not-the-password")
    assert response.status_code == 401
    assert response.json() == {"detail": {"code": "invalid_credentials", "message": "Incorrect email or password"}}
    assert "access_token" not in response.cookies
    assert sign_in(browser(), "nobody@example.com").status_code == 401


def test_missing_fields_are_422_as_the_frontend_parses_them():
    response = browser().post("/api/v1/auth/login/local", {"username": "member@example.com"})
    assert response.status_code == 422
    assert response.json()["detail"][0] == {"loc": ["body", "password"], "msg": "Field required", "type": "value_error"}


def test_me_without_a_session_is_401():
    assert browser().get("/api/v1/auth/me").status_code == 401
    forged = Client()
    forged.cookies["access_token"] = "not-a-session"
    assert forged.get("/api/v1/auth/me").status_code == 401


def test_allauths_failed_login_limit_applies(member, settings):
    # The configured limit (ACCOUNT_RATE_LIMITS in deerflow_site/settings/auth.py), made small here.
    settings.ACCOUNT_RATE_LIMITS = {**settings.ACCOUNT_RATE_LIMITS, "login_failed": "3/m/ip,3/15m/key"}
    client = browser()
    for _ in range(3):
        assert sign_in(client, "member@example.com", "guess").status_code == 401
    locked = sign_in(client, "member@example.com")  # even the right password now
    assert locked.status_code == 429
    assert locked.json() == {"detail": "Too many login attempts. Try again later."}
    assert "access_token" not in locked.cookies


def test_the_default_limit_is_configured_for_tests_too(member):
    from allauth.account import app_settings

    assert app_settings.RATE_LIMITS["login_failed"]
    client = browser()
    statuses = [sign_in(client, "member@example.com", "guess").status_code for _ in range(11)]
    assert statuses[-1] == 429 and set(statuses[:-1]) <= {401, 429}


def test_logout_ends_the_session_and_clears_the_cookies(member):
    client = browser()
    access = sign_in(client, "member@example.com").cookies["access_token"].value
    response = client.post("/api/v1/auth/logout")  # the frontend sends no CSRF header here
    assert response.status_code == 200 and response.json() == {"message": "Successfully logged out"}
    assert response.cookies["access_token"]["max-age"] == 0 and response.cookies["access_token"].value == ""
    assert client.get("/api/v1/auth/me").status_code == 401
    stale = Client()
    stale.cookies["access_token"] = access
    assert stale.get("/api/v1/auth/me").status_code == 401


def test_sign_in_routes_refuse_another_sites_origin(member, settings):
    evil = sign_in(browser(), "member@example.com", HTTP_ORIGIN="https://evil.example")
    assert evil.status_code == 403 and evil.json() == {"detail": "Cross-site auth request denied."}
    assert "access_token" not in evil.cookies
    assert sign_in(browser(), "member@example.com", HTTP_ORIGIN="http://testserver").status_code == 200
    # DEERFLOW_FRONTEND_ORIGINS joins CSRF_TRUSTED_ORIGINS: the frontend's origin is let in.
    settings.CSRF_TRUSTED_ORIGINS = ["http://localhost:3000"]
    assert sign_in(browser(), "member@example.com", HTTP_ORIGIN="http://localhost:3000").status_code == 200


def test_the_sign_in_routes_take_no_token(member):
    token = token_create(owner=member, name="script", scopes=["threads:read"]).token
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    for path in ("/api/v1/auth/login/local", "/api/v1/auth/logout", "/api/v1/auth/register",
                 "/api/v1/auth/initialize", "/api/v1/auth/change-password"):
        response = client.post(path, {}, content_type="application/json")
        assert response.status_code == 403 and response.json() == {"detail": TOKEN_NOT_ALLOWED}, path
    assert client.get("/api/v1/auth/me").json() == {"detail": TOKEN_NOT_ALLOWED}


# --- CSRF on writes --------------------------------------------------------------------------


def test_a_write_with_x_csrf_token_succeeds_and_without_it_is_refused(member):
    client = browser()
    sign_in(client, "member@example.com")
    body = {"current_password": PASSWORD, "new_password": "another-long-phrase"}

    refused = client.post("/api/v1/auth/change-password", body, content_type="application/json")
    assert refused.status_code == 403 and "CSRF" in refused.json()["detail"]
    wrong = client.post("/api/v1/auth/change-password", body, content_type="application/json", HTTP_X_CSRF_TOKEN="x" * 32)
    assert wrong.status_code == 403
    member.refresh_from_db()
    assert member.check_password(PASSWORD)

    done = client.post("/api/v1/auth/change-password", body, content_type="application/json", **csrf_header(client))
    assert done.status_code == 200 and done.json() == {"message": "Password changed successfully"}
    member.refresh_from_db()
    assert member.check_password("another-long-phrase")
    # Still signed in, under the session's new key, mirrored into access_token.
    assert done.cookies["access_token"].value == done.cookies["sessionid"].value
    ssr = Client()
    ssr.cookies["access_token"] = done.cookies["access_token"].value
    assert ssr.get("/api/v1/auth/me").json()["id"] == str(member.pk)
    assert sign_in(browser(), "member@example.com", "another-long-phrase").status_code == 200


def test_x_csrf_token_protects_the_rest_of_the_api_and_djangos_header_still_works(member):
    client = browser()
    sign_in(client, "member@example.com")
    assert client.post("/api/threads", {}, content_type="application/json").status_code == 403
    assert client.post("/api/threads", {}, content_type="application/json", **csrf_header(client)).status_code == 200
    django_header = {"HTTP_X_CSRFTOKEN": client.cookies["csrftoken"].value}
    assert client.post("/api/threads", {}, content_type="application/json", **django_header).status_code == 200


def test_change_password_with_a_wrong_current_password_is_400(member):
    client = browser()
    sign_in(client, "member@example.com")
    response = client.post("/api/v1/auth/change-password", {"current_password": "nope", "new_password": "another-long-phrase"},
                           content_type="application/json", **csrf_header(client))
    assert response.status_code == 400
    assert response.json() == {"detail": {"code": "invalid_credentials", "message": "Current password is incorrect"}}


# --- sign-up ---------------------------------------------------------------------------------


def test_register_is_refused_while_signup_is_closed(admin):
    response = browser().post("/api/v1/auth/register", {"email": "new@example.com", "password": PASSWORD},
                              content_type="application/json")
    assert response.status_code == 403
    assert response.json()["detail"]["code"] == "registration_disabled"
    assert not User.objects.filter(email="new@example.com").exists()


def test_register_follows_the_signup_switch_and_signs_in(admin, settings):
    settings.DEERFLOW_ALLOW_SIGNUP = True
    assert browser().get("/api/v1/auth/setup-status").json() == {"needs_setup": False, "registration_enabled": True}
    client = browser()
    response = client.post("/api/v1/auth/register", {"email": "new@example.com", "password": PASSWORD, "remember_me": True},
                           content_type="application/json")
    assert response.status_code == 201, response.content
    new = User.objects.get(email="new@example.com")
    assert response.json() == {"id": str(new.pk), "email": "new@example.com", "system_role": "user", "needs_setup": False,
                               "oauth_provider": None}
    assert not new.is_staff and new.check_password(PASSWORD)
    assert client.get("/api/v1/auth/me").json()["id"] == str(new.pk)

    taken = browser().post("/api/v1/auth/register", {"email": "new@example.com", "password": PASSWORD},
                           content_type="application/json")
    assert taken.status_code == 400 and taken.json()["detail"]["code"] == "email_already_exists"


# --- providers -------------------------------------------------------------------------------


def test_providers_lists_our_single_sign_on_providers(settings):
    assert browser().get("/api/v1/auth/providers").json() == {"providers": []}
    settings.SOCIALACCOUNT_PROVIDERS = social_providers_from_env(
        '[{"id": "keycloak", "name": "Company SSO", "server_url": "https://sso.example.com/realms/x", "client_id": "deerflow", "secret": "s3"}]', ""
    )
    assert browser().get("/api/v1/auth/providers").json() == {
        "providers": [{"id": "keycloak", "display_name": "Company SSO", "type": "oidc"}]}
    start = browser().get("/api/v1/auth/oauth/keycloak?next=/workspace&remember_me=true")
    assert start.status_code == 302 and start["Location"].startswith("/accounts/oidc/keycloak/login/")
    assert "next=%2Fworkspace" in start["Location"]
    assert browser().get("/api/v1/auth/oauth/other").status_code == 400


def test_a_sign_in_finished_under_accounts_keeps_the_frontends_cookie_in_step(member, settings):
    """Single sign-on ends on allauth's callback under /accounts/, not on these routes: the
    browser that set out from the frontend still gets access_token for the session it ends with."""
    settings.SOCIALACCOUNT_PROVIDERS = social_providers_from_env(
        '[{"id": "keycloak", "name": "Company SSO", "server_url": "https://sso.example.com/realms/x", "client_id": "deerflow", "secret": "s3"}]', ""
    )
    client = Client()
    assert client.get("/api/v1/auth/oauth/keycloak?next=/workspace").status_code == 302
    # Stand-in for the provider's callback: allauth signs the browser in under /accounts/.
    done = client.post("/accounts/login/", {"login": "member", "password": PASSWORD})
    assert done.status_code == 302
    assert done.cookies["access_token"].value == done.cookies["sessionid"].value
    ssr = Client()
    ssr.cookies["access_token"] = done.cookies["access_token"].value
    assert ssr.get("/api/v1/auth/me").json()["id"] == str(member.pk)


def test_the_bundled_ui_gets_no_mirrors(member):
    response = Client().post("/accounts/login/", {"login": "member", "password": PASSWORD})
    assert "sessionid" in response.cookies
    assert "access_token" not in response.cookies and "csrf_token" not in response.cookies


def test_deerflow_frontend_origins_are_trusted_for_csrf_and_cors():
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "DEERFLOW_FRONTEND_ORIGINS": "http://localhost:3000/",
           "CSRF_TRUSTED_ORIGINS": "https://a.example.com", "CORS_ALLOWED_ORIGINS": "https://tools.example.com"}
    env.pop("CORS_ALLOW_CREDENTIALS", None)
    code = ("import django, json; django.setup(); from django.conf import settings as s; "
            "print(json.dumps([s.CSRF_TRUSTED_ORIGINS, s.CORS_ALLOWED_ORIGINS, s.CORS_ALLOW_CREDENTIALS, 'x-csrf-token' in s.CORS_ALLOW_HEADERS]))")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert json.loads(out.strip().splitlines()[-1]) == [
        ["https://a.example.com", "http://localhost:3000"], ["https://tools.example.com", "http://localhost:3000"], True, True]
    bad = subprocess.run([sys.executable, "-c", code], env={**env, "DEERFLOW_FRONTEND_ORIGINS": "localhost:3000"},
                         capture_output=True, text=True)
    assert bad.returncode != 0 and "DEERFLOW_FRONTEND_ORIGINS" in bad.stderr
