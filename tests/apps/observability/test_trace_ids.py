"""Trace ids: a request's ``traceparent`` is continued by the runs it starts (their Langfuse
spans carry its trace id, and the run's root span has the caller's span as parent), every
response says its trace in ``X-Trace-Id``, and the ids reach both backends' metadata."""

import re

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from apps.runs.models import Run
from harness.observability import tracing
from harness.observability.context import trace_from_headers
from tests.apps.observability.conftest import OTLP_PATH
from tests.apps.observability.fake_backends import FakeBackend
from tests.apps.runs.test_runs_api import body_of, new_thread

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_SPAN}-01"


@pytest.mark.parametrize(("x_trace_id", "traceparent", "trace_id", "continued"), [
    (None, TRACEPARENT, TRACE_ID, TRACEPARENT),
    ("mine-1", TRACEPARENT, TRACE_ID, TRACEPARENT),  # W3C context wins over DeerFlow's header
    (None, TRACEPARENT.upper(), TRACE_ID, TRACEPARENT),
    ("mine-1", None, "mine-1", None),
    ("mine-1", f"00-{'0' * 32}-{PARENT_SPAN}-01", "mine-1", None),  # all-zero trace id: invalid
    (None, f"00-{TRACE_ID}-{'0' * 16}-01", None, None),  # all-zero parent: invalid
    (None, f"ff-{TRACE_ID}-{PARENT_SPAN}-01", None, None),  # version ff: invalid
    ("has space", "garbage", None, None),
])
def test_trace_from_headers(x_trace_id, traceparent, trace_id, continued):
    got, parent = trace_from_headers(x_trace_id, traceparent)
    assert parent == continued
    if trace_id is None:
        assert re.fullmatch(r"[0-9a-f]{32}", got)
    else:
        assert got == trace_id


@pytest.mark.django_db
def test_every_response_says_its_trace(user_client, client):
    assert client.get("/api/health", HTTP_TRACEPARENT=TRACEPARENT)["X-Trace-Id"] == TRACE_ID
    assert user_client.get("/api/threads/nope", HTTP_X_TRACE_ID="upstream-7")["X-Trace-Id"] == "upstream-7"
    made_up = client.get("/api/health")["X-Trace-Id"]
    assert re.fullmatch(r"[0-9a-f]{32}", made_up) and client.get("/api/health")["X-Trace-Id"] != made_up


def _spans(posts) -> list:
    spans = []
    for post in posts:
        request = ExportTraceServiceRequest()
        request.ParseFromString(post.body)
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                spans.extend(scope.spans)
    return spans


def _attr(span, key: str) -> str | None:
    for kv in span.attributes:
        if kv.key == key:
            return kv.value.string_value
    return None


@pytest.mark.django_db(transaction=True)
def test_a_runs_trace_continues_the_requests_traceparent(user_client, scripted_agent, traced_config):
    langsmith, langfuse = FakeBackend(), FakeBackend()
    try:
        traced_config(langsmith.url, langfuse.url)
        scripted_agent("Continued answer.")
        tid = new_thread(user_client)
        response = user_client.post(f"/api/threads/{tid}/runs/wait", {"input": {"messages": [{"role": "user", "content": "hi"}]}},
                                    format="json", HTTP_TRACEPARENT=TRACEPARENT)
        assert response.status_code == 200 and response["X-Trace-Id"] == TRACE_ID
        body_of(response)
        run = Run.objects.get(thread_id=tid)
        assert (run.trace_id, run.traceparent) == (TRACE_ID, TRACEPARENT)
        tracing.flush()

        posts = langfuse.wait_for(lambda r: r.path == OTLP_PATH and str(run.pk).encode() in r.body)
        spans = _spans(posts)
        assert spans and {span.trace_id.hex() for span in spans} == {TRACE_ID}
        own = {span.span_id for span in spans}
        roots = [span for span in spans if span.parent_span_id not in own]
        assert [span.parent_span_id.hex() for span in roots] == [PARENT_SPAN]  # the caller's span is the parent
        assert _attr(roots[0], "session.id") == tid  # in the thread's session

        ls_body = b"".join(r.body for r in langsmith.wait_for(lambda r: r.path.startswith("/runs") and str(run.pk).encode() in r.body))
        assert TRACEPARENT.encode() in ls_body and b"deerflow_trace_id" in ls_body
    finally:
        tracing.shutdown()
        langsmith.close()
        langfuse.close()


@pytest.mark.django_db(transaction=True)
def test_a_run_without_traceparent_is_filed_under_the_trace_id_it_answered(user_client, scripted_agent, traced_config):
    langfuse = FakeBackend()
    try:
        traced_config(langfuse.url, langfuse.url)
        scripted_agent("Own trace.")
        tid = new_thread(user_client)
        response = user_client.post(f"/api/threads/{tid}/runs/wait", {"input": {"messages": [{"role": "user", "content": "hi"}]}},
                                    format="json")
        assert response.status_code == 200
        body_of(response)
        trace_id = response["X-Trace-Id"]
        run = Run.objects.get(thread_id=tid)
        assert run.trace_id == trace_id and run.traceparent == ""
        tracing.flush()
        spans = _spans(langfuse.wait_for(lambda r: r.path == OTLP_PATH and str(run.pk).encode() in r.body))
        assert {span.trace_id.hex() for span in spans} == {trace_id}  # the id the client got finds the trace
    finally:
        tracing.shutdown()
        langfuse.close()
