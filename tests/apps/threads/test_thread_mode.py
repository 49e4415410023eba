"""The chat's per-thread mode lives in metadata.mode; only the modes the page offers are kept."""

import pytest

pytestmark = [pytest.mark.django_db]


def test_a_mode_is_kept_changed_and_cleared(user_client):
    tid = user_client.post("/api/threads", {"metadata": {"mode": "plan"}}, format="json").json()["thread_id"]
    assert user_client.get(f"/api/threads/{tid}").json()["metadata"]["mode"] == "plan"
    user_client.patch(f"/api/threads/{tid}", {"metadata": {"mode": "pro"}}, format="json")
    assert user_client.get(f"/api/threads/{tid}").json()["metadata"]["mode"] == "pro"
    user_client.patch(f"/api/threads/{tid}", {"metadata": {"mode": None}}, format="json")
    assert "mode" not in user_client.get(f"/api/threads/{tid}").json()["metadata"]


@pytest.mark.parametrize("bad", ["turbo", 3, ["plan"]])
def test_an_unknown_mode_is_refused_and_nothing_changes(user_client, bad):
    tid = user_client.post("/api/threads", {"metadata": {"mode": "thinking", "note": "x"}}, format="json").json()["thread_id"]
    response = user_client.patch(f"/api/threads/{tid}", {"metadata": {"mode": bad, "note": "y"}}, format="json")
    assert response.status_code == 422
    assert "metadata.mode" in response.json()["detail"]
    assert user_client.get(f"/api/threads/{tid}").json()["metadata"] == {"mode": "thinking", "note": "x"}
    created = user_client.post("/api/threads", {"metadata": {"mode": bad}}, format="json")
    assert created.status_code == 422 and "metadata.mode" in created.json()["detail"]
