"""Chat tags over the API: set a chat's tags by name (made on first use, any case the same tag),
list them with counts, rename and delete them, filter the thread search by them, and never see
or reach another user's tags. A token needs threads:write to change them (the scope table
holds the routes; tests/apps/accounts/test_scope_table.py)."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from apps.accounts.services import token_create
from apps.threads.services import thread_create

pytestmark = [pytest.mark.django_db, pytest.mark.db_tier]


@pytest.fixture
def other_client(other_user):
    client = APIClient()
    client.force_authenticate(other_user)
    return client


def put_tags(client, thread_id, names):
    return client.put(f"/api/threads/{thread_id}/tags", {"tags": names}, format="json")


def search(client, **body):
    response = client.post("/api/threads/search", {"limit": 50, **body}, format="json")
    assert response.status_code == 200, response.content
    return {t["thread_id"]: t["tags"] for t in response.json()}


def test_a_chats_tags_are_set_by_name_listed_with_counts_and_carried_by_the_thread(user, user_client):
    trip = thread_create(owner=user, thread_id="trip")
    work = thread_create(owner=user, thread_id="work")
    answer = put_tags(user_client, "trip", ["  Travel ", "ideas", "travel"])  # trimmed; "travel" is "Travel"
    assert answer.status_code == 200, answer.content
    assert answer.json() == {"thread_id": "trip", "tags": ["ideas", "Travel"]}
    assert put_tags(user_client, "work", ["IDEAS"]).json()["tags"] == ["ideas"]  # the existing tag, as first written
    listed = user_client.get("/api/tags").json()["tags"]
    assert [(t["name"], t["thread_count"]) for t in listed] == [("ideas", 2), ("Travel", 1)]
    assert user_client.get("/api/threads/trip").json()["tags"] == ["ideas", "Travel"]
    assert user_client.get("/api/threads/trip/tags").json()["tags"] == ["ideas", "Travel"]
    assert search(user_client) == {"trip": ["ideas", "Travel"], "work": ["ideas"]}
    # Tagging is not activity: the chats keep their place in the sidebar's days.
    assert work.updated_at == type(work).objects.get(pk="work").updated_at
    assert trip.updated_at == type(trip).objects.get(pk="trip").updated_at
    # An empty list takes every tag off; the tags themselves stay for other chats.
    assert put_tags(user_client, "trip", []).json()["tags"] == []
    assert [(t["name"], t["thread_count"]) for t in user_client.get("/api/tags").json()["tags"]] == [("ideas", 1), ("Travel", 0)]


def test_the_search_filters_by_every_tag_named(user, user_client):
    for tid, names in (("a", ["work", "urgent"]), ("b", ["work"]), ("c", [])):
        thread_create(owner=user, thread_id=tid)
        put_tags(user_client, tid, names)
    assert set(search(user_client, tags=["work"])) == {"a", "b"}
    assert set(search(user_client, tags=["WORK", "urgent"])) == {"a"}
    assert search(user_client, tags=["nothing-called-this"]) == {}
    assert set(search(user_client, tags=[])) == {"a", "b", "c"}
    bad = user_client.post("/api/threads/search", {"tags": "work"}, format="json")
    assert bad.status_code == 422 and "tags" in bad.json()["detail"]


def test_rename_and_delete_a_tag(user, user_client):
    thread_create(owner=user, thread_id="t1")
    put_tags(user_client, "t1", ["draft", "final"])
    tags = {t["name"]: t["id"] for t in user_client.get("/api/tags").json()["tags"]}
    renamed = user_client.patch(f"/api/tags/{tags['draft']}", {"name": "Review"}, format="json")
    assert renamed.status_code == 200 and renamed.json()["name"] == "Review"
    assert search(user_client)["t1"] == ["final", "Review"]
    clash = user_client.patch(f"/api/tags/{tags['draft']}", {"name": "FINAL"}, format="json")
    assert clash.status_code == 409 and "final" in clash.json()["detail"]
    assert user_client.delete(f"/api/tags/{tags['final']}").status_code == 204
    assert search(user_client)["t1"] == ["Review"]
    assert user_client.get("/api/threads/t1").status_code == 200  # the chat stays


@pytest.mark.parametrize("body,fragment", [
    ({"tags": [""]}, "empty"), ({"tags": ["x" * 41]}, "at most 40"), ({"tags": "solo"}, "tags"), ({}, "tags"),
    ({"tags": [f"t{i}" for i in range(21)]}, "at most 20"),
])
def test_bad_tag_lists_are_refused_whole(user, user_client, body, fragment):
    thread_create(owner=user, thread_id="t1")
    put_tags(user_client, "t1", ["kept"])
    answer = user_client.put("/api/threads/t1/tags", body, format="json")
    assert answer.status_code == 422 and fragment in answer.json()["detail"], answer.content
    assert search(user_client)["t1"] == ["kept"]  # nothing half-written
    assert [t["name"] for t in user_client.get("/api/tags").json()["tags"]] == ["kept"]


def test_tags_never_cross_users(user, other_user, user_client, other_client):
    thread_create(owner=user, thread_id="mine")
    thread_create(owner=other_user, thread_id="theirs")
    put_tags(user_client, "mine", ["secret-project"])
    alice_tag = user_client.get("/api/tags").json()["tags"][0]
    # Bob neither lists, renames, deletes nor uses Alice's tag, and cannot tag her chat.
    assert other_client.get("/api/tags").json()["tags"] == []
    assert other_client.patch(f"/api/tags/{alice_tag['id']}", {"name": "x"}, format="json").status_code == 404
    assert other_client.delete(f"/api/tags/{alice_tag['id']}").status_code == 404
    assert put_tags(other_client, "mine", ["mine-now"]).status_code == 404
    assert other_client.get("/api/threads/mine/tags").status_code == 404
    # Bob's tag of the same name is his own: his filter finds his chat, never hers.
    assert put_tags(other_client, "theirs", ["secret-project"]).status_code == 200
    assert set(search(other_client, tags=["secret-project"])) == {"theirs"}
    assert set(search(user_client, tags=["secret-project"])) == {"mine"}
    assert [t["thread_count"] for t in user_client.get("/api/tags").json()["tags"]] == [1]
    assert user_client.get("/api/tags").json()["tags"][0]["id"] != other_client.get("/api/tags").json()["tags"][0]["id"]


def test_a_token_needs_threads_write_to_tag_and_threads_read_to_list(user):
    thread_create(owner=user, thread_id="t1")
    reader = APIClient()
    reader.credentials(HTTP_AUTHORIZATION=f"Bearer {token_create(owner=user, name='r', scopes=['threads:read']).token}")
    writer = APIClient()
    writer.credentials(HTTP_AUTHORIZATION=f"Bearer {token_create(owner=user, name='w', scopes=['threads:write']).token}")
    assert put_tags(reader, "t1", ["x"]).status_code == 403
    assert put_tags(writer, "t1", ["x"]).status_code == 200
    assert reader.get("/api/tags").json()["tags"][0]["name"] == "x"
    assert writer.get("/api/tags").status_code == 403


def test_the_tag_routes_are_in_the_api_schema_with_their_shapes(user_client):
    schema = user_client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    put = schema["paths"]["/api/threads/{thread_id}/tags"]["put"]
    ref = put["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
    assert schema["components"]["schemas"][ref]["properties"]["tags"]["type"] == "array"
    listed = schema["paths"]["/api/tags"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
    assert "tags" in schema["components"]["schemas"][listed]["properties"]
