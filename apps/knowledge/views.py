"""``/api/knowledge/…``: collections, documents, search, citations and a chat's attached
collections. Reads need ``knowledge:read`` from a token, changes ``knowledge:write``."""

from __future__ import annotations

from django.http import FileResponse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.parsers import JSONParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.errors import InvalidRequest, NotFound, PayloadTooLarge
from apps.knowledge import api_types as types
from apps.knowledge import selectors, services
from apps.knowledge.files import document_file
from apps.knowledge.serializers import (
    collection_json,
    document_json,
    passage_json,
    passage_url,
)
from apps.knowledge.stores import search_passages
from apps.threads.api_types import validated
from apps.threads.selectors import thread_get_for_user
from harness.config import get_app_config

READ, WRITE = "knowledge:read", "knowledge:write"
# Multipart boundaries and part headers on top of the file bytes.
FRAMING_ALLOWANCE = 1024 * 1024


class CollectionListView(APIView):
    token_scopes = {"GET": READ, "POST": WRITE}

    @extend_schema(responses=types.CollectionList)
    def get(self, request):
        return Response({"collections": [collection_json(c, user=request.user) for c in selectors.collections_for_user(user=request.user)]})

    @extend_schema(request=types.CollectionCreate, responses={201: types.Collection})
    def post(self, request):
        body = validated(types.CollectionCreate, request.data)
        collection = services.collection_create(user=request.user, name=body["name"], description=body.get("description", ""),
                                                agent=body.get("agent"))
        return Response(collection_json(collection, user=request.user), status=201)


class CollectionDetailView(APIView):
    token_scopes = {"GET": READ, "PATCH": WRITE, "DELETE": WRITE}

    @extend_schema(responses=types.Collection)
    def get(self, request, collection_id):
        return Response(collection_json(selectors.collection_get_readable(user=request.user, collection_id=collection_id), user=request.user))

    @extend_schema(request=types.CollectionPatch, responses=types.Collection)
    def patch(self, request, collection_id):
        changes = dict(validated(types.CollectionPatch, request.data))
        collection = services.collection_update(user=request.user, collection_id=collection_id, changes=changes)
        return Response(collection_json(collection, user=request.user))

    @extend_schema(responses={204: None})
    def delete(self, request, collection_id):
        services.collection_delete(user=request.user, collection_id=collection_id)
        return Response(status=204)


class DocumentListView(APIView):
    parser_classes = [JSONParser, MultiPartParser]
    token_scopes = {"GET": READ, "POST": WRITE}

    def initial(self, request, *args, **kwargs):
        # Before the body is parsed: a request larger than any allowed upload is refused unread.
        cfg = get_app_config()
        cap = cfg.knowledge.max_document_size * cfg.uploads.max_files + FRAMING_ALLOWANCE
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > cap:
            raise PayloadTooLarge(f"the request is {length} bytes; at most {cap} are accepted")
        super().initial(request, *args, **kwargs)

    @extend_schema(responses=types.DocumentList)
    def get(self, request, collection_id):
        collection = selectors.collection_get_readable(user=request.user, collection_id=collection_id)
        return Response({"documents": [document_json(d) for d in selectors.documents_of(collection)]})

    @extend_schema(request={"application/json": types.DocumentAdd, "multipart/form-data": types.DocumentUpload},
                   responses={202: types.DocumentList})
    def post(self, request, collection_id):
        if request.content_type.startswith("multipart/"):
            parts = request.FILES.getlist("files")
            if not parts:
                raise InvalidRequest("send the files as multipart parts named 'files'")
            added = services.document_add_uploads(user=request.user, collection_id=collection_id,
                                                   files=[services.IncomingFile(name=p.name, file=p) for p in parts])
        else:
            body = validated(types.DocumentAdd, request.data)
            if body.get("url"):
                added = [services.document_add_from_url(user=request.user, collection_id=collection_id, url=body["url"])]
            elif body.get("thread_id"):
                added = [services.document_add_from_thread(user=request.user, collection_id=collection_id,
                                                           thread_id=body["thread_id"], path=body.get("path"))]
            else:
                raise InvalidRequest("send files (multipart), a url, or a thread_id and path")
        return Response({"documents": [document_json(d) for d in added]}, status=202)


