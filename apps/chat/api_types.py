"""Wire types of the chat app's thread actions, feedback and artifact edits. Request bodies
whose fields the service checks (naming the field) are published here with the same names;
the views refuse any other field."""

from __future__ import annotations

from rest_framework import serializers

from apps.runs.api_types import Run
from apps.threads.api_types import free_object


class ReplayedRun(Run):
    replaces_run_id = serializers.UUIDField(help_text="the run whose answer this one replaces")


class Regenerate(serializers.Serializer):
    """Run options for the rerun (the run request's fields, all optional)."""

    model_name = serializers.CharField(required=False, allow_null=True)
    config = free_object(required=False, allow_null=True)
    context = free_object(required=False, allow_null=True)
    metadata = free_object(required=False, allow_null=True)
    stream_mode = serializers.JSONField(required=False)


class EditRegenerate(Regenerate):
    content = serializers.JSONField(help_text="the edited message: text or content blocks")
    message_id = serializers.CharField(required=False, allow_null=True, help_text="the human message edited (default: the latest)")


class PreparedCheckpoint(serializers.Serializer):
    thread_id = serializers.CharField()
    checkpoint_ns = serializers.CharField(allow_blank=True)
    checkpoint_id = serializers.CharField(allow_null=True)


class RegeneratePrepare(serializers.Serializer):
    message_id = serializers.CharField(required=False, allow_null=True)


class PreparedRun(serializers.Serializer):
    input = free_object(help_text="{messages, title?}: the next run's input")
    checkpoint = PreparedCheckpoint()
    metadata = free_object()
    target_run_id = serializers.CharField()


class EditRegeneratePrepare(serializers.Serializer):
    human_message_id = serializers.CharField(required=False, allow_null=True)
    replacement_text = serializers.CharField()


class PreparedEdit(PreparedRun):
    replacement_human_message_id = serializers.CharField()
    source_message_ids = serializers.ListField(child=serializers.CharField())


class BranchCreate(serializers.Serializer):
    message_id = serializers.CharField(required=False, allow_null=True)
    message_ids = serializers.ListField(child=serializers.CharField(), required=False, allow_null=True)
    run_id = serializers.CharField(required=False, allow_null=True)
    title = serializers.CharField(required=False, allow_null=True, allow_blank=True)


class Branch(serializers.Serializer):
    thread_id = serializers.CharField()
    title = serializers.CharField(allow_blank=True, allow_null=True)
    source_thread_id = serializers.CharField()
    source_run_id = serializers.CharField()
    workspace_clone_mode = serializers.CharField()
    history_seed_mode = serializers.CharField()
    seeded_turns = serializers.IntegerField()
    seeded_messages = serializers.IntegerField()
    parent_thread_id = serializers.CharField()
    parent_checkpoint_id = serializers.CharField(allow_null=True)
    branched_from_message_id = serializers.CharField(allow_null=True)


class ContextUsage(serializers.Serializer):
    thread_id = serializers.CharField()
    model_name = serializers.CharField(allow_null=True)
    used_tokens = serializers.IntegerField()
    context_window = serializers.IntegerField(allow_null=True)
    percent = serializers.FloatField(allow_null=True)
    message_count = serializers.IntegerField()
    has_summary = serializers.BooleanField()
    keep_messages = serializers.IntegerField(allow_null=True)


class Compacted(serializers.Serializer):
    thread_id = serializers.CharField()
    summary_text = serializers.CharField(allow_blank=True)
    summarized_messages = serializers.IntegerField()
    kept_messages = serializers.IntegerField()
    checkpoint_id = serializers.CharField(allow_null=True)
    context_usage = free_object()


class SuggestionsConfig(serializers.Serializer):
    enabled = serializers.BooleanField()
    max_suggestions = serializers.IntegerField()


class SuggestionsAsk(serializers.Serializer):
    messages = serializers.ListField(child=serializers.JSONField(), required=False, allow_null=True)
    n = serializers.IntegerField(required=False, allow_null=True)
    model_name = serializers.CharField(required=False, allow_null=True)


class Suggestions(serializers.Serializer):
    suggestions = serializers.ListField(child=serializers.CharField())
    enabled = serializers.BooleanField()


class GoalSet(serializers.Serializer):
    objective = serializers.CharField()
    max_continuations = serializers.IntegerField(required=False, allow_null=True, min_value=0, max_value=8)


class Goal(serializers.Serializer):
    thread_id = serializers.CharField()
    goal = free_object(allow_null=True, help_text="{objective, status, max_continuations, continuation_count, ...}; null: none")


class FeedbackWrite(serializers.Serializer):
    rating = serializers.ChoiceField(choices=[1, -1], help_text="1 (good) or -1 (bad)")
    comment = serializers.CharField(required=False, allow_null=True, allow_blank=True)
    message_id = serializers.CharField(required=False, allow_null=True, allow_blank=True)


class Feedback(serializers.Serializer):
    feedback_id = serializers.IntegerField()
    run_id = serializers.CharField()
    thread_id = serializers.CharField()
    user_id = serializers.IntegerField()
    message_id = serializers.CharField(allow_blank=True)
    rating = serializers.IntegerField()
    comment = serializers.CharField(allow_blank=True, allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class FeedbackList(serializers.Serializer):
    feedback = Feedback(many=True)


class FeedbackDeleted(serializers.Serializer):
    success = serializers.BooleanField()
    deleted = serializers.IntegerField()


class ArtifactReplace(serializers.Serializer):
    content = serializers.CharField(allow_blank=True, trim_whitespace=False)
    expected_sha256 = serializers.CharField(required=False, allow_null=True, help_text="refuse (409) if the file changed meanwhile")


class ArtifactReplaced(serializers.Serializer):
    path = serializers.CharField()
    sha256 = serializers.CharField()
    size = serializers.IntegerField()


class ExportedMessage(serializers.Serializer):
    role = serializers.CharField(help_text="user, assistant or tool")
    created_at = serializers.DateTimeField(allow_null=True)
    run_id = serializers.CharField(allow_null=True)
    content = serializers.CharField(allow_blank=True)
    tool_calls = serializers.ListField(child=free_object(), required=False, help_text="assistant: {name, args}")
    files = serializers.ListField(child=free_object(), required=False, help_text="user: {name, size}")
    model = serializers.CharField(required=False, allow_blank=True, help_text="assistant: the model that answered")
    name = serializers.CharField(required=False, allow_blank=True, help_text="tool: the tool's name")


class ThreadExport(serializers.Serializer):
    thread_id = serializers.CharField()
    title = serializers.CharField()
    exported_at = serializers.DateTimeField()
    messages = ExportedMessage(many=True)
