"""The thread API's wire types (LangGraph Platform's Thread and its requests): the views
validate their input with these serializers and drf-spectacular publishes the same ones in
``/api/schema/``. Metadata and state values stay free-form objects, as LangGraph has them."""

from __future__ import annotations

import functools

from drf_spectacular.utils import OpenApiExample
from rest_framework import serializers

FREE = "a free-form JSON object, as LangGraph has it"


def free_object(**kwargs) -> serializers.DictField:
    return serializers.DictField(child=serializers.JSONField(allow_null=True), help_text=kwargs.pop("help_text", FREE), **kwargs)


def validated(serializer_class, data) -> dict:
    """The body checked by the type the schema publishes: a 422 naming the field path otherwise."""
    if not data and _takes_empty(serializer_class):
        return {}  # the common `POST /threads {}`: nothing to check, and a serializer per request costs
    serializer = serializer_class(data={} if data is None else data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


@functools.cache
def _takes_empty(serializer_class) -> bool:
    """Whether an empty body is valid as it is: no field required, none with a default."""
    return all(not field.required and field.default is serializers.empty for field in serializer_class().fields.values())


class StrictCharField(serializers.CharField):
    """A JSON string only: DRF's CharField would take 5 for "5", which a typed client never
    means and the API refused before the schema existed."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    """true or false only, not DRF's "yes", "on" or 1."""

    def to_internal_value(self, data):
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


THREAD_STATUSES = ["idle", "busy", "interrupted", "error"]


class Thread(serializers.Serializer):
    thread_id = serializers.CharField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    metadata = free_object()
    status = serializers.ChoiceField(choices=THREAD_STATUSES)
    values = free_object(help_text="the thread's current state values (a search lists only the title)")
    interrupts = free_object()
    title = serializers.CharField(allow_blank=True, allow_null=True)
    assistant_id = serializers.CharField()
    pinned_at = serializers.DateTimeField(allow_null=True)
    search_snippet = serializers.CharField(required=False, help_text="a search by query: the passage that matched")
    metadata_truncated = serializers.BooleanField(required=False, help_text="a search page cut this thread's metadata")


THREAD_EXAMPLE = OpenApiExample("thread", response_only=True, value={
    "thread_id": "0d8f3c2e-4b7a-4f3e-9a51-2c6d7e8f9a01", "created_at": "2026-12-06T00:00:00+00:00",
    "updated_at": "2026-12-06T00:00:00+00:00", "metadata": {"graph_id": "lead_agent"}, "status": "idle",
    "values": {}, "interrupts": {}, "title": "", "assistant_id": "lead_agent", "pinned_at": None})


class ThreadCreate(serializers.Serializer):
    thread_id = serializers.CharField(required=False, allow_null=True, allow_blank=True, trim_whitespace=False)
    metadata = free_object(required=False, allow_null=True)
    graph_id = serializers.CharField(required=False, allow_null=True, allow_blank=True)
    assistant_id = serializers.CharField(required=False, allow_null=True, allow_blank=True)
    if_exists = serializers.ChoiceField(choices=["raise", "do_nothing"], required=False, allow_null=True)
    supersteps = serializers.ListField(child=serializers.JSONField(allow_null=True), required=False, allow_null=True)
    ttl = serializers.JSONField(required=False, allow_null=True)


class ThreadPatch(serializers.Serializer):
    metadata = free_object(required=False, allow_null=True, help_text="merged into the thread's; a null value removes its key")


class ThreadSearch(serializers.Serializer):
    metadata = free_object(required=False, allow_null=True, help_text="exact match per key")
    status = serializers.CharField(required=False, allow_null=True)
    ids = serializers.ListField(child=serializers.CharField(), required=False, allow_null=True)
    values = free_object(required=False, allow_null=True)
    limit = serializers.IntegerField(required=False, allow_null=True)
    offset = serializers.IntegerField(required=False, allow_null=True)
    sort_by = serializers.CharField(required=False, allow_null=True)
    sort_order = serializers.CharField(required=False, allow_null=True)
    select = serializers.ListField(child=serializers.CharField(), required=False, allow_null=True)
    extract = free_object(required=False, allow_null=True)
    query = StrictCharField(required=False, allow_null=True, allow_blank=True, trim_whitespace=False,
                            help_text="DeerFlow: title or message text")
    pinned = StrictBooleanField(required=False, allow_null=True)
    started = StrictBooleanField(required=False, allow_null=True)
    tags = serializers.ListField(child=StrictCharField(), required=False, allow_null=True,
                                 help_text="only chats carrying every one of these tag names (the caller's own tags)")




class UploadLimits(serializers.Serializer):
    max_files = serializers.IntegerField()
    max_file_size = serializers.IntegerField()
    max_total_size = serializers.IntegerField()


class UploadRequest(serializers.Serializer):
    files = serializers.ListField(child=serializers.FileField(), help_text="one part named 'files' per file")


class UploadedFile(serializers.Serializer):
    filename = serializers.CharField()
    size = serializers.IntegerField()
    path = serializers.CharField()
    virtual_path = serializers.CharField()
    artifact_url = serializers.CharField()
    extension = serializers.CharField(allow_blank=True)
    modified = serializers.FloatField()
    markdown_file = serializers.CharField(required=False, help_text="the converted text beside a document")
    markdown_path = serializers.CharField(required=False)
    markdown_virtual_path = serializers.CharField(required=False)
    markdown_artifact_url = serializers.CharField(required=False)


class Quota(serializers.Serializer):
    thread_bytes = serializers.IntegerField()
    thread_limit = serializers.IntegerField(allow_null=True)
    user_bytes = serializers.IntegerField()
    user_limit = serializers.IntegerField(allow_null=True)


class Uploaded(serializers.Serializer):
    success = serializers.BooleanField()
    files = UploadedFile(many=True)
    message = serializers.CharField(allow_blank=True)
    skipped_files = serializers.ListField(child=serializers.CharField())


class UploadList(serializers.Serializer):
    files = UploadedFile(many=True)
    count = serializers.IntegerField()
    quota = Quota()


class Done(serializers.Serializer):
    success = serializers.BooleanField()
    message = serializers.CharField(allow_blank=True)
