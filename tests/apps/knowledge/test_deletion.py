"""Deleting a document or a collection leaves nothing behind: rows, index entries, vectors,
files; and URL documents come through the SSRF guard."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.db import connection

from apps.knowledge import queue
from apps.knowledge.files import collection_dir

# db_tier: full-text queries and index triggers differ between SQLite and PostgreSQL.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.db_tier]


def counts() -> dict:
    tables = ["knowledge_collection", "knowledge_collectionshare", "knowledge_threadcollection", "knowledge_document",
              "knowledge_passage"]
    if connection.vendor == "sqlite":
        tables.append("knowledge_passage_fts_docsize")  # one row per indexed passage
    with connection.cursor() as cur:
        found = {}
        for table in tables:
            cur.execute(f"SELECT count(*) FROM {table}")
            found[table] = cur.fetchone()[0]
        return found


def files_under(path) -> list:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*") if p.is_file()) if path.exists() else []


def test_deleting_a_document_then_its_collection_leaves_no_rows_index_entries_or_files(user, other_user, user_client, kb):
    empty = counts()
    cid = kb.collection()
    kb.upload(cid, ("a.md", b"# A\n\nAlpha passage about comets."), ("b.md", b"# B\n\nBeta passage about comets."))
    user_client.patch(f"/api/knowledge/collections/{cid}", {"shared_with": ["bob"]}, format="json")
    tid = user_client.post("/api/threads", {}, format="json").json()["thread_id"]
    user_client.put(f"/api/threads/{tid}/knowledge", {"collection_ids": [cid]}, format="json")
    full = counts()
    assert full["knowledge_passage"] == 2 and full.get("knowledge_passage_fts_docsize", 2) == 2
    assert files_under(collection_dir(cid)) and len(files_under(collection_dir(cid))) == 2

    docs = {d["name"]: d["id"] for d in kb.documents(cid)}
    assert user_client.delete(f"/api/knowledge/documents/{docs['a.md']}").status_code == 204
    assert [h["text"] for h in kb.search("comets")] == ["Beta passage about comets."]
    assert counts()["knowledge_passage"] == 1
    assert files_under(collection_dir(cid)) == [f"{docs['b.md']}/b.md"]

    assert user_client.delete(f"/api/knowledge/collections/{cid}").status_code == 204
    assert counts() == empty
    assert not collection_dir(cid).exists()
    assert kb.search("comets") == []


class _Site(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        body = b"<html><body><h1>Opening hours</h1><p>The library opens at ten on Sundays.</p></body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def site():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Site)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hours"
    server.shutdown()
    server.server_close()


def test_a_url_is_fetched_through_the_ssrf_guard(user_client, kb, site, tmp_path, monkeypatch):
    import os

    import yaml

    cid = kb.collection()
    # Loopback is private: the guard refuses it, and the document says so.
    user_client.post(f"/api/knowledge/collections/{cid}/documents", {"url": site}, format="json")
    assert queue.drain(timeout=60)
    (refused,) = kb.documents(cid)
    assert refused["status"] == "failed" and "could not fetch" in refused["error"]

    # The operator opens loopback (web.allowed_private_networks): the page is read.
    config = yaml.safe_load(open(os.environ["DEER_FLOW_CONFIG_PATH"]).read())
    config["web"] = {"allowed_private_networks": ["127.0.0.0/8"]}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    monkeypatch.setenv("DEER_FLOW_CONFIG_PATH", str(path))
    assert user_client.post(f"/api/knowledge/documents/{refused['id']}/retry").status_code == 202
    assert queue.drain(timeout=60)
    (doc,) = kb.documents(cid)
    assert doc["status"] == "ready" and doc["source"] == site and doc["content_type"] == "text/html"
    hit = kb.search("library sunday opening")[0]
    assert hit["document_title"] == "Opening hours" and "ten on Sundays" in hit["text"]
    bad = user_client.post(f"/api/knowledge/collections/{cid}/documents", {"url": "file:///etc/passwd"}, format="json")
    assert bad.status_code == 422


def test_tokens_need_the_knowledge_scopes(user, kb):
    from rest_framework.test import APIClient

    from apps.accounts.services import token_create

    def token(*scopes):
        client = APIClient()
        raw = token_create(owner=user, name="t-" + "-".join(scopes), scopes=list(scopes)).token
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
        return client

    reader, writer = token("knowledge:read"), token("knowledge:write")
    assert reader.get("/api/knowledge/collections").status_code == 200
    assert reader.post("/api/knowledge/collections", {"name": "x"}, format="json").status_code == 403
    assert writer.post("/api/knowledge/collections", {"name": "x"}, format="json").status_code == 201
    assert token("threads:read").get("/api/knowledge/collections").status_code == 403
