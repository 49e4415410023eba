"""Budgets over HTTP: admins set caps (bad values are 422), a run that reaches a cap stops
cleanly with budget_exhausted, the next run is refused with 429 naming the cap and its reset,
and the user's budget status warns from 80 %."""

import httpx
import pytest
from langgraph_sdk import get_sync_client

from harness.testing import Reply, call

pytestmark = pytest.mark.slow

USER = {"messages": [{"role": "user", "content": "count to three"}]}


@pytest.fixture(scope="module")
def budget_user(live):
    token = live.create_user_token("budget-user")
    user_id = live.shell("from apps.accounts.models import User; print(User.objects.get(username='budget-user').pk)")
    return token, int(user_id)


def test_admins_set_budgets_and_bad_values_are_refused(admin_api, api, budget_user):
    _, user_id = budget_user
    negative = admin_api.put("/budgets/default", json={"daily_tokens": -5})
    assert negative.status_code == 422 and "daily_tokens: must be zero or more" in negative.json()["detail"]
    assert admin_api.put("/budgets/default", json={"monthly_cost": "lots"}).status_code == 422
    assert admin_api.put("/budgets/default", json={"weekly_tokens": 5}).status_code == 422
    assert admin_api.put("/budgets/999999", json={"daily_tokens": 5}).status_code == 404
    assert api.put(f"/budgets/{user_id}", json={"daily_tokens": 5}).status_code == 403
    ok = admin_api.put(f"/budgets/{user_id}", json={"daily_tokens": 1000})
    assert ok.status_code == 200 and ok.json()["daily_tokens"] == 1000


def test_a_run_stops_at_the_cap_then_admission_refuses_with_429(live, admin_api, budget_user, script):
    token, user_id = budget_user
    admin_api.put(f"/budgets/{user_id}", json={"daily_tokens": 1000, "monthly_tokens": 100000})
    sdk = get_sync_client(url=f"{live.url}/api", headers={"Authorization": f"Bearer {token}"})
    # The first model call uses 1,200 tokens; the second is never made.
    script(Reply(tool_calls=[call("bash", command="echo one")], usage={"input_tokens": 1100, "output_tokens": 100}), "never sent")
    tid = sdk.threads.create()["thread_id"]
    values = sdk.runs.wait(tid, "lead_agent", input=USER)
    assert "daily token budget is used up" in values["messages"][-1]["content"]
    run = sdk.runs.list(tid)[0]
    assert run["stop_reason"] == "budget_exhausted" and run["status"] == "success"

    with httpx.Client(base_url=f"{live.url}/api", headers={"Authorization": f"Bearer {token}"}, timeout=30) as client:
        status = client.get("/budget").json()
        day = next(c for c in status["caps"] if c["period"] == "day")
        assert status["enabled"] and status["exhausted"] and day["used"] >= 1200 and day["limit"] == 1000
        refused = client.post(f"/threads/{tid}/runs", json={"assistant_id": "lead_agent", "input": USER})
        assert refused.status_code == 429
        detail = refused.json()["detail"]
        assert "daily token budget is used up" in detail and "resets at" in detail and "T00:00:00Z" in detail

    # An admin raising the cap lets the user go on at once (this process's cache is dropped).
    admin_api.put(f"/budgets/{user_id}", json={"daily_tokens": 100000})
    script("counted")
    assert sdk.runs.wait(tid, "lead_agent", input=USER)["messages"][-1]["content"] == "counted"


def test_the_status_warns_from_eighty_percent(live, admin_api, budget_user, script):
    token, user_id = budget_user
    # Standalone: the user has a daily cap and has spent tokens today, whatever ran before.
    admin_api.put(f"/budgets/{user_id}", json={"daily_tokens": 10_000_000})
    sdk = get_sync_client(url=f"{live.url}/api", headers={"Authorization": f"Bearer {token}"})
    script(Reply("spent", usage={"input_tokens": 900, "output_tokens": 100}))
    sdk.runs.wait(sdk.threads.create()["thread_id"], "lead_agent", input=USER)
    with httpx.Client(base_url=f"{live.url}/api", headers={"Authorization": f"Bearer {token}"}, timeout=30) as client:
        used = next(c for c in client.get("/budget").json()["caps"] if c["period"] == "day")["used"]
        assert used >= 1000
        admin_api.put(f"/budgets/{user_id}", json={"daily_tokens": int(used / 0.85)})
        status = client.get("/budget").json()
        assert status["warning"] and not status["exhausted"]
        admin_api.put(f"/budgets/{user_id}", json={"daily_tokens": used * 10})
        assert not client.get("/budget").json()["warning"]
