"""The shares API: make a link for a chat, list yours, revoke one (thin: parse, call, serialize)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.errors import InvalidRequest
from apps.shares import selectors, services
from apps.shares.tokens import share_token
from apps.threads.selectors import thread_get_for_user


class ShareSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    thread_id = serializers.CharField()
    title = serializers.CharField()
    url = serializers.CharField(help_text="The read-only link (absolute).")
    include_files = serializers.BooleanField()
    message_count = serializers.IntegerField()
    file_count = serializers.IntegerField(help_text="Files the snapshot names; reachable through the link only with include_files.")
    active = serializers.BooleanField()
    created_at = serializers.DateTimeField()
    revoked_at = serializers.DateTimeField(allow_null=True)


class ShareListSerializer(serializers.Serializer):
    shares = ShareSerializer(many=True)


class ShareCreateSerializer(serializers.Serializer):
    include_files = serializers.BooleanField(required=False, default=False,
                                             help_text="Let viewers open the files the conversation names (attachments, presented outputs).")


def share_json(request, share) -> dict:
    return {"id": str(share.id), "thread_id": share.thread_id, "title": share.title,
            "url": request.build_absolute_uri(f"/s/{share_token(share.id)}/"), "include_files": share.include_files,
            "message_count": len(share.messages or []), "file_count": len(share.files or []), "active": share.is_active,
            "created_at": share.created_at, "revoked_at": share.revoked_at}


class ThreadSharesView(APIView):
    """``POST /threads/{id}/shares``: a read-only link to a snapshot of the chat as it is now."""

    token_scopes = {"POST": "threads:write"}

    @extend_schema(request=ShareCreateSerializer, responses={201: ShareSerializer}, tags=["shares"])
    def post(self, request, thread_id):
        thread = thread_get_for_user(user=request.user, thread_id=thread_id)
        data = request.data if request.data is not None else {}
        if not isinstance(data, dict):
            raise InvalidRequest("the request body must be a JSON object")
        unknown = set(data) - {"include_files"}
        if unknown:
            raise InvalidRequest(f"{sorted(unknown)[0]}: unknown field")
        share = services.share_create(owner=request.user, thread=thread, include_files=data.get("include_files", False))
        return Response(ShareSerializer(share_json(request, share)).data, status=status.HTTP_201_CREATED)


class ShareCollectionView(APIView):
    """``GET /shares``: the caller's shared links, newest first (revoked ones too, marked)."""

    token_scopes = {"GET": "threads:read"}

    @extend_schema(parameters=[OpenApiParameter("thread_id", str, required=False, description="Only this chat's links.")],
                   responses={200: ShareListSerializer}, tags=["shares"])
    def get(self, request):
        shares = selectors.share_list(owner=request.user, thread_id=request.query_params.get("thread_id"))
        return Response(ShareListSerializer({"shares": [share_json(request, s) for s in shares]}).data)


class ShareDetailView(APIView):
    """``DELETE /shares/{id}``: revoke the link (the row stays, marked revoked, for the list)."""

    token_scopes = {"DELETE": "threads:write"}

    @extend_schema(responses={204: None}, tags=["shares"])
    def delete(self, request, share_id):
        services.share_revoke(owner=request.user, share_id=share_id)
        return Response(status=status.HTTP_204_NO_CONTENT)
