"""Scheduled-task API (``/api/scheduled-tasks/``): parse, call a scheduling service, serialize.

Tokens: reading needs ``runs:read``; anything that creates, changes or starts runs needs
``runs:create`` (a task is a standing order to start runs).
"""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.errors import InvalidRequest
from apps.schedules import api_types as types
from apps.schedules import cron, dispatch, once, selectors, services
from apps.schedules.models import ScheduledTaskRun
from apps.schedules.serializers import task_json, task_run_json
from apps.threads.selectors import thread_get_for_user

_READ = "runs:read"
_WRITE = "runs:create"


def _int(value, name: str, default: int) -> int:
    if value in (None, ""):
        return default
    try:
        return int(value)
    except (TypeError, ValueError):
        raise InvalidRequest(f"{name} must be an integer") from None


def _tasks_json(tasks) -> list[dict]:
    tasks = list(tasks)
    active = selectors.active_task_ids(t.pk for t in tasks)
    return [task_json(t, active=t.pk in active) for t in tasks]


def _one_json(task) -> dict:
    return task_json(task, active=selectors.task_has_active_run(task.pk))


class ScheduledTaskCollectionView(APIView):
    token_scopes = {"GET": _READ, "POST": _WRITE}

    @extend_schema(responses=types.Task(many=True), operation_id="scheduled_tasks_list")
    def get(self, request):
        return Response(_tasks_json(selectors.scheduled_task_list(user=request.user)))

    @extend_schema(request=types.TaskWrite, responses={201: types.Task})
    def post(self, request):
        task = services.scheduled_task_create(user=request.user, data=request.data)
        return Response(_one_json(task), status=status.HTTP_201_CREATED)


class ScheduledTaskDetailView(APIView):
    token_scopes = {"GET": _READ, "PATCH": _WRITE, "DELETE": _WRITE}

    @extend_schema(responses=types.Task)
    def get(self, request, task_id):
        return Response(_one_json(selectors.scheduled_task_get_for_user(user=request.user, task_id=task_id)))

    @extend_schema(request=types.TaskWrite, responses=types.Task)
    def patch(self, request, task_id):
        task = selectors.scheduled_task_get_for_user(user=request.user, task_id=task_id)
        return Response(_one_json(services.scheduled_task_update(task=task, data=request.data)))

    @extend_schema(responses={200: types.TaskDeleted})
    def delete(self, request, task_id):
        task = selectors.scheduled_task_get_for_user(user=request.user, task_id=task_id)
        services.scheduled_task_delete(task=task)
        return Response({"id": task_id, "deleted": True})


class _EnableView(APIView):
    token_scopes = {"POST": _WRITE}
    enabled = True

    @extend_schema(request=None, responses=types.Task)
    def post(self, request, task_id):
        task = selectors.scheduled_task_get_for_user(user=request.user, task_id=task_id)
        return Response(_one_json(services.scheduled_task_set_enabled(task=task, enabled=self.enabled)))


class ScheduledTaskPauseView(_EnableView):
    enabled = False


class ScheduledTaskResumeView(_EnableView):
    enabled = True


class ScheduledTaskTriggerView(APIView):
    """Runs the task now, in this process (so its live stream is here): 409 while a run of
    the task is active, 502 when the run cannot be started (the task's history says why)."""

    token_scopes = {"POST": _WRITE}

    @extend_schema(request=None, responses=types.TaskTriggered)
    def post(self, request, task_id):
        task = selectors.scheduled_task_get_for_user(user=request.user, task_id=task_id)
        task_run = dispatch.dispatch(task.pk, trigger=ScheduledTaskRun.Trigger.MANUAL)
        return Response({"id": task.pk, "triggered": True, "task_run": task_run_json(task_run)})


class ScheduledTaskRunsView(APIView):
    token_scopes = {"GET": _READ}

    @extend_schema(responses=types.TaskRun(many=True))
    def get(self, request, task_id):
        task = selectors.scheduled_task_get_for_user(user=request.user, task_id=task_id)
        params = request.query_params
        runs = selectors.task_run_list(task=task, limit=_int(params.get("limit"), "limit", 50), offset=_int(params.get("offset"), "offset", 0))
        return Response([task_run_json(r) for r in runs])


class ThreadScheduledTasksView(APIView):
    token_scopes = {"GET": _READ}

    @extend_schema(responses=types.Task(many=True))
    def get(self, request, thread_id):
        thread = thread_get_for_user(user=request.user, thread_id=thread_id)
        return Response(_tasks_json(selectors.scheduled_task_list(user=request.user, thread_id=thread.pk)))


class SchedulePreviewView(APIView):
    """The UI's preview: a readable description and the next five firing times."""

    token_scopes = {"POST": _READ}

    @extend_schema(request=types.SchedulePreviewAsk, responses=types.SchedulePreview)
    def post(self, request):
        data = request.data if isinstance(request.data, dict) else {}
        zone = data.get("timezone") or "UTC"
        if data.get("schedule_type") == "once" or ("run_at" in data and "cron" not in data):
            return Response(once.preview(data.get("run_at"), cron.parse_timezone(zone), now=timezone.now()))
        return Response(cron.preview(data.get("cron"), zone, now=timezone.now(), count=5))
