"""Fixtures for the accounts tests: a clean rate-limit cache, token helpers, session clients."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from apps.accounts.models import PersonalAccessToken
from apps.accounts.selectors import token_scopes_offered
from apps.accounts.services import token_create

# Every scope an ordinary user's token can hold (`admin` is for staff accounts only).
ALL_SCOPES = [s for s in PersonalAccessToken.Scope.values if s != PersonalAccessToken.Scope.ADMIN]


@pytest.fixture(autouse=True)
def _fresh_rate_limits():
    # allauth counts failed sign-ins in the cache; one test's failures must not lock the next.
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def issue_token():
    def issue(owner, scopes=None, **kwargs):
        """A token for ``owner``; by default with every scope the owner may hold."""
        scopes = token_scopes_offered(user=owner) if scopes is None else scopes
        return token_create(owner=owner, name=kwargs.pop("name", "script"), scopes=scopes, **kwargs)

    return issue


@pytest.fixture
def bearer_client():
    def make(token: str) -> APIClient:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
        return client

    return make


@pytest.fixture
def session_client(user):
    """A real session (not force_authenticate) with CSRF checks on, as a browser has."""
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(user)
    return client


@pytest.fixture
def staff_user(django_user_model):
    return django_user_model.objects.create_user(username="root", email="root@example.com", password="pw-root-123", is_staff=True)
