"""``/api/console/{stats,runs,usage}`` over seeded runs: pricing from config, zero-filled local
days, ownership, and the 422/403 answers for bad filters and non-admins."""

from __future__ import annotations

from datetime import timedelta
from datetime import timezone as dt_tz

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from tests.apps.console.conftest import utc

pytestmark = [pytest.mark.django_db, pytest.mark.db_tier]


@pytest.fixture
def admin_client(django_user_model):
    admin = django_user_model.objects.create_user(username="root", email="root@example.com", password="pw-root-123", is_staff=True)
    client = APIClient()
    client.force_authenticate(admin)
    return client


def test_stats_price_each_model_cache_aware_and_leave_unpriced_models_null(user_client, user, priced_config, seed_run):
    now = timezone.now()
    # Both runs earlier today in UTC (the period's zone), whatever the hour: an hour ago is
    # yesterday between midnight and one.
    midnight = now.astimezone(dt_tz.utc).replace(hour=0, minute=0, second=0, microsecond=0)
    # One run that used all three models: pro with cache hits, lite without a cache price, free unpriced.
    seed_run(user, at=midnight + (now - midnight) * 2 / 3, by_model={
        "pro": {"input_tokens": 1_000_000, "output_tokens": 100_000, "cache_read_tokens": 400_000},
        "lite": {"input_tokens": 500_000, "output_tokens": 0, "cache_read_tokens": 200_000},
        "free": {"input_tokens": 10, "output_tokens": 10},
    })
    seed_run(user, at=midnight + (now - midnight) / 3, by_model={"pro": {"input_tokens": 0, "output_tokens": 10}}, status="error", error="boom")
    body = user_client.get("/api/console/stats?period=today").json()
    assert body["runs"] == 2 and body["threads"] == 2 and body["runs_by_status"]["error"] == 1
    assert body["tokens"] == {"input": 1_500_010, "output": 100_020, "cache_read": 600_000, "total": 1_600_030}
    # pro: 600k × 2 + 400k × 0.5 + 100,010 out × 8 = 1.2 + 0.2 + 0.80008; lite: 500k × 1 (cache at the input price) = 0.5
    assert body["cost"] == {"amount": pytest.approx(2.70008), "currency": "USD", "unpriced_models": ["free"]}
    assert body["error_rate"] == 0.5


def test_an_unpriced_run_costs_null_never_a_guess(user_client, user, priced_config, seed_run):
    seed_run(user, at=timezone.now(), by_model={"free": {"input_tokens": 100, "output_tokens": 100}})
    run = user_client.get("/api/console/runs").json()["runs"][0]
    assert run["cost"] == {"amount": None, "currency": None, "unpriced_models": ["free"]}
    assert run["tokens"]["total"] == 200


def test_a_run_recorded_without_per_model_usage_is_priced_at_its_model(user_client, user, priced_config, seed_run):
    seed_run(user, at=timezone.now(), model_name="lite", tokens=(1_000_000, 1_000_000, 0))
    assert user_client.get("/api/console/stats").json()["cost"]["amount"] == pytest.approx(4.0)


def test_runs_history_lists_title_status_duration_model_tokens_cost_with_filters(user_client, user, priced_config, seed_run):
    at = timezone.now() - timedelta(days=1)
    seed_run(user, at=at, title="Trip to Lisbon", by_model={"lite": {"input_tokens": 1000, "output_tokens": 0}}, duration_s=12)
    seed_run(user, at=at + timedelta(minutes=5), title="Broken", status="error", error="model failed", by_model={"pro": {"input_tokens": 5, "output_tokens": 5}})
    body = user_client.get("/api/console/runs?period=7d&limit=1").json()
    assert body["total"] == 2 and body["has_more"] is True and body["runs"][0]["thread_title"] == "Broken"
    older = user_client.get("/api/console/runs?period=7d&limit=1&offset=1").json()["runs"][0]
    assert (older["thread_title"], older["status"], older["model_name"], older["duration_ms"]) == ("Trip to Lisbon", "success", "lite", 12000)
    assert older["cost"]["amount"] == pytest.approx(0.001)
    failed = user_client.get("/api/console/runs?status=error").json()["runs"]
    assert [r["error"] for r in failed] == ["model failed"]
    assert user_client.get("/api/console/runs?model=lite").json()["total"] == 1


def test_usage_is_a_zero_filled_daily_series_in_the_callers_time_zone(user_client, user, priced_config, seed_run):
    # 23:30 UTC on the 8th is already the 9th in Tokyo (UTC+9).
    seed_run(user, at=utc(2026, 3, 8, 23, 30), by_model={"lite": {"input_tokens": 1_000_000, "output_tokens": 0}})
    seed_run(user, at=utc(2026, 3, 6, 10, 0), by_model={"pro": {"input_tokens": 0, "output_tokens": 1_000_000}})
    utc_body = user_client.get("/api/console/usage?since=2026-03-04&until=2026-03-10").json()
    assert [d["date"] for d in utc_body["days"]] == [f"2026-03-{d:02d}" for d in range(4, 11)]
    by_day = {d["date"]: d for d in utc_body["days"]}
    assert by_day["2026-03-08"]["runs"] == 1 and by_day["2026-03-09"]["runs"] == 0
    assert by_day["2026-03-05"] == {"date": "2026-03-05", "runs": 0, "tokens": {"input": 0, "output": 0, "cache_read": 0, "total": 0},
                                    "cost": {"amount": 0.0, "currency": "USD", "unpriced_models": []}}
    tokyo = {d["date"]: d for d in user_client.get("/api/console/usage?since=2026-03-04&until=2026-03-10&tz=Asia/Tokyo").json()["days"]}
    assert tokyo["2026-03-08"]["runs"] == 0 and tokyo["2026-03-09"]["runs"] == 1
    usage = user_client.get("/api/console/usage?since=2026-03-04&until=2026-03-10").json()
    assert [(m["model"], m["cost"]["amount"]) for m in usage["by_model"]] == [("lite", 1.0), ("pro", 8.0)]
    assert usage["top_threads"][0]["cost"]["amount"] == 8.0 and usage["total"]["cost"]["amount"] == 9.0
    assert "top_users" not in usage


