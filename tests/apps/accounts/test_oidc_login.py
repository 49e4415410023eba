"""An OpenID Connect sign-in configured only by settings, against a loopback OIDC server:
discovery, authorization redirect, code exchange, userinfo. The first account made this way on
an empty server becomes the admin, and the sign-up switch governs later ones."""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from deerflow_site.settings.auth import social_providers_from_env

pytestmark = [pytest.mark.django_db]


class _Provider(BaseHTTPRequestHandler):
    userinfo: dict = {}

    def log_message(self, *args):  # keep test output clean
        pass

    def _json(self, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        base = f"http://127.0.0.1:{self.server.server_port}"
        if self.path == "/.well-known/openid-configuration":
            self._json({
                "issuer": base,
                "authorization_endpoint": f"{base}/authorize",
                "token_endpoint": f"{base}/token",
                "userinfo_endpoint": f"{base}/userinfo",
                "token_endpoint_auth_methods_supported": ["client_secret_post"],
            })
        elif self.path == "/userinfo" and self.headers.get("Authorization") == "Bearer at-123":
            self._json(type(self).userinfo)
        else:
            self.send_error(404)

    def do_POST(self):
        form = parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
        if self.path == "/token" and form.get("code") == ["code-xyz"] and form.get("client_secret") == ["s3cret"]:
            self._json({"access_token": "at-123", "token_type": "Bearer", "expires_in": 300})
        else:
            self.send_error(400)


@pytest.fixture
def oidc_server(settings):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Provider)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    settings.SOCIALACCOUNT_PROVIDERS = social_providers_from_env(
        json.dumps([{"id": "corp", "name": "Corp SSO", "server_url": f"http://127.0.0.1:{server.server_port}", "client_id": "deerflow", "secret": "s3cret"}]), ""
    )
    yield server
    server.shutdown()
    server.server_close()


def _sign_in_with_sso(client: Client, userinfo: dict):
    _Provider.userinfo = userinfo
    page = client.get("/accounts/oidc/corp/login/")
    assert page.status_code == 200  # a confirmation form: sign-in starts with a POST, not a GET
    redirect = client.post("/accounts/oidc/corp/login/")
    assert redirect.status_code == 302
    authorize = urlparse(redirect["Location"])
    assert authorize.path == "/authorize"
    query = parse_qs(authorize.query)
    assert query["client_id"] == ["deerflow"]
    assert query["redirect_uri"] == ["http://testserver/accounts/oidc/corp/login/callback/"]
    # The provider sends the browser back with a code.
    return client.get("/accounts/oidc/corp/login/callback/", {"code": "code-xyz", "state": query["state"][0]})


def test_oidc_sign_in_creates_the_first_admin_then_respects_the_switch(oidc_server, settings):
    browser = Client()
    done = _sign_in_with_sso(browser, {"sub": "u-1", "email": "ada@corp.example", "preferred_username": "ada", "email_verified": True})
    assert done.status_code == 302 and done["Location"] == "/"
    ada = get_user_model().objects.get(email="ada@corp.example")
    assert ada.is_superuser and ada.is_staff and not ada.has_usable_password()
    assert browser.get("/api/me").json()["email"] == "ada@corp.example"

    # Sign-up is now closed: a new identity gets the closed page and no account.
    closed = _sign_in_with_sso(Client(), {"sub": "u-2", "email": "eve@corp.example", "preferred_username": "eve", "email_verified": True})
    assert "Sign-up is closed" in closed.content.decode()
    assert not get_user_model().objects.filter(email="eve@corp.example").exists()

    # With the switch on, the same identity gets an ordinary account.
    settings.DEERFLOW_ALLOW_SIGNUP = True
    opened = _sign_in_with_sso(Client(), {"sub": "u-2", "email": "eve@corp.example", "preferred_username": "eve", "email_verified": True})
    assert opened.status_code == 302
    eve = get_user_model().objects.get(email="eve@corp.example")
    assert not eve.is_staff and not eve.is_superuser

    # A returning identity signs in to the same account.
    again = Client()
    assert _sign_in_with_sso(again, {"sub": "u-1", "email": "ada@corp.example", "preferred_username": "ada", "email_verified": True}).status_code == 302
    assert again.get("/api/me").json()["id"] == ada.pk


def test_the_sign_in_page_lists_the_provider(oidc_server):
    html = Client().get("/accounts/login/").content.decode()
    assert re.search(r'<a class="button secondary" title="Corp SSO" href="/accounts/oidc/corp/login/\?process=login">Corp SSO</a>', html)
