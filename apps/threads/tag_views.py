"""Chat tags: the caller's tags (list, create, rename, delete) and the tags of one chat.

Every route is scoped to the caller: another user's tag or thread id answers 404, and a chat
can only ever carry its owner's tags (``thread_tags_set`` makes or finds them by name for the
thread's owner). Filtering by tag is the thread search's ``tags`` (apps/chat/views.py).
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.threads import selectors, services


class TagOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    thread_count = serializers.IntegerField(required=False, help_text="How many of your chats carry the tag.")


class TagListOutputSerializer(serializers.Serializer):
    tags = TagOutputSerializer(many=True)


class TagNameInputSerializer(serializers.Serializer):
    # Shape only; trimming, length and uniqueness are the service's.
    name = serializers.CharField(allow_blank=True, trim_whitespace=False)


class ThreadTagsInputSerializer(serializers.Serializer):
    tags = serializers.ListField(child=serializers.CharField(allow_blank=True, trim_whitespace=False),
                                 help_text="The chat's tags, by name; names you have no tag for yet are created.")


class ThreadTagsOutputSerializer(serializers.Serializer):
    thread_id = serializers.CharField()
    tags = serializers.ListField(child=serializers.CharField())


def _valid(serializer_class, request):
    """The body's fields; a wrong shape is a 422 with ``detail`` (the one error handler)."""
    data = serializer_class(data=request.data)
    data.is_valid(raise_exception=True)
    return data.validated_data


def _tag(tag, count=None) -> dict:
    body = {"id": tag.pk, "name": tag.name}
    if count is not None:
        body["thread_count"] = count
    return body


class TagCollectionView(APIView):
    token_scopes = {"GET": "threads:read", "POST": "threads:write"}

    @extend_schema(responses=TagListOutputSerializer, summary="Your chat tags, with how many chats carry each")
    def get(self, request):
        tags = selectors.tag_list_for_user(user=request.user)
        return Response(TagListOutputSerializer({"tags": [_tag(t, t.thread_count) for t in tags]}).data)

    @extend_schema(request=TagNameInputSerializer, responses={201: TagOutputSerializer}, summary="Create a tag (or get yours of that name)")
    def post(self, request):
        tag = services.tag_create(owner=request.user, name=_valid(TagNameInputSerializer, request)["name"])
        return Response(TagOutputSerializer(_tag(tag)).data, status=status.HTTP_201_CREATED)


class TagDetailView(APIView):
    token_scopes = {"PATCH": "threads:write", "DELETE": "threads:write"}

    @extend_schema(request=TagNameInputSerializer, responses=TagOutputSerializer, summary="Rename a tag")
    def patch(self, request, tag_id: int):
        tag = selectors.tag_get_for_user(user=request.user, tag_id=tag_id)
        tag = services.tag_rename(tag=tag, name=_valid(TagNameInputSerializer, request)["name"])
        return Response(TagOutputSerializer(_tag(tag)).data)

    @extend_schema(responses={204: None}, summary="Delete a tag (its chats stay)")
    def delete(self, request, tag_id: int):
        services.tag_delete(tag=selectors.tag_get_for_user(user=request.user, tag_id=tag_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class ThreadTagsView(APIView):
    token_scopes = {"GET": "threads:read", "PUT": "threads:write"}

    @extend_schema(responses=ThreadTagsOutputSerializer, summary="A chat's tags")
    def get(self, request, thread_id: str):
        thread = selectors.thread_get_for_user(user=request.user, thread_id=thread_id)
        return Response(ThreadTagsOutputSerializer({"thread_id": thread.pk, "tags": selectors.thread_tag_names(thread=thread)}).data)

    @extend_schema(request=ThreadTagsInputSerializer, responses=ThreadTagsOutputSerializer, summary="Set a chat's tags")
    def put(self, request, thread_id: str):
        thread = selectors.thread_get_for_user(user=request.user, thread_id=thread_id)
        tags = services.thread_tags_set(thread=thread, names=_valid(ThreadTagsInputSerializer, request)["tags"])
        return Response(ThreadTagsOutputSerializer({"thread_id": thread.pk, "tags": [t.name for t in tags]}).data)
