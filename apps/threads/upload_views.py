"""Upload routes: POST files, GET limits and the listing, DELETE one file.

Multipart bodies are never held in memory: Django's upload handlers write each file to a
temp file past FILE_UPLOAD_MAX_MEMORY_SIZE, and the limit handler installed here stops
reading as soon as a file or the request passes its cap (413).
"""

from __future__ import annotations

from django.core.files.uploadhandler import FileUploadHandler
from drf_spectacular.utils import extend_schema
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.errors import InvalidRequest, PayloadTooLarge
from apps.threads import api_types as types
from apps.threads import uploads
from apps.threads.selectors import thread_get_for_user

# Multipart boundaries and part headers on top of the file bytes.
FRAMING_ALLOWANCE = 1024 * 1024


class _LimitHandler(FileUploadHandler):
    """First in the handler chain: counts bytes per file and per request and stops the
    parse the moment a cap is passed, before the rest of the body is written anywhere."""

    def __init__(self, request, limits: dict[str, int]):
        super().__init__(request)
        self.limits = limits
        self.files = 0
        self.file_bytes = 0
        self.total_bytes = 0

    def new_file(self, field_name, file_name, *args, **kwargs):
        super().new_file(field_name, file_name, *args, **kwargs)
        self.files += 1
        self.file_bytes = 0
        if self.files > self.limits["max_files"]:
            raise PayloadTooLarge(f"more than {self.limits['max_files']} files in one request")

    def receive_data_chunk(self, raw_data, start):
        self.file_bytes += len(raw_data)
        self.total_bytes += len(raw_data)
        if self.file_bytes > self.limits["max_file_size"]:
            raise PayloadTooLarge(f"{self.file_name!r} is larger than the limit per file ({self.limits['max_file_size']} bytes)")
        if self.total_bytes > self.limits["max_total_size"]:
            raise PayloadTooLarge(f"the files are larger than the limit per request ({self.limits['max_total_size']} bytes)")
        return raw_data

    def file_complete(self, file_size):
        return None  # the next handlers build the file object


class ThreadUploadsView(APIView):
    parser_classes = [MultiPartParser]
    token_scopes = {"POST": "threads:write"}

    def initial(self, request, *args, **kwargs):
        # Before authentication: session auth's CSRF check may parse the body.
        limits = uploads.upload_limits()
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > limits["max_total_size"] + FRAMING_ALLOWANCE:
            raise PayloadTooLarge(f"the request is {length} bytes; uploads are limited to {limits['max_total_size']} bytes per request")
        django_request = request._request
        django_request.upload_handlers = [_LimitHandler(django_request, limits), *django_request.upload_handlers]
        super().initial(request, *args, **kwargs)

    @extend_schema(request={"multipart/form-data": types.UploadRequest}, responses=types.Uploaded)
    def post(self, request, thread_id):
        thread = thread_get_for_user(user=request.user, thread_id=thread_id)
        parts = request.FILES.getlist("files")
        if not parts and request.FILES:
            raise InvalidRequest("send the files as multipart parts named 'files'")
        incoming = [uploads.IncomingFile(name=part.name, file=part) for part in parts]
        try:
            return Response(uploads.upload_files(thread=thread, files=incoming))
        finally:
            for part in parts:
                part.close()  # removes Django's temp file now, not when garbage collected


class ThreadUploadLimitsView(APIView):
    token_scopes = {"GET": "threads:read"}

    @extend_schema(responses=types.UploadLimits)
    def get(self, request, thread_id):
        thread_get_for_user(user=request.user, thread_id=thread_id)
        return Response(uploads.upload_limits())


class ThreadUploadListView(APIView):
    token_scopes = {"GET": "threads:read"}

    @extend_schema(responses=types.UploadList)
    def get(self, request, thread_id):
        thread = thread_get_for_user(user=request.user, thread_id=thread_id)
        return Response(uploads.list_uploads(thread=thread))


class ThreadUploadDetailView(APIView):
    token_scopes = {"DELETE": "threads:write"}

    @extend_schema(responses={200: types.Done})
    def delete(self, request, thread_id, filename):
        thread = thread_get_for_user(user=request.user, thread_id=thread_id)
        return Response(uploads.delete_upload(thread=thread, filename=filename))
