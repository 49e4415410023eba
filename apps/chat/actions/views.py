"""API views of the thread actions (thin: parse, call the service, serialize)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiTypes, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.chat import api_types as types
from apps.chat.actions import branch, replay, versions
from apps.errors import InvalidRequest
from apps.runs.serializers import run_json
from apps.threads.selectors import thread_get_for_user


class VersionGroupSerializer(serializers.Serializer):
    run_ids = serializers.ListField(child=serializers.CharField(), help_text="The versions' runs, oldest first.")
    kinds = serializers.ListField(child=serializers.ChoiceField(["original", "regenerate", "edit"]))
    shown = serializers.CharField(help_text="The run of the version the history shows.")
    index = serializers.IntegerField(help_text="Its place, from 1.")
    total = serializers.IntegerField()


class AnswerVersionsSerializer(serializers.Serializer):
    thread_id = serializers.CharField()
    groups = VersionGroupSerializer(many=True)


class VersionShowSerializer(serializers.Serializer):
    run_id = serializers.CharField(help_text="The run of the version to show.")


def _body(request) -> dict:
    data = request.data
    if data is None or data == {}:
        return {}
    if not isinstance(data, dict):
        raise InvalidRequest("the request body must be a JSON object")
    return data


def _replay_response(admitted, source) -> Response:
    run = admitted.run
    body = {**run_json(run), "replaces_run_id": str(source.pk)}
    response = Response(body, status=status.HTTP_201_CREATED)
    response["Content-Location"] = f"/api/threads/{run.thread_id}/runs/{run.pk}"
    return response


class RegenerateView(APIView):
    """``POST /threads/{id}/runs/regenerate``: rerun the latest answer's turn from the state
    before it; the new run's stream is at ``/runs/{run_id}/stream``."""

    token_scopes = {"POST": "runs:create"}

    @extend_schema(request=types.Regenerate, responses={201: types.ReplayedRun})
    def post(self, request, thread_id):
        thread = thread_get_for_user(user=request.user, thread_id=thread_id)
        admitted, source = replay.replay_start(user=request.user, thread=thread, kind="regenerate", overrides=_body(request))
        return _replay_response(admitted, source)


class EditRerunView(APIView):
    """``POST /threads/{id}/runs/edit-regenerate`` ``{content, message_id?, …run options}``."""

    token_scopes = {"POST": "runs:create"}

    @extend_schema(request=types.EditRegenerate, responses={201: types.ReplayedRun})
    def post(self, request, thread_id):
        thread = thread_get_for_user(user=request.user, thread_id=thread_id)
        body = dict(_body(request))
        content, message_id = body.pop("content", None), body.pop("message_id", None)
        admitted, source = replay.replay_start(user=request.user, thread=thread, kind="edit", content=content,
                                               message_id=message_id, overrides=body)
        return _replay_response(admitted, source)


class RegeneratePrepareView(APIView):
    """``POST /threads/{id}/runs/regenerate/prepare`` ``{message_id}`` → ``{input, checkpoint,
    metadata, target_run_id}``: DeerFlow's frontend streams that run next. Changes nothing."""

    token_scopes = {"POST": "runs:create"}

    @extend_schema(request=types.RegeneratePrepare, responses=types.PreparedRun)
    def post(self, request, thread_id):
        thread = thread_get_for_user(user=request.user, thread_id=thread_id)
        body = _body(request)
        unknown = set(body) - set(types.RegeneratePrepare().fields)
        if unknown:
            raise InvalidRequest(f"{sorted(unknown)[0]}: unknown field")
        return Response(replay.regenerate_prepare(thread=thread, message_id=body.get("message_id")))


class EditRegeneratePrepareView(APIView):
    """``POST /threads/{id}/runs/edit-regenerate/prepare`` ``{human_message_id, replacement_text}``
    → the above plus ``replacement_human_message_id, source_message_ids``. Changes nothing."""

    token_scopes = {"POST": "runs:create"}

    @extend_schema(request=types.EditRegeneratePrepare, responses=types.PreparedEdit)
    def post(self, request, thread_id):
        thread = thread_get_for_user(user=request.user, thread_id=thread_id)
        body = _body(request)
        unknown = set(body) - set(types.EditRegeneratePrepare().fields)
        if unknown:
            raise InvalidRequest(f"{sorted(unknown)[0]}: unknown field")
        return Response(replay.edit_regenerate_prepare(thread=thread, human_message_id=body.get("human_message_id"),
                                                       replacement_text=body.get("replacement_text")))


