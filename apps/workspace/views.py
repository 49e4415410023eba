from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.errors import InvalidRequest
from apps.runs.selectors import run_get_for_user
from apps.threads.selectors import thread_get_for_user
from apps.workspace.api_types import WorkspaceChanges
from apps.workspace.selectors import run_workspace_changes


def _flag(params, name: str) -> bool:
    value = (params.get(name) or "").lower()
    if value in ("", "1", "true", "yes"):
        return True
    if value in ("0", "false", "no"):
        return False
    raise InvalidRequest(f"{name} must be true or false")


class RunWorkspaceChangesView(APIView):
    """What one run changed in its thread's workspace and outputs, with text diffs:
    ``?include_files=true&include_diff=true``."""

    token_scopes = {"GET": "runs:read"}

    @extend_schema(responses=WorkspaceChanges)
    def get(self, request, thread_id, run_id):
        thread = thread_get_for_user(user=request.user, thread_id=thread_id)
        run = run_get_for_user(user=request.user, thread_id=thread.pk, run_id=run_id)
        return Response(run_workspace_changes(run=run, include_files=_flag(request.query_params, "include_files"),
                                              include_diff=_flag(request.query_params, "include_diff")))
