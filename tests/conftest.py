"""Shared fixtures: users and API clients."""

import pytest
from rest_framework.test import APIClient


@pytest.fixture
def user(django_user_model):
    return django_user_model.objects.create_user(username="alice", email="alice@example.com", password="pw-alice-123")


@pytest.fixture
def other_user(django_user_model):
    return django_user_model.objects.create_user(username="bob", email="bob@example.com", password="pw-bob-123")


@pytest.fixture
def api_client():
    return APIClient()


@pytest.fixture
def user_client(user):
    client = APIClient()
    client.force_authenticate(user)
    return client
