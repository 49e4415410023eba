"""Runs traced to loopback stand-ins of LangSmith's and Langfuse's ingestion APIs, both at
once: the run's metadata arrives, no secret does, and a backend that hangs never holds a run up."""

import threading

import pytest

from apps.runs.models import Run
from harness.observability import tracing
from tests.apps.observability.conftest import LANGFUSE_SECRET, LANGSMITH_KEY, OTLP_PATH
from tests.apps.observability.fake_backends import FakeBackend
from tests.apps.runs.test_runs_api import body_of, new_thread

pytestmark = [pytest.mark.django_db(transaction=True)]

REQUEST_SECRET = "req-secret-7c1f9e"


def _run(user_client, tid, text="hi", request_id="trace-req-1"):
    response = user_client.post(f"/api/threads/{tid}/runs/wait", {
        "input": {"messages": [{"role": "user", "content": text}]},
        "context": {"secrets": {"API_TOKEN": REQUEST_SECRET}},
    }, format="json", HTTP_X_REQUEST_ID=request_id)
    assert response.status_code == 200
    body_of(response)
    return Run.objects.filter(thread_id=tid).order_by("-created_at").first()


def test_a_run_is_traced_to_both_backends_with_its_metadata_and_no_secrets(user, user_client, scripted_agent, traced_config):
    langsmith, langfuse = FakeBackend(), FakeBackend()
    try:
        traced_config(langsmith.url, langfuse.url)
        scripted_agent("Traced answer.")
        tid = new_thread(user_client)
        run = _run(user_client, tid)
        assert run.status == "success"
        tracing.flush()
        run_id = str(run.pk).encode()

        [*ls_posts] = langsmith.wait_for(lambda r: r.method == "POST" and r.path.startswith("/runs") and run_id in r.body)
        ls_body = b"".join(r.body for r in ls_posts)
        assert ls_posts[0].headers.get("x-api-key") == LANGSMITH_KEY  # the credential goes in its header only
        for expected in (run_id, tid.encode(), b"trace-req-1", str(user.pk).encode(), b"lead_agent", b"test-model", b"Traced answer."):
            assert expected in ls_body, expected

        [*lf_posts] = langfuse.wait_for(lambda r: r.path == OTLP_PATH and run_id in r.body)
        lf_body = b"".join(r.body for r in lf_posts)
        for expected in (run_id, tid.encode(), b"trace-req-1", str(user.pk).encode(), b"test-model", b"Traced answer."):
            assert expected in lf_body, expected
        assert lf_posts[0].headers.get("authorization", "").startswith("Basic ")

        for backend in (langsmith, langfuse):
            everything = backend.all_bodies()
            for secret in (REQUEST_SECRET.encode(), LANGSMITH_KEY.encode(), LANGFUSE_SECRET.encode(), b"test-key"):
                assert secret not in everything, secret
    finally:
        tracing.shutdown()  # while the stand-ins still answer
        langsmith.close()
        langfuse.close()


def test_a_backend_that_hangs_holds_no_run_up(user_client, scripted_agent, traced_config):
    backend = FakeBackend(hang=True)
    try:
        traced_config(backend.url, backend.url)
        scripted_agent("first", "second")
        tid = new_thread(user_client)
        assert _run(user_client, tid).status == "success"
        # Push the first run's spans out: both clients now wait on a backend that does not answer.
        flusher = threading.Thread(target=tracing.flush, daemon=True)
        flusher.start()
        # (LangSmith's client first asks /info what the server supports, from its own thread.)
        backend.wait_for(lambda r: r.path.startswith(("/runs", "/info")))
        backend.wait_for(lambda r: r.path == OTLP_PATH)

        second = _run(user_client, tid, text="again", request_id="trace-req-2")
        assert second.status == "success"  # finished while every upload is still unanswered
        assert flusher.is_alive() and not backend.release.is_set()
    finally:
        backend.release.set()
        tracing.shutdown()
        backend.close()


def test_a_backend_that_is_down_fails_no_run(user_client, scripted_agent, traced_config):
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    traced_config(dead, dead)
    scripted_agent("still fine")
    tid = new_thread(user_client)
    try:
        assert _run(user_client, tid).status == "success"
    finally:
        tracing.shutdown()  # gives up on the dead port now, not at the end of the session


def test_no_tracing_section_means_no_tracers(monkeypatch):
    monkeypatch.delenv("LANGFUSE_PUBLIC_KEY", raising=False)
    assert tracing.run_callbacks(tracing.TracingConfig()) == []
