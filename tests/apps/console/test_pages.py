"""The Usage and Console pages render the reports on the server: numbers, SVG charts, tables."""

from __future__ import annotations

import pytest
from django.test import Client
from django.utils import timezone

pytestmark = [pytest.mark.django_db]


@pytest.fixture
def browser_client(user):
    client = Client()
    client.force_login(user)
    return client


def test_the_usage_page_shows_the_users_numbers_and_svg_charts(browser_client, user, other_user, priced_config, seed_run):
    seed_run(user, at=timezone.now(), title="Lisbon trip", by_model={"pro": {"input_tokens": 0, "output_tokens": 1_000_000}})
    seed_run(other_user, at=timezone.now(), title="Bob's plan", by_model={"lite": {"input_tokens": 5, "output_tokens": 5}})
    html = browser_client.get("/usage/?period=7d").content.decode()
    assert '<svg class="chart"' in html and "Tokens per day" in html and "Cost per day (USD)" in html
    assert "$8.00" in html and "Lisbon trip" in html and "Bob&#x27;s plan" not in html and "Bob's plan" not in html
    assert 'aria-current="page">7 days' in html


def test_a_bad_period_on_the_page_says_what_is_wrong(browser_client):
    response = browser_client.get("/usage/?period=forever")
    assert response.status_code == 422 and "period must be one of" in response.content.decode()


def test_the_console_is_for_staff_and_shows_everyone(browser_client, user, other_user, priced_config, seed_run):
    assert browser_client.get("/console/").status_code == 403
    user.is_staff = True
    user.save()
    seed_run(other_user, at=timezone.now(), title="Bob failed", status="error", error="provider said no",
             by_model={"lite": {"input_tokens": 5, "output_tokens": 5}})
    seed_run(other_user, at=timezone.now(), title="Bob running", status="running")
    html = browser_client.get("/console/").content.decode()
    assert "provider said no" in html and "Bob running" in html and "Top users" in html and "Queue: 0 waiting" in html
    assert ">bob</option>" in html
