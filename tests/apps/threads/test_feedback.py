"""Feedback on answers: PUT/GET/DELETE ``/api/threads/{tid}/runs/{rid}/feedback``, one rating per
user per message, shown on the message page and listed (and exported) in the console."""

from __future__ import annotations

import pytest

from apps.runs.models import Run, RunEvent
from apps.threads.models import Feedback, Thread

pytestmark = [pytest.mark.django_db, pytest.mark.db_tier]


@pytest.fixture
def answered(user):
    """A finished run with a question and two answers (a tool step and the final reply)."""
    thread = Thread.objects.create(id="t-fb", owner=user, title="Soup")
    run = Run.objects.create(thread=thread, owner=user, status="success", model_name="test-model")
    for seq, content in enumerate([{"type": "human", "id": "h1", "content": "Soup?"},
                                   {"type": "ai", "id": "a1", "content": "Let me look."},
                                   {"type": "ai", "id": "a2", "content": "Leek and potato."}], start=1):
        RunEvent.objects.create(thread=thread, run=run, seq=seq, event_type="llm.ai.response" if content["type"] == "ai" else "llm.human.input",
                                category="message", content=content)
    return thread, run


def url(thread, run) -> str:
    return f"/api/threads/{thread.pk}/runs/{run.pk}/feedback"


def test_put_rates_the_runs_last_answer_and_a_second_put_updates_it(user_client, answered):
    thread, run = answered
    first = user_client.put(url(thread, run), {"rating": 1}, format="json")
    assert first.status_code == 200
    body = first.json()
    assert (body["rating"], body["comment"], body["message_id"], body["run_id"], body["thread_id"]) == (1, "", "a2", str(run.pk), "t-fb")
    again = user_client.put(url(thread, run), {"rating": -1, "comment": "  too short  "}, format="json").json()
    assert again["feedback_id"] == body["feedback_id"] and (again["rating"], again["comment"]) == (-1, "too short")
    assert Feedback.objects.count() == 1
    page = user_client.get(f"/api/threads/{thread.pk}/messages/page").json()["data"]
    assert [r["feedback"] for r in page] == [None, None, {"feedback_id": body["feedback_id"], "rating": -1, "comment": "too short"}]


def test_each_answer_has_its_own_rating(user_client, answered):
    thread, run = answered
    user_client.put(url(thread, run), {"rating": 1, "message_id": "a1"}, format="json")
    user_client.put(url(thread, run), {"rating": -1, "message_id": "a2"}, format="json")
    assert sorted(Feedback.objects.values_list("message_id", "rating")) == [("a1", 1), ("a2", -1)]
    listed = user_client.get(url(thread, run)).json()["feedback"]
    assert [f["message_id"] for f in listed] == ["a1", "a2"]
    assert user_client.delete(url(thread, run) + "?message_id=a1").json() == {"success": True, "deleted": 1}
    assert list(Feedback.objects.values_list("message_id", flat=True)) == ["a2"]
    assert user_client.delete(url(thread, run)).json()["deleted"] == 1
    assert user_client.delete(url(thread, run)).json() == {"success": False, "deleted": 0}


@pytest.mark.parametrize("body, named", [
    ({"rating": 2}, "rating"), ({"rating": 0}, "rating"), ({"rating": True}, "rating"), ({"rating": "1"}, "rating"), ({}, "rating"),
    ({"rating": 1, "comment": 5}, "comment"), ({"rating": 1, "message_id": "h1"}, "message_id"),
    ({"rating": 1, "message_id": "nope"}, "message_id"), ({"rating": 1, "stars": 5}, "unknown field"),
])
def test_bad_ratings_are_422_naming_the_field_and_write_nothing(user_client, answered, body, named):
    thread, run = answered
    response = user_client.put(url(thread, run), body, format="json")
    assert response.status_code == 422 and response.json()["detail"].startswith(named), response.json()
    assert not Feedback.objects.exists()


def test_another_users_run_is_not_found_and_their_rating_stays_theirs(user_client, other_user, answered):
    thread, run = answered
    bob = user_client.__class__()
    bob.force_authenticate(other_user)
    for method in ("get", "put", "delete"):
        response = getattr(bob, method)(url(thread, run), {"rating": 1}, format="json")
        assert response.status_code == 404, method
    user_client.put(url(thread, run), {"rating": 1}, format="json")
    assert bob.get("/api/console/feedback").json()["total"] == 0
    assert user_client.get(f"/api/threads/{thread.pk}/runs/00000000-0000-0000-0000-000000000000/feedback").status_code == 404


def test_the_console_lists_and_exports_feedback_with_filters(user_client, django_user_model, answered):
    thread, run = answered
    user_client.put(url(thread, run), {"rating": 1, "message_id": "a1"}, format="json")
    user_client.put(url(thread, run), {"rating": -1, "comment": "wrong soup"}, format="json")
    mine = user_client.get("/api/console/feedback").json()
    assert (mine["total"], mine["up"], mine["down"]) == (2, 1, 1)
    assert [f["comment"] for f in user_client.get("/api/console/feedback?rating=down").json()["feedback"]] == ["wrong soup"]
    assert user_client.get("/api/console/feedback?has_comment=true").json()["total"] == 1
    assert user_client.get("/api/console/feedback?rating=5").status_code == 422
    csv_lines = user_client.get("/api/console/feedback/export?rating=-1").content.decode().splitlines()
    assert csv_lines[0].startswith("created_at,user,rating,comment") and len(csv_lines) == 2 and ",alice,-1,wrong soup,t-fb,Soup," in csv_lines[1]
