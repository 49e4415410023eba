"""The Observability page in a browser: a staff user pastes the X-Request-ID a client got back
and finds the run it started; the phone layout fits."""

import json
import urllib.request

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


def _run_with_request_id(live, request_id: str) -> str:
    token = live.create_user_token("obs-ui-user")

    def post(path, body, headers=None):
        request = urllib.request.Request(f"{live.url}{path}", data=json.dumps(body).encode(), method="POST", headers={
            "Authorization": f"Bearer {token}", "Content-Type": "application/json", **(headers or {})})
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.headers, response.read()

    _, body = post("/api/threads", {})
    tid = json.loads(body)["thread_id"]
    headers, _ = post(f"/api/threads/{tid}/runs/wait", {"assistant_id": "lead_agent", "input": {"messages": [{"role": "user", "content": "hi"}]}},
                      {"X-Request-ID": request_id})
    assert headers.get("X-Request-ID") == request_id
    return tid


def test_a_run_is_found_by_its_request_id(page, phone, live, script, doc_shot):
    script("Traceable answer.")
    _run_with_request_id(live, "ui-req-2026")

    page.goto("/observability/")
    expect(page.get_by_role("heading", name="Observability")).to_be_visible()
    page.get_by_label("Find runs by request id").fill("ui-req-2026")
    page.get_by_role("button", name="Find").click()
    expect(page.get_by_role("heading", name="Runs of request ui-req-2026")).to_be_visible()
    rows = page.locator("#runs-table tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("ui-req-2026")
    expect(rows.first).to_contain_text("success")
    expect(rows.first).to_contain_text("obs-ui-user")
    expect(page.locator("#tracing-state")).to_contain_text("LangSmith")
    expect(page.locator("#metrics-state")).to_contain_text("off")
    doc_shot(page, "observability")

    page.get_by_label("Find runs by request id").fill("no such request")
    page.get_by_role("button", name="Find").click()
    expect(page.get_by_role("alert")).to_contain_text("is not a request id")

    phone.goto("/observability/?request_id=ui-req-2026")
    expect(phone.locator("#runs-table tbody tr").first).to_contain_text("success")
    assert phone.evaluate("document.documentElement.scrollWidth") <= 375
    doc_shot(phone, "observability-phone")
    assert page.js_errors == [] and phone.js_errors == []
