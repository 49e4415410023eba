"""The run API's wire types (LangGraph Platform's Run, ThreadState and their pages). The run
request is the pydantic ``RunCreate`` the views already validate with (``apps/runs/schemas.py``),
published as it is; the responses are these serializers. Run input, config, context, metadata
and state values stay free-form objects, as LangGraph has them."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample
from rest_framework import serializers

from apps.threads.api_types import free_object

RUN_STATUSES = ["pending", "running", "success", "error", "interrupted", "timeout"]


class Run(serializers.Serializer):
    run_id = serializers.UUIDField()
    thread_id = serializers.CharField()
    assistant_id = serializers.CharField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True, help_text="when the run settled; null while it is active")
    status = serializers.ChoiceField(choices=RUN_STATUSES)
    metadata = free_object()
    kwargs = free_object(help_text="the run request as admitted (input, config, stream_mode, ...)")
    multitask_strategy = serializers.CharField()
    model_name = serializers.CharField(allow_null=True)
    total_input_tokens = serializers.IntegerField()
    total_output_tokens = serializers.IntegerField()
    total_tokens = serializers.IntegerField()
    cache_read_tokens = serializers.IntegerField()
    llm_call_count = serializers.IntegerField()
    subagent_tokens = serializers.IntegerField()
    lead_agent_tokens = serializers.IntegerField()
    message_count = serializers.IntegerField()
    token_usage = free_object(help_text="tokens per model")
    stop_reason = serializers.CharField(allow_null=True)
    error = serializers.CharField(allow_null=True)


RUN_EXAMPLE = OpenApiExample("run", response_only=True, value={
    "run_id": "1f0c2d3e-4a5b-6c7d-8e9f-0a1b2c3d4e5f", "thread_id": "0d8f3c2e-4b7a-4f3e-9a51-2c6d7e8f9a01",
    "assistant_id": "lead_agent", "created_at": "2026-12-06T00:00:00+00:00", "updated_at": "2026-12-06T00:00:00+00:00",
    "finished_at": None, "status": "pending", "metadata": {}, "kwargs": {"input": {"messages": [{"role": "user", "content": "Hi"}]}},
    "multitask_strategy": "reject", "model_name": None, "total_input_tokens": 0, "total_output_tokens": 0, "total_tokens": 0,
    "cache_read_tokens": 0, "llm_call_count": 0, "subagent_tokens": 0, "lead_agent_tokens": 0, "message_count": 0,
    "token_usage": {}, "stop_reason": None, "error": None})


RUN_REQUEST_EXAMPLE = OpenApiExample("a message to the lead agent", request_only=True, value={
    "assistant_id": "lead_agent", "input": {"messages": [{"role": "user", "content": "Summarise today's news on AI"}]},
    "stream_mode": ["values", "messages-tuple"], "config": {"recursion_limit": 100}, "context": {"thinking_enabled": True}})


class RunError(serializers.Serializer):
    error = serializers.CharField()
    message = serializers.CharField(allow_null=True)


class FinalValues(serializers.Serializer):
    """``/wait`` and ``/join``: the thread's final state values (free-form), with ``__error__``
    when the run failed."""

    __error__ = RunError(required=False, help_text="only when the run failed")


class Checkpoint(serializers.Serializer):
    thread_id = serializers.CharField(allow_null=True)
    checkpoint_ns = serializers.CharField(allow_blank=True)
    checkpoint_id = serializers.CharField(allow_null=True)
    checkpoint_map = free_object(allow_null=True)


class ThreadState(serializers.Serializer):
    values = serializers.JSONField(help_text="the state values (an object for the lead agent)")
    next = serializers.ListField(child=serializers.CharField())
    tasks = serializers.ListField(child=free_object())
    metadata = free_object()
    created_at = serializers.CharField(allow_null=True)
    checkpoint = Checkpoint(allow_null=True)
    parent_checkpoint = Checkpoint(allow_null=True)
    checkpoint_id = serializers.CharField(allow_null=True)
    parent_checkpoint_id = serializers.CharField(allow_null=True)
    interrupts = serializers.ListField(child=serializers.JSONField())


class ThreadStateUpdate(serializers.Serializer):
    values = serializers.JSONField(required=False, allow_null=True, help_text="free-form, as LangGraph has it")
    checkpoint_id = serializers.CharField(required=False, allow_null=True)
    checkpoint = free_object(required=False, allow_null=True)
    as_node = serializers.CharField(required=False, allow_null=True)


class ThreadStateUpdated(serializers.Serializer):
    checkpoint = Checkpoint(allow_null=True)
    checkpoint_id = serializers.CharField(allow_null=True)


class ThreadStateCheckpoint(serializers.Serializer):
    checkpoint = free_object(help_text="{checkpoint_id: ...}")
    subgraphs = serializers.BooleanField(required=False)


class ThreadHistory(serializers.Serializer):
    limit = serializers.IntegerField(required=False, allow_null=True)
    before = serializers.JSONField(required=False, allow_null=True, help_text="a checkpoint id or {checkpoint_id}")
    metadata = free_object(required=False, allow_null=True)
    checkpoint = free_object(required=False, allow_null=True)


class Event(serializers.Serializer):
    """One record of a run's journal."""

    thread_id = serializers.CharField()
    run_id = serializers.CharField()
    seq = serializers.IntegerField()
    event_type = serializers.CharField()
    category = serializers.CharField()
    content = serializers.JSONField()
    metadata = free_object()
    created_at = serializers.DateTimeField()
    feedback = serializers.JSONField(required=False, allow_null=True)


class MessagesPage(serializers.Serializer):
    data = Event(many=True)
    has_more = serializers.BooleanField()
    next_before_seq = serializers.IntegerField(allow_null=True)


class RunMessagesPage(serializers.Serializer):
    data = Event(many=True)
    has_more = serializers.BooleanField()
    next_after_seq = serializers.IntegerField(allow_null=True)


class ModelUsage(serializers.Serializer):
    tokens = serializers.IntegerField()
    input_tokens = serializers.IntegerField()
    output_tokens = serializers.IntegerField()
    cache_read_tokens = serializers.IntegerField()
    runs = serializers.IntegerField()


class ThreadTokenUsage(serializers.Serializer):
    thread_id = serializers.CharField()
    total_tokens = serializers.IntegerField()
    total_input_tokens = serializers.IntegerField()
    total_output_tokens = serializers.IntegerField()
    total_cache_read_tokens = serializers.IntegerField()
    total_runs = serializers.IntegerField()
    by_model = serializers.DictField(child=ModelUsage())
