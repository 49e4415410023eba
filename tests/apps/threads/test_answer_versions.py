"""Answer versions through the API, in both checkpoint modes: after regenerate or edit, showing
an earlier version changes what a reload shows and what the model is sent next."""

import pytest

from apps.runs.models import RunEvent
from tests.apps.runs.test_runs_api import new_thread, wait_for_status
from tests.apps.threads.test_thread_actions import agent, ask, state_texts, visible  # noqa: F401  (agent: a fixture)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.db_tier]


def versions(client, tid):
    response = client.get(f"/api/threads/{tid}/versions")
    assert response.status_code == 200, response.content
    return response.json()["groups"]


def show(client, tid, run_id):
    return client.post(f"/api/threads/{tid}/versions", {"run_id": run_id}, format="json")


def regenerate(client, tid):
    run = client.post(f"/api/threads/{tid}/runs/regenerate", {}, format="json")
    assert run.status_code == 201, run.content
    return wait_for_status(run.json()["run_id"], {"success"})


def test_switching_back_shows_the_first_answer_after_a_reload_and_the_next_turn_continues_from_it(user_client, agent):
    model = agent("a1", "a1 again", "a2")
    tid = new_thread(user_client)
    first = ask(user_client, tid, "q1")
    assert versions(user_client, tid) == []
    second = regenerate(user_client, tid)
    [group] = versions(user_client, tid)
    assert group["run_ids"] == [str(first.pk), str(second.pk)] and group["kinds"] == ["original", "regenerate"]
    assert (group["index"], group["total"], group["shown"]) == (2, 2, str(second.pk))

    response = show(user_client, tid, str(first.pk))
    assert response.status_code == 200, response.content
    assert response.json()["groups"][0]["index"] == 1
    assert visible(user_client, tid) == [("human", "q1"), ("ai", "a1")]
    assert state_texts(user_client, tid) == [("human", "q1"), ("ai", "a1")]

    ask(user_client, tid, "q2")
    # The model saw the version shown, not the newer one.
    assert [m.content for m in model.requests[-1].messages if m.type != "system"] == ["q1", "a1", "q2"]
    assert visible(user_client, tid) == [("human", "q1"), ("ai", "a1"), ("human", "q2"), ("ai", "a2")]
    assert versions(user_client, tid)[0]["index"] == 1  # the arrows stay on the earlier turn

    # Version 2 had no continuation: showing it hides q2/a2; showing 1 again brings them back.
    assert show(user_client, tid, str(second.pk)).status_code == 200
    assert visible(user_client, tid) == [("human", "q1"), ("ai", "a1 again")]
    assert state_texts(user_client, tid) == [("human", "q1"), ("ai", "a1 again")]
    assert show(user_client, tid, str(first.pk)).status_code == 200
    expected = [("human", "q1"), ("ai", "a1"), ("human", "q2"), ("ai", "a2")]
    assert visible(user_client, tid) == expected and state_texts(user_client, tid) == expected


def test_regenerating_a_version_shown_again_adds_a_third(user_client, agent):
    agent("a1", "a1 bis", "a1 ter")
    tid = new_thread(user_client)
    first = ask(user_client, tid, "q1")
    regenerate(user_client, tid)
    show(user_client, tid, str(first.pk))
    third = regenerate(user_client, tid)
    [group] = versions(user_client, tid)
    assert group["total"] == 3 and group["shown"] == str(third.pk)
    assert visible(user_client, tid) == [("human", "q1"), ("ai", "a1 ter")]


def test_an_edit_is_a_version_of_its_turn(user_client, agent):
    agent("a1", "a2", "a2 edited")
    tid = new_thread(user_client)
    ask(user_client, tid, "q1")
    original = ask(user_client, tid, "q2")
    human = RunEvent.objects.filter(thread_id=tid, event_type="llm.human.input").order_by("-seq").first()
    run = user_client.post(f"/api/threads/{tid}/runs/edit-regenerate", {"content": "q2 edited", "message_id": human.content["id"]},
                           format="json").json()
    wait_for_status(run["run_id"], {"success"})
    [group] = versions(user_client, tid)
    assert group["kinds"] == ["original", "edit"]
    show(user_client, tid, str(original.pk))
    expected = [("human", "q1"), ("ai", "a1"), ("human", "q2"), ("ai", "a2")]
    assert visible(user_client, tid) == expected and state_texts(user_client, tid) == expected


def test_bad_switches_change_nothing(user_client, agent, django_user_model):
    agent("a1", "a1 again")
    tid = new_thread(user_client)
    first = ask(user_client, tid, "q1")
    assert show(user_client, tid, str(first.pk)).status_code == 404  # no other version yet
    regenerate(user_client, tid)
    before = visible(user_client, tid)
    assert show(user_client, tid, "not-a-run").status_code == 404
    assert show(user_client, tid, 7).status_code == 422
    assert user_client.post(f"/api/threads/{tid}/versions", {"run_id": str(first.pk), "x": 1}, format="json").status_code == 422
    assert visible(user_client, tid) == before
    # Another user's thread is not found.
    from rest_framework.test import APIClient
    other = APIClient()
    other.force_authenticate(django_user_model.objects.create_user("mallory", password="pw-123456789"))
    assert other.get(f"/api/threads/{tid}/versions").status_code == 404
    assert other.post(f"/api/threads/{tid}/versions", {"run_id": str(first.pk)}, format="json").status_code == 404
    assert visible(user_client, tid) == before
