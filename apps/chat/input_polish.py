"""``POST /api/input-polish``: the composer's Polish button (DeerFlow's route and shapes).

``{text, locale?, thread_id?}`` → ``{rewritten_text, changed}``. One model call on the runs
runtime's loop; it starts no run and stores nothing, so it needs only ``runs:create`` (the
scope of the send it prepares). ``thread_id`` names the thread the draft is for, so the call is
traced beside it. DeerFlow's frontend sends the id of a chat not created yet, so an id that is not
one of the caller's threads is ignored rather than refused (which also tells nobody whose it is)."""

from __future__ import annotations

import logging

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.chat.oneshot import one_shot
from apps.errors import InvalidRequest, NotFound, ServiceUnavailable
from apps.threads.selectors import thread_of_owner
from harness.agents import input_polish
from harness.config.loader import get_app_config

logger = logging.getLogger(__name__)
MODEL_TIMEOUT = 60  # seconds: a draft is short; a stuck provider must not hold the button


class PolishRequest(serializers.Serializer):
    text = serializers.CharField(trim_whitespace=True, allow_blank=True)
    locale = serializers.CharField(required=False, allow_null=True, allow_blank=True, max_length=35)
    thread_id = serializers.CharField(required=False, allow_null=True, max_length=64)

    def validate(self, attrs):
        unknown = set(self.initial_data) - set(self.fields)
        if unknown:
            raise serializers.ValidationError({sorted(unknown)[0]: ["unknown field"]})
        return attrs


PolishResponse = inline_serializer("InputPolishResponse", {
    "rewritten_text": serializers.CharField(),
    "changed": serializers.BooleanField(),
})


def polish_draft(*, user, text: str, locale: str | None = None, thread_id: str | None = None) -> dict:
    app = get_app_config()
    cfg = app.input_polish
    if not cfg.enabled:
        raise NotFound("Input polishing is disabled (input_polish.enabled)")
    if not text:
        raise InvalidRequest("text: the draft is empty")
    if len(text) > cfg.max_chars:
        raise InvalidRequest(f"text: longer than {cfg.max_chars} characters (input_polish.max_chars)")
    metadata = {"thread_id": thread_id} if thread_id and thread_of_owner(thread_id=thread_id, owner_id=user.pk) else {}
    try:
        rewritten = one_shot(app, model_name=cfg.model_name, purpose="to polish with", trace_name="input_polish",
                             thread_id=metadata.get("thread_id", ""), user_id=str(user.pk), timeout=MODEL_TIMEOUT,
                             call=lambda model: input_polish.polish(model, text, locale or None, metadata=metadata))
    except ServiceUnavailable:
        raise
    except Exception as exc:  # the draft stays as it was; the user is told and may retry
        logger.info("Input polish failed (thread %s): %s", thread_id, exc)
        raise ServiceUnavailable("The model could not polish the draft; it is unchanged. Try again.") from None
    if not rewritten:
        raise ServiceUnavailable("The model answered with nothing; the draft is unchanged. Try again.")
    return {"rewritten_text": rewritten, "changed": rewritten != text}


class InputPolishView(APIView):
    token_scopes = {"POST": "runs:create"}

    @extend_schema(request=PolishRequest, responses={200: PolishResponse}, tags=["chat"])
    def post(self, request):
        if not isinstance(request.data, dict):
            raise InvalidRequest("the request body must be a JSON object")
        body = PolishRequest(data=request.data)
        body.is_valid(raise_exception=True)
        return Response(polish_draft(user=request.user, **body.validated_data))
