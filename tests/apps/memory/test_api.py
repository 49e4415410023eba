"""/api/memory (API_CONTRACT §4): CRUD with ownership, import refused whole, size limits, 409."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.django_db]


@pytest.fixture
def other_client(other_user):
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_authenticate(other_user)
    return client


def test_facts_crud_and_document_shape(user_client):
    empty = user_client.get("/api/memory").json()
    assert empty["facts"] == [] and empty["revision"] == 0 and set(empty["user"]) == {"workContext", "personalContext", "topOfMind"}
    doc = user_client.post("/api/memory/facts", {"content": "Prefers metric units"}, format="json").json()
    fact = doc["facts"][0]
    assert (fact["content"], fact["category"], fact["confidence"], fact["source"]["kind"]) == ("Prefers metric units", "context", 0.5, "user")
    doc = user_client.patch(f"/api/memory/facts/{fact['id']}", {"content": "Prefers SI units", "confidence": 0.9}, format="json").json()
    assert [(f["content"], f["confidence"]) for f in doc["facts"]] == [("Prefers SI units", 0.9)]
    assert user_client.delete(f"/api/memory/facts/{fact['id']}").json()["facts"] == []
    assert user_client.delete(f"/api/memory/facts/{fact['id']}").status_code == 404


def test_another_users_memory_is_out_of_reach(user_client, other_client):
    fact = user_client.post("/api/memory/facts", {"content": "Secret project Falcon"}, format="json").json()["facts"][0]
    assert other_client.get("/api/memory").json()["facts"] == []
    assert other_client.patch(f"/api/memory/facts/{fact['id']}", {"content": "x"}, format="json").status_code == 404
    assert other_client.delete(f"/api/memory/facts/{fact['id']}").status_code == 404
    other_client.delete("/api/memory")
    assert [f["content"] for f in user_client.get("/api/memory").json()["facts"]] == ["Secret project Falcon"]


def test_bad_facts_are_refused_with_422(user_client):
    assert user_client.post("/api/memory/facts", {"content": "x" * 1001}, format="json").status_code == 422
    assert user_client.post("/api/memory/facts", {"content": "ok", "category": "nonsense"}, format="json").status_code == 422
    assert user_client.post("/api/memory/facts", {"content": "ok", "confidence": 3}, format="json").status_code == 422
    assert user_client.get("/api/memory").json()["facts"] == []


def test_export_import_round_trip_and_malformed_import_changes_nothing(user_client):
    user_client.post("/api/memory/facts", {"content": "Lives in Lisbon", "category": "context"}, format="json")
    exported = user_client.get("/api/memory/export")
    assert "attachment" in exported["Content-Disposition"]
    doc = exported.json()
    user_client.delete("/api/memory")
    assert user_client.get("/api/memory").json()["facts"] == []

    bad = {**doc, "facts": [*doc["facts"], {"content": 42}]}
    refused = user_client.post("/api/memory/import", bad, format="json")
    assert refused.status_code == 422 and "facts[1]" in refused.json()["detail"]
    assert user_client.get("/api/memory").json()["facts"] == []

    imported = user_client.post("/api/memory/import", doc, format="json").json()
    assert [f["content"] for f in imported["facts"]] == ["Lives in Lisbon"]


def test_stale_revision_is_a_conflict(user_client):
    doc = user_client.post("/api/memory/facts", {"content": "One"}, format="json").json()
    fid, seen = doc["facts"][0]["id"], doc["revision"]
    user_client.post("/api/memory/facts", {"content": "Two"}, format="json")
    assert user_client.patch(f"/api/memory/facts/{fid}", {"content": "One!", "revision": seen}, format="json").status_code == 409


def test_pause_and_status(user_client):
    assert user_client.patch("/api/memory/config", {"paused": True}, format="json").json()["paused"] is True
    status = user_client.get("/api/memory/status").json()
    assert status["config"]["paused"] is True and status["data"]["paused"] is True
    assert user_client.patch("/api/memory/config", {"paused": "yes"}, format="json").status_code == 422
