"""CORS stays closed unless origins are listed; OpenID Connect providers come from settings."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import Client

from deerflow_site.settings.auth import social_providers_from_env

pytestmark = pytest.mark.django_db

ORIGIN = "https://app.example.com"


def test_cors_is_closed_by_default(client, settings):
    assert settings.CORS_ALLOWED_ORIGINS == []
    response = client.get("/api/health", HTTP_ORIGIN=ORIGIN)
    assert "Access-Control-Allow-Origin" not in response


def test_listed_origins_get_cors_with_content_location_exposed(client, settings):
    settings.CORS_ALLOWED_ORIGINS = [ORIGIN]
    response = client.get("/api/health", HTTP_ORIGIN=ORIGIN)
    assert response["Access-Control-Allow-Origin"] == ORIGIN
    assert response["Access-Control-Expose-Headers"] == "Content-Location, X-Request-ID, X-Trace-Id"
    assert "Access-Control-Allow-Origin" not in client.get("/api/health", HTTP_ORIGIN="https://evil.example")
    preflight = client.options("/api/me", HTTP_ORIGIN=ORIGIN, HTTP_ACCESS_CONTROL_REQUEST_METHOD="POST", HTTP_ACCESS_CONTROL_REQUEST_HEADERS="authorization, content-type")
    assert preflight.status_code == 200
    assert "authorization" in preflight["Access-Control-Allow-Headers"]
    # Cookies are not offered cross-origin: those callers use tokens.
    assert "Access-Control-Allow-Credentials" not in preflight
    # Pages are not API: no CORS there.
    assert "Access-Control-Allow-Origin" not in client.get("/accounts/login/", HTTP_ORIGIN=ORIGIN)


def test_oidc_providers_from_the_environment():
    oidc = '[{"id": "keycloak", "name": "Company SSO", "server_url": "https://sso.example.com/realms/x", "client_id": "deerflow", "secret": "s3", "pkce": true}]'
    providers = social_providers_from_env(oidc, '{"github": {"APPS": [{"client_id": "gh", "secret": "x"}]}}')
    assert providers["openid_connect"] == {
        "APPS": [{"provider_id": "keycloak", "name": "Company SSO", "client_id": "deerflow", "secret": "s3", "settings": {"server_url": "https://sso.example.com/realms/x", "oauth_pkce_enabled": True}}]
    }
    assert providers["github"]["APPS"][0]["client_id"] == "gh"
    assert social_providers_from_env("", "") == {}
    with pytest.raises(ImproperlyConfigured, match=r"DEERFLOW_OIDC_PROVIDERS\[0\] is missing server_url, client_id"):
        social_providers_from_env('[{"id": "x", "name": "X"}]', "")


def test_a_configured_oidc_provider_appears_on_the_sign_in_page(settings):
    settings.SOCIALACCOUNT_PROVIDERS = social_providers_from_env(
        '[{"id": "keycloak", "name": "Company SSO", "server_url": "https://sso.example.com/realms/x", "client_id": "deerflow", "secret": "s3"}]', ""
    )
    html = Client().get("/accounts/login/").content.decode()
    assert "Company SSO" in html
    assert 'href="/accounts/oidc/keycloak/login/?process=login"' in html
    # Without configuration the page offers no third-party sign-in.
    settings.SOCIALACCOUNT_PROVIDERS = {}
    assert "Company SSO" not in Client().get("/accounts/login/").content.decode()
