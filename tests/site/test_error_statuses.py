"""The HTTP status of each domain error, decided in one place (deerflow_site/errors.py)."""

from __future__ import annotations

import pytest

from apps import errors
from apps.governance.services import BudgetExceeded
from apps.schedules.dispatch import DispatchFailed, TaskRunConflict
from deerflow_site.errors import api_exception_handler, http_status


@pytest.mark.parametrize("error, status", [
    (errors.DomainError, 400), (errors.InvalidRequest, 422), (errors.NotFound, 404), (errors.Forbidden, 403),
    (errors.Conflict, 409), (errors.ThreadBusy, 409), (errors.ThreadStorageConflict, 409), (errors.PayloadTooLarge, 413),
    (errors.UnsupportedMediaType, 415), (errors.TooManyRequests, 429), (errors.UpstreamFailed, 502),
    (errors.ServiceUnavailable, 503),
    # A feature's own errors answer with their family's status.
    (BudgetExceeded, 429), (DispatchFailed, 502), (TaskRunConflict, 409),
])
def test_each_domain_error_answers_with_its_status_and_its_detail(error, status):
    exc = error("what went wrong")
    assert http_status(exc) == status
    response = api_exception_handler(exc, {"view": None})
    assert response.status_code == status and response.data == {"detail": "what went wrong"}


def test_an_error_the_table_does_not_name_answers_400():
    class Odd(errors.DomainError):
        pass

    assert http_status(Odd("odd")) == 400
    assert http_status(errors.RangeNotSatisfiable("past the end", 10)) == 416
