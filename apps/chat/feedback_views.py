"""Feedback routes: ``PUT/GET/DELETE /api/threads/{tid}/runs/{rid}/feedback``."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.chat import api_types as types
from apps.runs.selectors import run_get_for_user, run_message_contents
from apps.threads import feedback
from apps.threads.selectors import thread_get_for_user


class RunFeedbackView(APIView):
    token_scopes = {"GET": "threads:read", "PUT": "threads:write", "DELETE": "threads:write"}

    def _run(self, request, thread_id, run_id):
        thread = thread_get_for_user(user=request.user, thread_id=thread_id)
        return run_get_for_user(user=request.user, thread_id=thread.pk, run_id=run_id)

    @extend_schema(responses=types.FeedbackList)
    def get(self, request, thread_id, run_id):
        run = self._run(request, thread_id, run_id)
        return Response({"feedback": [feedback.feedback_json(f) for f in feedback.feedback_for_run(user=request.user, run=run)]})

    @extend_schema(request=types.FeedbackWrite, responses=types.Feedback)
    def put(self, request, thread_id, run_id):
        run = self._run(request, thread_id, run_id)
        return Response(feedback.feedback_json(feedback.feedback_upsert(user=request.user, run=run, messages=run_message_contents(run=run),
                                                                   data=request.data)))

    @extend_schema(responses={200: types.FeedbackDeleted})
    def delete(self, request, thread_id, run_id):
        run = self._run(request, thread_id, run_id)
        removed = feedback.feedback_delete(user=request.user, run=run, messages=run_message_contents(run=run),
                                           message_id=request.query_params.get("message_id"))
        return Response({"success": bool(removed), "deleted": removed})