class DocumentDetailView(APIView):
    token_scopes = {"GET": READ, "DELETE": WRITE}

    @extend_schema(responses=types.PassageList)
    def get(self, request, document_id):
        document = selectors.document_get_readable(user=request.user, document_id=document_id)
        return Response({"document": document_json(document), "passages": [passage_json(p) for p in selectors.passages_of(document)]})

    @extend_schema(responses={204: None})
    def delete(self, request, document_id):
        services.document_delete(user=request.user, document_id=document_id)
        return Response(status=204)


class DocumentRetryView(APIView):
    token_scopes = {"POST": WRITE}

    @extend_schema(request=None, responses={202: types.Document})
    def post(self, request, document_id):
        return Response(document_json(services.document_retry(user=request.user, document_id=document_id)), status=202)


class DocumentFileView(APIView):
    token_scopes = {"GET": READ}

    @extend_schema(responses={(200, "application/octet-stream"): bytes})
    def get(self, request, document_id):
        document = selectors.document_get_readable(user=request.user, document_id=document_id)
        path = document_file(document)
        if path is None:
            raise NotFound("this document has no stored file")
        # Always a download: an HTML page or SVG someone added must not run in this origin.
        return FileResponse(path.open("rb"), as_attachment=True, filename=document.name, content_type="application/octet-stream")


class SearchView(APIView):
    token_scopes = {"GET": READ}

    @extend_schema(parameters=[OpenApiParameter("q", str, required=True), OpenApiParameter("collection", str, many=True),
                               OpenApiParameter("limit", int)], responses=types.SearchResults)
    def get(self, request):
        query = request.query_params.get("q", "")
        if not query.strip():
            raise InvalidRequest("q is required")
        try:
            limit = max(1, min(50, int(request.query_params.get("limit") or get_app_config().knowledge.search_results)))
        except ValueError:
            raise InvalidRequest("limit must be a number") from None
        wanted = request.query_params.getlist("collection")
        if wanted:
            ids = [selectors.collection_get_readable(user=request.user, collection_id=c).pk for c in wanted]
        else:
            ids = [c.pk for c in selectors.collections_for_user(user=request.user) if c.agent_id is None or c.owner_id == request.user.pk]
        hits = search_passages(ids, query, limit)
        return Response({"results": [{**hit.__dict__, "url": passage_url(hit.document_id, hit.citation_id)} for hit in hits]})


class CitationView(APIView):
    token_scopes = {"GET": READ}

    @extend_schema(responses=types.Citation)
    def get(self, request, citation_id):
        p = selectors.passage_get_readable(user=request.user, citation_id=citation_id)
        return Response({"citation_id": p.citation_id, "document_id": str(p.document_id),
                         "document_title": p.document.title or p.document.name, "section": p.section, "page": p.page,
                         "text": p.text, "url": passage_url(p.document_id, p.citation_id)})


class ThreadCollectionsView(APIView):
    token_scopes = {"GET": READ, "PUT": WRITE}

    @extend_schema(responses=types.ThreadCollections)
    def get(self, request, thread_id):
        thread_get_for_user(user=request.user, thread_id=thread_id)
        return Response({"collections": [collection_json(c, user=request.user) for c in selectors.thread_collections(thread_id=thread_id)]})

    @extend_schema(request=types.ThreadCollectionsSet, responses=types.ThreadCollections)
    def put(self, request, thread_id):
        body = validated(types.ThreadCollectionsSet, request.data)
        attached = services.thread_collections_set(user=request.user, thread_id=thread_id, collection_ids=body["collection_ids"])
        return Response({"collections": [collection_json(c, user=request.user) for c in attached]})
