from __future__ import annotations

import pytest

from apps.knowledge import queue


@pytest.fixture
def kb(user_client):
    """Helpers over the real API: make a collection, upload files, wait for the worker."""

    class KB:
        def collection(self, name="Handbook", client=None, **extra):
            response = (client or user_client).post("/api/knowledge/collections", {"name": name, **extra}, format="json")
            assert response.status_code == 201, response.content
            return response.json()["id"]

        def upload(self, collection_id, *files, client=None):
            from django.core.files.uploadedfile import SimpleUploadedFile

            parts = [SimpleUploadedFile(name, data) for name, data in files]
            response = (client or user_client).post(f"/api/knowledge/collections/{collection_id}/documents", {"files": parts},
                                                    format="multipart")
            assert response.status_code == 202, response.content
            assert queue.drain(timeout=120)
            return response.json()["documents"]

        def documents(self, collection_id, client=None):
            return (client or user_client).get(f"/api/knowledge/collections/{collection_id}/documents").json()["documents"]

        def search(self, q, client=None, **params):
            response = (client or user_client).get("/api/knowledge/search", {"q": q, **params})
            assert response.status_code == 200, response.content
            return response.json()["results"]

    return KB()
