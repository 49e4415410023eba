"""Wire types of ``/api/console/*``. The envelopes are typed; the per-model and per-day
breakdowns inside are objects of the report's own keys (docs/console.md describes them)."""

from __future__ import annotations

from rest_framework import serializers

from apps.threads.api_types import free_object


class Period(serializers.Serializer):
    name = serializers.CharField()
    tz = serializers.CharField()
    since = serializers.DateField()
    until = serializers.DateField()
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()


class Cost(serializers.Serializer):
    amount = serializers.FloatField(allow_null=True)
    currency = serializers.CharField(allow_null=True)
    unpriced_models = serializers.ListField(child=serializers.CharField())


class Report(serializers.Serializer):
    period = Period()
    user = serializers.CharField(help_text="whose numbers: a username, or 'all'")


class Stats(Report):
    runs = serializers.IntegerField()
    threads = serializers.IntegerField()
    agents = serializers.IntegerField()
    active_runs = serializers.IntegerField()
    runs_by_status = serializers.DictField(child=serializers.IntegerField())
    tokens = free_object(help_text="input, output, cache_read, total")
    cost = Cost()
    error_rate = serializers.FloatField(allow_null=True)


class RunRow(serializers.Serializer):
    run_id = serializers.CharField()
    thread_id = serializers.CharField()
    thread_title = serializers.CharField(allow_blank=True, allow_null=True)
    user = serializers.CharField()
    assistant_id = serializers.CharField(allow_blank=True)
    status = serializers.CharField()
    model_name = serializers.CharField(allow_blank=True, allow_null=True)
    models = serializers.ListField(child=serializers.CharField())
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    duration_ms = serializers.IntegerField(allow_null=True)
    tokens = free_object()
    cost = Cost()
    stop_reason = serializers.CharField(allow_blank=True, allow_null=True)
    error = serializers.CharField(allow_blank=True, allow_null=True)


class Runs(Report):
    total = serializers.IntegerField()
    limit = serializers.IntegerField()
    offset = serializers.IntegerField()
    has_more = serializers.BooleanField()
    runs = RunRow(many=True)


class Usage(Report):
    total = free_object(help_text="runs, tokens, cost")
    days = serializers.ListField(child=free_object(), help_text="{date, runs, tokens, cost} per day")
    by_model = serializers.ListField(child=free_object(), help_text="{model, runs, tokens, cost}")
    top_threads = serializers.ListField(child=free_object(), help_text="{thread_id, thread_title, runs, tokens, cost}")
    top_users = serializers.ListField(child=free_object(), required=False, help_text="everyone's report only")


class FeedbackRow(serializers.Serializer):
    feedback_id = serializers.IntegerField()
    run_id = serializers.CharField()
    thread_id = serializers.CharField()
    thread_title = serializers.CharField(allow_blank=True, allow_null=True)
    user = serializers.CharField()
    message_id = serializers.CharField(allow_blank=True)
    rating = serializers.IntegerField()
    comment = serializers.CharField(allow_blank=True)
    model_name = serializers.CharField(allow_blank=True, allow_null=True)
    created_at = serializers.DateTimeField()


class FeedbackReport(Report):
    total = serializers.IntegerField()
    up = serializers.IntegerField()
    down = serializers.IntegerField()
    limit = serializers.IntegerField()
    offset = serializers.IntegerField()
    feedback = FeedbackRow(many=True)


class Queue(serializers.Serializer):
    pending = serializers.IntegerField()
    running = serializers.IntegerField()
    oldest_pending_seconds = serializers.IntegerField(allow_null=True)


class ActiveRunRow(RunRow):
    age_seconds = serializers.IntegerField()
    stuck = serializers.BooleanField()
    cancel_requested = serializers.BooleanField()


class Overview(serializers.Serializer):
    active_runs = ActiveRunRow(many=True)
    queue = Queue()
    failing_runs = RunRow(many=True)
    schedules = free_object(help_text="scheduled tasks that are failing or overdue: {problems: [...], ...}")


class RunCancelled(serializers.Serializer):
    run_id = serializers.CharField()
    status = serializers.CharField()
    cancel_requested = serializers.BooleanField()
