"""A turn whose answer is an error fallback ends the run as an error (DeerFlow's terminal-response
rule): the model answered nothing after the retry, or the provider failed for good. The real
lead agent (its terminal-response and LLM-error middlewares) around the scripted model."""

import pytest

from apps.runs.models import Run, RunEvent
from harness.testing import Reply
from tests.apps.runs.test_runs_api import new_thread, stream
from tests.support import agents

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture
def lead(settings):
    from apps.runs.graphs import clear_graph_cache

    settings.DEERFLOW_AGENT_FACTORY = "tests.support.agents:make_scripted_lead_agent"

    def set_script(*items):
        clear_graph_cache()
        return agents.set_script(*items)

    yield set_script
    clear_graph_cache()


def ask(client, tid, text):
    return stream(client, f"/api/threads/{tid}/runs/stream", {"input": {"messages": [{"role": "user", "content": text}]}})[1]


def test_an_empty_answer_after_the_retry_ends_the_run_as_an_error(user_client, lead):
    model = lead("", "", "Now I have an answer.")
    tid = new_thread(user_client)
    events = ask(user_client, tid, "hello?")
    assert len(model.requests) == 2  # the answer and its one retry
    names = [e["event"] for e in events]
    assert names[-2:] == ["error", "end"]
    error = events[-2]["data"]
    assert error["error"] == "empty_response" and "empty answer" in error["message"]

    run = user_client.get(f"/api/threads/{tid}/runs").json()[0]
    assert run["status"] == "error" and run["stop_reason"] == "error_fallback"
    assert "empty answer" in run["error"]
    assert user_client.get(f"/api/threads/{tid}").json()["status"] == "error"
    journal = list(RunEvent.objects.filter(run_id=run["run_id"]).order_by("seq").values_list("event_type", "category"))
    assert ("run.error", "error") in journal
    # the notice the user reads is still in the history, marked as a failure
    page = user_client.get(f"/api/threads/{tid}/messages/page").json()["data"]
    assert page[-1]["content"]["additional_kwargs"]["deerflow_error_fallback"] is True

    # the thread goes on, and an older failure does not fail the next run
    events = ask(user_client, tid, "try again")
    assert "error" not in [e["event"] for e in events]
    assert Run.objects.filter(thread_id=tid).order_by("-created_at").first().status == "success"


def test_a_provider_failure_after_the_retries_ends_the_run_as_an_error(user_client, lead):
    lead(Reply(status=400, error_message="provider refused the request"))
    tid = new_thread(user_client)
    events = ask(user_client, tid, "hello?")
    error = [e["data"] for e in events if e["event"] == "error"]
    assert error and "provider refused the request" in error[0]["message"]
    run = Run.objects.get(thread_id=tid)
    assert run.status == "error" and "provider refused the request" in run.error
