"""Wire types of ``/api/knowledge/…``, as ``/api/schema/`` publishes them."""

from __future__ import annotations

from rest_framework import serializers

from apps.threads.api_types import StrictCharField


class Collection(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    description = serializers.CharField(allow_blank=True)
    owner = serializers.CharField(help_text="the owner's user name")
    is_owner = serializers.BooleanField()
    agent = serializers.CharField(allow_null=True, help_text="the id of the agent it is bound to, or null")
    shared_with = serializers.ListField(child=serializers.CharField(), help_text="user names (the owner sees them)")
    shared_with_everyone = serializers.BooleanField()
    document_count = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class CollectionList(serializers.Serializer):
    collections = Collection(many=True)


class CollectionCreate(serializers.Serializer):
    name = StrictCharField(max_length=120)
    description = StrictCharField(required=False, allow_blank=True, max_length=2000)
    agent = StrictCharField(required=False, allow_null=True, allow_blank=True, help_text="name or id of one of your agents")


class CollectionPatch(serializers.Serializer):
    name = StrictCharField(required=False, max_length=120)
    description = StrictCharField(required=False, allow_blank=True, max_length=2000)
    agent = StrictCharField(required=False, allow_null=True, allow_blank=True)
    shared_with = serializers.ListField(child=StrictCharField(), required=False, help_text="user names; replaces the list")
    shared_with_everyone = serializers.BooleanField(required=False)


class Document(serializers.Serializer):
    id = serializers.UUIDField()
    collection_id = serializers.UUIDField()
    name = serializers.CharField()
    title = serializers.CharField()
    version = serializers.IntegerField()
    is_current = serializers.BooleanField()
    source_kind = serializers.ChoiceField(choices=["upload", "url", "thread"])
    source = serializers.CharField(allow_blank=True)
    content_type = serializers.CharField(allow_blank=True)
    size = serializers.IntegerField()
    status = serializers.ChoiceField(choices=["queued", "processing", "ready", "failed"])
    progress = serializers.IntegerField(help_text="percent")
    error = serializers.CharField(allow_blank=True)
    passage_count = serializers.IntegerField()
    embedded = serializers.BooleanField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class DocumentList(serializers.Serializer):
    documents = Document(many=True)


class DocumentAdd(serializers.Serializer):
    """JSON: ``url`` (fetched through the SSRF guard), or ``thread_id`` + ``path`` (a file of
    one of your chats). Files are sent as multipart parts named ``files`` instead."""

    url = StrictCharField(required=False, max_length=2000)
    thread_id = StrictCharField(required=False)
    path = StrictCharField(required=False)


class DocumentUpload(serializers.Serializer):
    files = serializers.ListField(child=serializers.FileField())


class Passage(serializers.Serializer):
    citation_id = serializers.CharField()
    ordinal = serializers.IntegerField()
    section = serializers.CharField(allow_blank=True)
    page = serializers.IntegerField(allow_null=True)
    text = serializers.CharField()


class PassageList(serializers.Serializer):
    document = Document()
    passages = Passage(many=True)


class SearchHit(serializers.Serializer):
    citation_id = serializers.CharField()
    document_id = serializers.UUIDField()
    document_title = serializers.CharField()
    document_name = serializers.CharField()
    collection_name = serializers.CharField()
    section = serializers.CharField(allow_blank=True)
    page = serializers.IntegerField(allow_null=True)
    text = serializers.CharField()
    score = serializers.FloatField()
    url = serializers.CharField(help_text="the document page, opened at the passage")


class SearchResults(serializers.Serializer):
    results = SearchHit(many=True)


class Citation(serializers.Serializer):
    citation_id = serializers.CharField()
    document_id = serializers.UUIDField()
    document_title = serializers.CharField()
    section = serializers.CharField(allow_blank=True)
    page = serializers.IntegerField(allow_null=True)
    text = serializers.CharField()
    url = serializers.CharField()


class ThreadCollections(serializers.Serializer):
    collections = Collection(many=True)


class ThreadCollectionsSet(serializers.Serializer):
    collection_ids = serializers.ListField(child=StrictCharField())
