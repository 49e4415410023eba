"""The pages and endpoints the foundation serves: health, schema, docs, landing, admin."""

import pytest
from django.apps import apps
from django.contrib import admin
from django.test import override_settings
from django.urls import reverse

pytestmark = pytest.mark.django_db


@pytest.mark.db_tier
def test_health_reports_database_and_checkpointer(client, settings):
    response = client.get("/api/health")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "healthy"
    assert body["database"]["status"] == "ok"
    assert body["checkpointer"] == {"status": "ok", "backend": "postgres" if "postgres" in settings.CHECKPOINTER_URL else "sqlite"}


def test_health_is_503_with_a_detail_when_the_checkpointer_is_down(client):
    with override_settings(CHECKPOINTER_URL="postgresql://nobody@127.0.0.1:1/none"):
        response = client.get("/api/health")
    assert response.status_code == 503
    body = response.json()
    assert body["detail"].startswith("checkpointer is down (")
    assert body["checkpointer"]["status"] == "down"
    assert body["database"]["status"] == "ok"


def test_health_names_an_unsupported_checkpointer_url(client):
    with override_settings(CHECKPOINTER_URL="mysql://x/y"):
        body = client.get("/api/health").json()
    assert "unsupported checkpointer URL scheme 'mysql'" in body["detail"]


def test_openapi_schema_and_docs(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json")
    assert schema.status_code == 200
    assert "/api/health" in schema.json()["paths"]
    docs = client.get("/api/docs/")
    assert docs.status_code == 200
    # Assets come from this server, not a CDN: the server may have no internet.
    assert b"cdn.jsdelivr" not in docs.content and b"/static/drf_spectacular_sidecar/" in docs.content


def test_landing_page_has_the_product_name_and_a_login_link(client):
    response = client.get("/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "<h1>DeerFlow</h1>" in html
    assert 'href="/admin/login/?next=/"' in html


def test_static_files_are_served(live_server):
    import urllib.request

    with urllib.request.urlopen(f"{live_server.url}/static/css/app.css") as response:
        assert response.status == 200
        assert b".landing" in response.read()


def test_admin_requires_login(client):
    response = client.get("/admin/")
    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")


def test_every_admin_page_renders_for_a_superuser(admin_client, user):
    from apps.accounts.services import token_create
    from apps.runs.models import Run, RunEvent
    from apps.threads.models import Feedback
    from apps.threads.services import thread_create

    thread = thread_create(owner=user, thread_id="t-admin")
    run = Run.objects.create(thread=thread, owner=user, status=Run.Status.SUCCESS)
    RunEvent.objects.create(thread=thread, run=run, seq=1, event_type="values", category="state")
    Feedback.objects.create(thread=thread, run=run, owner=user, rating=1)
    issued = token_create(owner=user, name="ci", scopes=["runs:read"])

    for model in apps.get_models():
        if not admin.site.is_registered(model):
            continue
        opts = model._meta
        changelist = admin_client.get(reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist"))
        assert changelist.status_code == 200, opts.label
        obj = model.objects.first()
        if obj is not None:
            change = admin_client.get(reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[obj.pk]))
            assert change.status_code == 200, opts.label
    token_page = admin_client.get(reverse("admin:accounts_personalaccesstoken_change", args=[issued.record.pk]))
    assert issued.record.digest not in token_page.content.decode()
    assert issued.token not in token_page.content.decode()


# -- the probes: /api/health/live and /api/health/ready ------------------------------------


def test_live_answers_without_asking_anything_else(client):
    with override_settings(CHECKPOINTER_URL="postgresql://nobody@127.0.0.1:1/none", REDIS_URL="redis://127.0.0.1:1/0"):
        response = client.get("/api/health/live")
    assert response.status_code == 200 and response.json() == {"status": "alive"}


def test_ready_when_the_database_is_there_and_migrated(client):
    response = client.get("/api/health/ready")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "ready"
    assert body["database"]["status"] == "ok" and body["migrations"]["status"] == "ok"
    assert "redis" not in body  # the embedded stack has none to ask


def test_not_ready_while_a_configured_redis_is_down(client):
    with override_settings(REDIS_URL="redis://127.0.0.1:1/0"):
        response = client.get("/api/health/ready")
    assert response.status_code == 503
    assert response.json()["detail"].startswith("redis: ConnectionError")


@pytest.mark.redis
def test_ready_with_redis_up(client, redis_url):
    with override_settings(REDIS_URL=redis_url):
        body = client.get("/api/health/ready").json()
    assert body["status"] == "ready" and body["redis"] == {"status": "ok", "backend": "redis"}


def test_not_ready_with_a_migration_unapplied(client, monkeypatch):
    from django.db.migrations.recorder import MigrationRecorder

    from apps.console import selectors

    monkeypatch.setattr(selectors, "_migrated", False)
    last = MigrationRecorder.Migration.objects.filter(app="runs").order_by("-id").first()
    last.delete()  # as a database the new release's migrate has not reached yet
    response = client.get("/api/health/ready")
    assert response.status_code == 503
    assert response.json()["detail"] == f"migrations: 1 unapplied migration(s): runs.{last.name}"


def test_the_probes_are_public_and_in_the_schema(client):
    paths = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()["paths"]
    assert {"/api/health/live", "/api/health/ready"} <= set(paths)
    assert client.get("/api/langgraph/health/ready", HTTP_AUTHORIZATION="Bearer nonsense").status_code == 200