class BranchView(APIView):
    """``POST /threads/{id}/branches`` ``{message_id | message_ids | run_id, title?}`` → 201 the new thread."""

    token_scopes = {"POST": "threads:write"}

    @extend_schema(request=types.BranchCreate, responses={201: types.Branch})
    def post(self, request, thread_id):
        thread = thread_get_for_user(user=request.user, thread_id=thread_id)
        body = _body(request)
        unknown = set(body) - set(types.BranchCreate().fields)
        if unknown:
            raise InvalidRequest(f"{sorted(unknown)[0]}: unknown field")
        result = branch.branch_create(user=request.user, thread=thread, message_id=body.get("message_id"),
                                      message_ids=body.get("message_ids"), run_id=body.get("run_id"), title=body.get("title"))
        return Response(result, status=status.HTTP_201_CREATED)


class CompactView(APIView):
    """``POST /threads/{id}/compact``: summarize older context, keep the recent window; 409 during a run."""

    token_scopes = {"POST": "threads:write"}

    @extend_schema(request=None, responses=types.Compacted)
    def post(self, request, thread_id):
        from apps.chat.actions.compaction import thread_compact

        thread = thread_get_for_user(user=request.user, thread_id=thread_id)
        return Response(thread_compact(thread=thread))


class ContextUsageView(APIView):
    """``GET /threads/{id}/context``: approximate tokens of the thread's context vs the model's window."""

    token_scopes = {"GET": "threads:read"}

    @extend_schema(responses=types.ContextUsage)
    def get(self, request, thread_id):
        from apps.chat.actions.compaction import thread_context_usage

        thread = thread_get_for_user(user=request.user, thread_id=thread_id)
        return Response(thread_context_usage(thread=thread))


class SuggestionsConfigView(APIView):
    token_scopes = {"GET": "threads:read"}

    @extend_schema(responses=types.SuggestionsConfig)
    def get(self, request):
        from apps.chat.actions.suggestions import suggestions_config

        return Response(suggestions_config())


class SuggestionsView(APIView):
    """``POST /threads/{id}/suggestions`` ``{messages?, n?, model_name?}`` → ``{suggestions: [..]}``."""

    token_scopes = {"POST": "threads:read"}

    @extend_schema(request=types.SuggestionsAsk, responses=types.Suggestions)
    def post(self, request, thread_id):
        from apps.chat.actions.suggestions import thread_suggestions

        thread = thread_get_for_user(user=request.user, thread_id=thread_id)
        body = _body(request)
        unknown = set(body) - set(types.SuggestionsAsk().fields)
        if unknown:
            raise InvalidRequest(f"{sorted(unknown)[0]}: unknown field")
        return Response(thread_suggestions(thread=thread, messages=body.get("messages"), n=body.get("n"), model_name=body.get("model_name")))


class GoalView(APIView):
    """``GET/PUT/DELETE /threads/{id}/goal``: PUT ``{objective, max_continuations (0–8)}``."""

    token_scopes = {"GET": "threads:read", "PUT": "threads:write", "DELETE": "threads:write"}

    @extend_schema(responses=types.Goal)
    def get(self, request, thread_id):
        from apps.chat.actions.goals import goal_get

        return Response(goal_get(thread=thread_get_for_user(user=request.user, thread_id=thread_id)))

    @extend_schema(request=types.GoalSet, responses=types.Goal)
    def put(self, request, thread_id):
        from apps.chat.actions.goals import goal_set

        thread = thread_get_for_user(user=request.user, thread_id=thread_id)
        body = _body(request)
        unknown = set(body) - set(types.GoalSet().fields)
        if unknown:
            raise InvalidRequest(f"{sorted(unknown)[0]}: unknown field")
        return Response(goal_set(thread=thread, objective=body.get("objective"), max_continuations=body.get("max_continuations")))

    @extend_schema(responses={204: None})
    def delete(self, request, thread_id):
        from apps.chat.actions.goals import goal_clear

        goal_clear(thread=thread_get_for_user(user=request.user, thread_id=thread_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class VersionsView(APIView):
    """``GET /threads/{id}/versions``: the turns that have more than one version (after a
    regenerate or an edit) and the one shown; ``POST`` ``{run_id}`` shows another version and
    makes the thread continue from it."""

    token_scopes = {"GET": "threads:read", "POST": "threads:write"}

    @extend_schema(responses={200: AnswerVersionsSerializer}, tags=["threads"])
    def get(self, request, thread_id):
        thread = thread_get_for_user(user=request.user, thread_id=thread_id)
        return Response(versions.answer_versions(thread=thread))

    @extend_schema(request=VersionShowSerializer, responses={200: AnswerVersionsSerializer}, tags=["threads"])
    def post(self, request, thread_id):
        thread = thread_get_for_user(user=request.user, thread_id=thread_id)
        body = _body(request)
        unknown = set(body) - {"run_id"}
        if unknown:
            raise InvalidRequest(f"{sorted(unknown)[0]}: unknown field")
        return Response(versions.answer_version_show(thread=thread, run_id=body.get("run_id")))
