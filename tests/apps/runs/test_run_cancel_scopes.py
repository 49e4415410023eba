"""Cancelling a run needs ``runs:cancel`` wherever the API offers it, and a GET cancels nothing.

The join routes (``…/runs/{rid}/stream``, ``…/runs/{rid}/join``) are reads (``runs:read``), but
two of their parameters cancel: ``?action=`` (cancel first, then stream) and
``cancel_on_disconnect`` (cancel when the client goes away; for ``/stream`` the run's own
``on_disconnect`` is the default). The runs here are held by another live process, so a cancel
only sets the run's flag: the flag tells whether anything was cancelled.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from apps.accounts.services import token_create
from apps.runs.models import Run

pytestmark = [pytest.mark.django_db(transaction=True)]

LACKS_CANCEL = {"detail": "this token lacks the 'runs:cancel' scope"}


def running_run(user, *, on_disconnect: str = "cancel") -> Run:
    """A running run as another live process would hold it: a cancel flags it and leaves it running."""
    from apps.threads.models import Thread

    thread = Thread.objects.create(owner=user, status=Thread.Status.BUSY)
    return Run.objects.create(thread=thread, owner=user, status=Run.Status.RUNNING, lease_owner="elsewhere:1",
                              lease_expires_at=timezone.now() + timedelta(seconds=60), kwargs={"on_disconnect": on_disconnect})


def cancel_requested(run: Run) -> bool:
    run.refresh_from_db()
    return run.cancel_requested_at is not None


def bearer(user, *scopes: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token_create(owner=user, name='script', scopes=list(scopes)).token}")
    return client


def session(user) -> APIClient:
    client = APIClient()
    client.force_login(user)
    return client


def stream_path(run: Run, query: str = "") -> str:
    return f"/api/threads/{run.thread_id}/runs/{run.pk}/stream{query}"


@pytest.mark.parametrize("how", ["session", "token with every scope", "read-only token"])
def test_a_get_with_action_is_refused_and_cancels_nothing(user, how):
    client = {"session": lambda: session(user),
              "token with every scope": lambda: bearer(user, "runs:read", "runs:cancel", "runs:create"),
              "read-only token": lambda: bearer(user, "runs:read")}[how]()
    run = running_run(user)
    for query in ("?action=interrupt", "?action=rollback&wait=1"):
        response = client.get(stream_path(run, query))
        assert response.status_code == 422, how
        assert response.json() == {"detail": "action is only accepted on POST: a GET never changes anything; "
                                             "cancel with POST …/runs/{run_id}/cancel?action=… (or POST this stream with ?action=…)"}
    assert not cancel_requested(run)


def test_a_read_only_token_cannot_cancel_by_posting_to_the_stream(user):
    run = running_run(user)
    response = bearer(user, "runs:read").post(stream_path(run, "?action=interrupt"))
    assert response.status_code == 403 and response.json() == LACKS_CANCEL
    assert not cancel_requested(run)


def test_a_token_with_runs_cancel_cancels_by_posting_to_the_stream(user):
    run = running_run(user)
    response = bearer(user, "runs:read", "runs:cancel").post(stream_path(run, "?action=interrupt&cancel_on_disconnect=false"))
    assert response.status_code == 200
    response.close()
    assert cancel_requested(run)


def test_a_session_cancels_by_posting_to_the_stream(user):
    run = running_run(user)
    response = session(user).post(stream_path(run, "?action=interrupt&cancel_on_disconnect=false"))
    assert response.status_code == 200
    response.close()
    assert cancel_requested(run)


def test_a_cancel_with_a_malformed_last_event_id_is_refused_before_it_cancels(user):
    run = running_run(user)
    response = session(user).post(stream_path(run, "?action=interrupt&cancel_on_disconnect=false"), HTTP_LAST_EVENT_ID="not an id")
    assert response.status_code == 422 and "Last-Event-ID" in response.json()["detail"]
    assert not cancel_requested(run)


def test_joining_with_cancel_on_disconnect_needs_runs_cancel(user):
    run = running_run(user)
    reader = bearer(user, "runs:read")
    for path in (stream_path(run, "?cancel_on_disconnect=true"), f"/api/threads/{run.thread_id}/runs/{run.pk}/join?cancel_on_disconnect=1"):
        response = reader.get(path)
        assert response.status_code == 403 and response.json() == LACKS_CANCEL, path
    assert not cancel_requested(run)
    # With the scope, the disconnect cancels.
    response = bearer(user, "runs:read", "runs:cancel").get(stream_path(run, "?cancel_on_disconnect=true"))
    assert response.status_code == 200
    response.close()
    assert cancel_requested(run)


def test_a_read_only_token_leaving_a_join_stream_does_not_cancel_the_run(user):
    """The run's on_disconnect=cancel applies to those who may cancel: a reader's stream just ends."""
    run = running_run(user, on_disconnect="cancel")
    response = bearer(user, "runs:read").get(stream_path(run))
    assert response.status_code == 200
    response.close()
    assert not cancel_requested(run)
    # The langgraph-sdk's join_stream sends cancel_on_disconnect=false: it joins with a read-only token.
    response = bearer(user, "runs:read").get(stream_path(run, "?cancel_on_disconnect=false&stream_mode="))
    assert response.status_code == 200
    response.close()
    assert not cancel_requested(run)


def test_a_session_leaving_a_join_stream_cancels_a_run_whose_on_disconnect_says_so(user):
    run = running_run(user, on_disconnect="cancel")
    response = session(user).get(stream_path(run))
    assert response.status_code == 200
    response.close()
    assert cancel_requested(run)