def test_a_user_never_sees_another_users_usage(user_client, user, other_user, priced_config, seed_run):
    seed_run(other_user, at=timezone.now(), title="Bob's secret", by_model={"pro": {"input_tokens": 10, "output_tokens": 10}})
    seed_run(user, at=timezone.now(), title="Mine", by_model={"lite": {"input_tokens": 1, "output_tokens": 1}})
    assert [r["thread_title"] for r in user_client.get("/api/console/runs").json()["runs"]] == ["Mine"]
    assert user_client.get("/api/console/stats").json()["runs"] == 1
    assert [t["thread_title"] for t in user_client.get("/api/console/usage").json()["top_threads"]] == ["Mine"]
    for path in ("stats", "runs", "usage", "feedback", "runs/export"):
        for who in ("all", "bob", str(other_user.pk)):
            response = user_client.get(f"/api/console/{path}?user={who}")
            assert response.status_code == 403 and "only administrators" in response.json()["detail"], (path, who)
    assert user_client.get("/api/console/stats?user=alice").status_code == 200
    assert user_client.get("/api/console/overview").status_code == 403


def test_an_admin_sees_everyone_or_one_user(admin_client, user, other_user, priced_config, seed_run):
    seed_run(other_user, at=timezone.now(), by_model={"pro": {"input_tokens": 0, "output_tokens": 1_000_000}})
    seed_run(user, at=timezone.now(), by_model={"lite": {"input_tokens": 1_000_000, "output_tokens": 0}})
    assert admin_client.get("/api/console/stats").json()["runs"] == 0  # the admin's own numbers by default
    assert admin_client.get("/api/console/stats?user=all").json()["runs"] == 2
    assert admin_client.get("/api/console/stats?user=bob").json()["cost"]["amount"] == 8.0
    usage = admin_client.get("/api/console/usage?user=all").json()
    assert [(u["user"], u["cost"]["amount"]) for u in usage["top_users"]] == [("bob", 8.0), ("alice", 1.0)]
    assert admin_client.get("/api/console/runs?user=nobody").status_code == 404


@pytest.mark.parametrize("query, named", [
    ("period=3d", "period"), ("since=yesterday", "since"), ("since=2026-03-10&until=2026-03-01", "since"),
    ("tz=Mars/Olympus", "tz"), ("status=exploded", "status"), ("limit=0", "limit"), ("limit=ten", "limit"),
    ("offset=-1", "offset"), ("period=7d&since=2026-01-01", "period"), ("since=2020-01-01&until=2026-01-01", "since"),
])
def test_bad_periods_and_filters_are_422_naming_them(user_client, query, named):
    response = user_client.get(f"/api/console/runs?{query}")
    assert response.status_code == 422 and response.json()["detail"].startswith(named), response.json()


def test_exports_are_csv_of_the_same_rows(user_client, user, priced_config, seed_run):
    seed_run(user, at=timezone.now(), title="=HYPERLINK(evil)", by_model={"lite": {"input_tokens": 1_000_000, "output_tokens": 0}})
    response = user_client.get("/api/console/runs/export")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert "attachment" in response["Content-Disposition"]
    lines = response.content.decode().splitlines()
    assert lines[0].startswith("run_id,created_at,user,thread_id,thread_title,status,model")
    assert "'=HYPERLINK(evil)" in lines[1] and ",lite," in lines[1] and ",1.0,USD," in lines[1]
    usage = user_client.get("/api/console/usage/export?period=today").content.decode().splitlines()
    assert usage[0].startswith("date,model,runs") and usage[1].endswith(",1,1000000,0,0,1000000,1.0,USD")
    assert usage[-1].startswith(",lite,1,")


def test_admin_routes_refuse_non_admins_and_cancel_any_users_queued_run(user_client, admin_client, user, seed_run):
    from apps.runs.models import Run

    run = seed_run(user, at=timezone.now(), status="pending")
    refused = user_client.post(f"/api/console/runs/{run.pk}/cancel")
    assert refused.status_code == 403 and "detail" in refused.json()
    assert Run.objects.get(pk=run.pk).status == "pending"
    overview = admin_client.get("/api/console/overview").json()
    assert overview["queue"]["pending"] == 1 and [r["run_id"] for r in overview["active_runs"]] == [str(run.pk)]
    done = admin_client.post(f"/api/console/runs/{run.pk}/cancel")
    assert done.status_code == 200 and done.json()["status"] == "interrupted"
    assert admin_client.post(f"/api/console/runs/{run.pk}/cancel").status_code == 409
    assert admin_client.post("/api/console/runs/not-a-uuid/cancel").status_code == 404
