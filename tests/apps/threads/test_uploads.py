"""Uploads: staging and caps, renaming, conversion, listing, deletion, the startup sweep and
what the agent is told. Every bad input answers a precise 4xx and leaves nothing behind."""

from __future__ import annotations

import io
import os
import threading
import time
from pathlib import Path

import openpyxl
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.threads.models import Thread
from harness.agents.middlewares.uploads import UploadsMiddleware
from harness.config import thread_user_data_dir
from harness.uploads import files as uploads
from tests.apps.threads.conftest import read_body
from tests.support.documents import one_page_pdf

pytestmark = pytest.mark.django_db


def up(name: str, data: bytes, content_type: str = "application/octet-stream") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, data, content_type=content_type)


def post(client, tid, *files):
    return client.post(f"/api/threads/{tid}/uploads", {"files": list(files)}, format="multipart")


def upload_dir(user, tid) -> Path:
    return thread_user_data_dir(user.pk, tid) / "uploads"


def names_in(directory: Path) -> list[str]:
    return sorted(os.listdir(directory)) if directory.is_dir() else []


def xlsx_bytes() -> bytes:
    book = openpyxl.Workbook()
    book.active.append(["fruit", "qty"])
    book.active.append(["apple", 3])
    buf = io.BytesIO()
    book.save(buf)
    return buf.getvalue()


# --- happy paths ----------------------------------------------------------------------------


def test_upload_lists_each_file_with_its_virtual_path(user_client, user, thread_of):
    tid = thread_of()
    response = post(user_client, tid, up("notes.txt", b"hello"), up("data.csv", b"a,b\n1,2\n"))
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["success"] is True and body["skipped_files"] == [] and "Uploaded 2 files" in body["message"]
    first = body["files"][0]
    assert first["filename"] == "notes.txt" and first["size"] == 5 and first["extension"] == ".txt"
    assert first["virtual_path"] == first["path"] == "/mnt/user-data/uploads/notes.txt"
    assert first["artifact_url"] == f"/api/threads/{tid}/artifacts/mnt/user-data/uploads/notes.txt"
    assert isinstance(first["modified"], float)
    assert names_in(upload_dir(user, tid)) == ["data.csv", "notes.txt"]
    assert (upload_dir(user, tid) / "notes.txt").read_bytes() == b"hello"

    listing = user_client.get(f"/api/threads/{tid}/uploads/list").json()
    assert listing["count"] == 2 and [f["filename"] for f in listing["files"]] == ["data.csv", "notes.txt"]
    # The artifact URL in the answer really serves the file.
    served = user_client.get(first["artifact_url"])
    assert served.status_code == 200 and read_body(served) == b"hello"


def test_limits_route_reports_the_configured_caps(user_client, thread_of, uploads_config):
    uploads_config(max_files=3, max_file_size=1000, max_total_size=2000)
    tid = thread_of()
    assert user_client.get(f"/api/threads/{tid}/uploads/limits").json() == {"max_files": 3, "max_file_size": 1000, "max_total_size": 2000}


def test_duplicate_names_in_one_request_are_renamed_not_truncated(user_client, user, thread_of):
    tid = thread_of()
    response = post(user_client, tid, up("a.txt", b"one"), up("a.txt", b"two"), up("a_1.txt", b"three"), up("README", b"r1"), up("README", b"r2"))
    assert response.status_code == 200, response.content
    names = [f["filename"] for f in response.json()["files"]]
    assert names == ["a.txt", "a_2.txt", "a_1.txt", "README", "README_1"]
    d = upload_dir(user, tid)
    assert [(d / n).read_bytes() for n in names] == [b"one", b"two", b"three", b"r1", b"r2"]
    assert "renamed duplicates: a.txt -> a_2.txt" in response.json()["message"]


def test_a_later_request_replaces_a_file_of_the_same_name_whole(user_client, user, thread_of):
    tid = thread_of()
    post(user_client, tid, up("r.txt", b"x" * 5000))
    assert post(user_client, tid, up("r.txt", b"short")).status_code == 200
    assert (upload_dir(user, tid) / "r.txt").read_bytes() == b"short"


def test_concurrent_uploads_of_the_same_name_leave_one_whole_file(user, thread_of, uploads_config):
    """Two requests race on one name: the result is exactly one of them, never a mix or a prefix."""
    tid = thread_of()
    thread = Thread.objects.get(pk=tid)
    payloads = [bytes([65 + i]) * (3 * 1024 * 1024 + i) for i in range(4)]
    barrier = threading.Barrier(len(payloads))
    errors = []

    def send(data):
        try:
            barrier.wait()
            uploads.upload_files(thread=thread, files=[uploads.IncomingFile("same.bin", up("same.bin", data))])
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    workers = [threading.Thread(target=send, args=(p,)) for p in payloads]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert errors == []
    assert names_in(upload_dir(user, tid)) == ["same.bin"]
    assert (upload_dir(user, tid) / "same.bin").read_bytes() in payloads


# --- caps and bad input -----------------------------------------------------------------------


def test_file_over_the_per_file_cap_is_413_and_leaves_nothing(user_client, user, thread_of, uploads_config):
    uploads_config(max_file_size=100, max_total_size=10_000)
    tid = thread_of()
    response = post(user_client, tid, up("ok.txt", b"fine"), up("big.bin", b"x" * 101))
    assert response.status_code == 413
    assert "limit per file (100 bytes)" in response.json()["detail"]
    assert names_in(upload_dir(user, tid)) == []


def test_request_over_the_total_cap_is_413(user_client, user, thread_of, uploads_config):
    uploads_config(max_file_size=100, max_total_size=150)
    tid = thread_of()
    response = post(user_client, tid, up("a.txt", b"x" * 80), up("b.txt", b"y" * 80))
    assert response.status_code == 413 and "limit per request (150 bytes)" in response.json()["detail"]
    assert names_in(upload_dir(user, tid)) == []


def test_too_many_files_is_413(user_client, user, thread_of, uploads_config):
    uploads_config(max_files=2)
    tid = thread_of()
    response = post(user_client, tid, up("a.txt", b"1"), up("b.txt", b"2"), up("c.txt", b"3"))
    assert response.status_code == 413 and "more than 2 files" in response.json()["detail"]
    assert names_in(upload_dir(user, tid)) == []


def test_declared_content_length_over_the_cap_is_refused_before_parsing(user_client, thread_of, uploads_config):
    uploads_config(max_total_size=10)
    tid = thread_of()
    response = user_client.generic("POST", f"/api/threads/{tid}/uploads", b"", content_type="multipart/form-data; boundary=x",
                                   CONTENT_LENGTH=str(10 + 1024 * 1024 + 1))
    assert response.status_code == 413 and "limited to 10 bytes per request" in response.json()["detail"]


def test_the_service_catches_a_file_longer_than_it_said(user, thread_of, uploads_config):
    """A size the caller got wrong is caught while staging, and the staging file goes away."""
    uploads_config(max_file_size=10)
    thread = Thread.objects.get(pk=thread_of())

    class Liar:
        size = 5

        def chunks(self, n):
            yield b"x" * 8
            yield b"x" * 8

    with pytest.raises(uploads.PayloadTooLarge):
        uploads.upload_files(thread=thread, files=[uploads.IncomingFile("liar.bin", Liar())])
    assert names_in(uploads.uploads_dir(thread)) == []


@pytest.mark.parametrize(("name", "expected"), [
    (".env", "hidden files cannot be uploaded"),
    ("é" * 128 + ".txt", "at most 255 bytes"),
    ("list", "reserved name"),
    ("limits", "reserved name"),
])
def test_bad_names_are_422_and_nothing_is_written(user_client, user, thread_of, name, expected):
    tid = thread_of()
    response = post(user_client, tid, up("good.txt", b"ok"), up(name, b"data"))
    assert response.status_code == 422, response.content
    assert expected in response.json()["detail"]
    assert names_in(upload_dir(user, tid)) == []


@pytest.mark.parametrize("name", ["../../escape.txt", "/etc/escape.txt", "..\\..\\escape.txt", "a/../../escape.txt"])
def test_directory_parts_in_multipart_names_never_leave_the_uploads_dir(user_client, user, thread_of, name):
    tid = thread_of()
    response = post(user_client, tid, up(name, b"data"))
    assert response.status_code == 200, response.content
    assert response.json()["files"][0]["filename"] == "escape.txt"
    thread_root = thread_user_data_dir(user.pk, tid)
    assert not (thread_root / "escape.txt").exists() and not (thread_root.parent / "escape.txt").exists()
    assert names_in(upload_dir(user, tid)) == ["escape.txt"]


def test_service_refuses_names_with_separators_nul_or_dots(user, thread_of):
    thread = Thread.objects.get(pk=thread_of())
    for name, expected in [("../x", "not a plain file name"), ("a\\b", "not a plain file name"), ("a\x00b", "NUL"),
                           ("..", "not a file name"), ("tab\there", "control characters"), ("", "name is required"),
                           ("bad\ud800.txt", "lone UTF-16 surrogate")]:
        with pytest.raises(uploads.InvalidRequest, match=expected):
            uploads.upload_files(thread=thread, files=[uploads.IncomingFile(name, up("x", b"1"))])
    assert names_in(uploads.uploads_dir(thread)) == []


def test_empty_file_is_422(user_client, user, thread_of):
    tid = thread_of()
    response = post(user_client, tid, up("good.txt", b"ok"), up("empty.txt", b""))
    assert response.status_code == 422 and "'empty.txt' is empty" in response.json()["detail"]
    assert names_in(upload_dir(user, tid)) == []


def test_no_files_is_422(user_client, thread_of):
    tid = thread_of()
    response = user_client.post(f"/api/threads/{tid}/uploads", {"other": "x"}, format="multipart")
    assert response.status_code == 422 and "multipart parts named 'files'" in response.json()["detail"]
    wrong_field = user_client.post(f"/api/threads/{tid}/uploads", {"file": up("a.txt", b"1")}, format="multipart")
    assert wrong_field.status_code == 422 and "named 'files'" in wrong_field.json()["detail"]


def test_another_users_thread_is_404_on_every_upload_route(user_client, other_user, thread_of):
    from rest_framework.test import APIClient

    tid = thread_of()
    assert post(user_client, tid, up("mine.txt", b"secret")).status_code == 200
    bob = APIClient()
    bob.force_authenticate(other_user)
    assert post(bob, tid, up("x.txt", b"1")).status_code == 404
    assert bob.get(f"/api/threads/{tid}/uploads/list").status_code == 404
    assert bob.get(f"/api/threads/{tid}/uploads/limits").status_code == 404
    assert bob.delete(f"/api/threads/{tid}/uploads/mine.txt").status_code == 404
    assert user_client.get(f"/api/threads/{tid}/uploads/list").json()["count"] == 1


# --- conversion -----------------------------------------------------------------------------


def test_documents_get_a_markdown_companion(user_client, user, thread_of):
    tid = thread_of()
    response = post(user_client, tid, up("report.pdf", one_page_pdf("Quarterly revenue grew"), "application/pdf"), up("sheet.xlsx", xlsx_bytes()),
                    up("plain.txt", b"not converted"))
    assert response.status_code == 200, response.content
    pdf, sheet, plain = response.json()["files"]
    assert pdf["markdown_file"] == "report.pdf.md" and pdf["markdown_virtual_path"] == "/mnt/user-data/uploads/report.pdf.md"
    assert pdf["markdown_artifact_url"] == f"/api/threads/{tid}/artifacts/mnt/user-data/uploads/report.pdf.md"
    d = upload_dir(user, tid)
    assert "Quarterly revenue grew" in (d / "report.pdf.md").read_text()
    assert "| apple | 3 |" in (d / "sheet.xlsx.md").read_text()
    assert "markdown_file" not in plain and "markdown_error" not in plain
    # A user's own report.md is never overwritten by a companion.
    assert sheet["markdown_file"] == "sheet.xlsx.md"
    listing = {f["filename"]: f for f in user_client.get(f"/api/threads/{tid}/uploads/list").json()["files"]}
    assert listing["report.pdf"]["markdown_file"] == "report.pdf.md" and "report.pdf.md" in listing
    assert not [n for n in names_in(d) if n.startswith(".")]


def test_corrupt_pdf_uploads_without_a_companion_and_says_why(user_client, user, thread_of):
    tid = thread_of()
    response = post(user_client, tid, up("broken.pdf", b"%PDF-1.4 this is not really a pdf", "application/pdf"))
    assert response.status_code == 200, response.content
    entry = response.json()["files"][0]
    assert "markdown_file" not in entry
    assert entry["markdown_error"].startswith("could not convert to Markdown (PDFSyntaxError")
    assert "broken.pdf was not converted to Markdown" in response.json()["message"]
    assert names_in(upload_dir(user, tid)) == ["broken.pdf"]


def test_conversion_can_be_switched_off(user_client, user, thread_of, uploads_config):
    uploads_config(convert_documents=False)
    tid = thread_of()
    assert post(user_client, tid, up("report.pdf", one_page_pdf("hi"))).status_code == 200
    assert names_in(upload_dir(user, tid)) == ["report.pdf"]


def test_conversion_runs_on_one_worker_thread_per_request(user, thread_of, monkeypatch):
    thread = Thread.objects.get(pk=thread_of())
    seen = []
    real = uploads.convert_to_markdown
    monkeypatch.setattr(uploads, "convert_to_markdown", lambda path: seen.append(threading.current_thread().name) or real(path))
    files = [uploads.IncomingFile(f"r{i}.pdf", up(f"r{i}.pdf", one_page_pdf(f"page {i}"))) for i in range(3)]
    result = uploads.upload_files(thread=thread, files=files)
    assert [f["markdown_file"] for f in result["files"]] == ["r0.pdf.md", "r1.pdf.md", "r2.pdf.md"]
    assert len(seen) == 3 and len(set(seen)) == 1
    assert seen[0] != threading.current_thread().name and seen[0].startswith("upload-convert")


# --- delete ----------------------------------------------------------------------------------


def test_delete_removes_the_file_and_its_companion(user_client, user, thread_of):
    tid = thread_of()
    post(user_client, tid, up("report.pdf", one_page_pdf("bye")), up("keep.txt", b"k"))
    response = user_client.delete(f"/api/threads/{tid}/uploads/report.pdf")
    assert response.status_code == 200 and response.json() == {"success": True, "message": "Deleted report.pdf, report.pdf.md"}
    assert names_in(upload_dir(user, tid)) == ["keep.txt"]
    assert user_client.delete(f"/api/threads/{tid}/uploads/report.pdf").status_code == 404


@pytest.mark.parametrize(("raw", "status"), [("..", 422), ("%2e%2e", 422), (".upload-abc.part", 422), ("nothere.txt", 404), ("a%00b", 422)])
def test_delete_refuses_traversal_and_hidden_names(user_client, user, thread_of, raw, status):
    tid = thread_of()
    post(user_client, tid, up("keep.txt", b"k"))
    response = user_client.delete(f"/api/threads/{tid}/uploads/{raw}")
    assert response.status_code == status, response.content
    assert "detail" in response.json()
    assert names_in(upload_dir(user, tid)) == ["keep.txt"]


def test_delete_does_not_follow_a_symlink_out(user_client, user, thread_of, tmp_path):
    tid = thread_of()
    outside = tmp_path / "precious.txt"
    outside.write_text("keep me")
    d = upload_dir(user, tid)
    d.mkdir(parents=True, exist_ok=True)
    (d / "link.txt").symlink_to(outside)
    assert user_client.delete(f"/api/threads/{tid}/uploads/link.txt").status_code == 404
    assert outside.read_text() == "keep me"


# --- staging files: never listed, never shown, swept -------------------------------------------


def test_staging_files_are_not_listed_or_announced_to_the_agent(user_client, user, thread_of):
    tid = thread_of()
    post(user_client, tid, up("real.txt", b"content"))
    d = upload_dir(user, tid)
    (d / ".upload-deadbeef.part").write_bytes(b"half")
    listing = user_client.get(f"/api/threads/{tid}/uploads/list").json()
    assert [f["filename"] for f in listing["files"]] == ["real.txt"]
    update = UploadsMiddleware().before_agent({"thread_data": {"uploads_path": str(d)}, "messages": []}, None)
    text = update["messages"][0].content
    assert "/mnt/user-data/uploads/real.txt" in text and ".part" not in text
    assert [f["filename"] for f in update["uploaded_files"]] == ["real.txt"]


def test_agent_learns_about_new_uploads_and_companions_on_its_next_turn(user_client, user, thread_of):
    tid = thread_of()
    d = upload_dir(user, tid)
    post(user_client, tid, up("first.txt", b"1"))
    middleware = UploadsMiddleware()
    state = {"thread_data": {"uploads_path": str(d)}, "messages": []}
    state.update(middleware.before_agent(state, None))
    assert middleware.before_agent(state, None) is None  # nothing new: nothing said
    post(user_client, tid, up("deck.pdf", one_page_pdf("slides")))
    update = middleware.before_agent(state, None)
    text = update["messages"][0].content
    assert "/mnt/user-data/uploads/deck.pdf" in text and "/mnt/user-data/uploads/deck.pdf.md" in text
    assert "first.txt" not in text


def test_startup_sweep_removes_only_old_staging_files(user, thread_of, tmp_path, monkeypatch):
    # A home of its own: the sweep walks every thread of the home, and the worker's shared one
    # holds what earlier tests left (an upload taken back mid-way leaves a staging file).
    monkeypatch.setenv("DEER_FLOW_HOME", str(tmp_path / "home"))
    tid = thread_of()
    root = thread_user_data_dir(user.pk, tid)
    for sub in ("uploads", "outputs"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    old_upload = root / "uploads" / ".upload-0123abcd.part"
    old_artifact = root / "outputs" / ".artifact-99aa.part"
    fresh = root / "uploads" / ".upload-feedface.part"
    users_own = root / "uploads" / ".notes.part"
    regular = root / "uploads" / "data.part"
    for path in (old_upload, old_artifact, fresh, users_own, regular):
        path.write_bytes(b"x")
    past = time.time() - 3600
    for path in (old_upload, old_artifact, users_own, regular):
        os.utime(path, (past, past))
    assert uploads.sweep_staging_files() == 2
    assert not old_upload.exists() and not old_artifact.exists()
    assert fresh.exists() and users_own.exists() and regular.exists()
    assert uploads.sweep_staging_files(home=tmp_path / "empty") == 0


def test_browser_session_with_csrf_uploads_and_the_caps_hold(user, thread_of, uploads_config):
    """Session auth parses the body during its CSRF check, before the view runs: the caps
    still apply there (the limit handler is installed first) and answer 413 as JSON."""
    from django.middleware.csrf import _get_new_csrf_string, _mask_cipher_secret
    from rest_framework.test import APIClient

    uploads_config(max_file_size=100)
    tid = thread_of()
    browser = APIClient(enforce_csrf_checks=True)
    browser.force_login(user)
    secret = _get_new_csrf_string()
    browser.cookies["csrftoken"] = secret
    headers = {"HTTP_X_CSRFTOKEN": _mask_cipher_secret(secret)}
    ok = browser.post(f"/api/threads/{tid}/uploads", {"files": [up("a.txt", b"fine")]}, format="multipart", **headers)
    assert ok.status_code == 200, ok.content
    big = browser.post(f"/api/threads/{tid}/uploads", {"files": [up("b.bin", b"x" * 101)]}, format="multipart", **headers)
    assert big.status_code == 413 and "limit per file (100 bytes)" in big.json()["detail"]
    no_token = browser.post(f"/api/threads/{tid}/uploads", {"files": [up("c.txt", b"x")]}, format="multipart")
    assert no_token.status_code == 403
    assert names_in(upload_dir(user, tid)) == ["a.txt"]


@pytest.mark.filterwarnings("ignore:The xlrd engine is deprecated")  # pandas 3 about markitdown's .xls reader
@pytest.mark.parametrize(("name", "error"), [("old.xls", "XLRDError"), ("doc.docx", "BadZipFile"), ("deck.pptx", "BadZipFile"),
                                              ("book.xlsx", "BadZipFile")])
def test_each_format_uses_its_own_converter(user_client, thread_of, name, error):
    """A broken file of each convertible type fails in that format's reader (its dependency is
    installed), not in a fallback that would pass the raw bytes off as Markdown."""
    tid = thread_of()
    entry = post(user_client, tid, up(name, b"this is not a real office document")).json()["files"][0]
    assert entry["markdown_error"].startswith(f"could not convert to Markdown ({error}")


def test_replacing_a_document_never_keeps_a_stale_companion(user_client, user, thread_of):
    tid = thread_of()
    post(user_client, tid, up("r.pdf", one_page_pdf("first version")))
    d = upload_dir(user, tid)
    assert "first version" in (d / "r.pdf.md").read_text()
    post(user_client, tid, up("r.pdf", one_page_pdf("second version")))
    assert "second version" in (d / "r.pdf.md").read_text()
    broken = post(user_client, tid, up("r.pdf", b"%PDF-1.4 broken")).json()["files"][0]
    assert "markdown_error" in broken and names_in(d) == ["r.pdf"]


def test_a_directory_or_a_linked_uploads_dir_is_refused_and_nothing_is_written(user_client, user, thread_of, tmp_path):
    tid = thread_of()
    d = upload_dir(user, tid)
    (d / "taken").mkdir(parents=True)
    response = post(user_client, tid, up("fine.txt", b"1"), up("taken", b"2"))
    assert response.status_code == 409 and "a directory named 'taken'" in response.json()["detail"]
    assert names_in(d) == ["taken"]
    other = thread_of()
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    linked = upload_dir(user, other)
    linked.parent.mkdir(parents=True, exist_ok=True)
    linked.symlink_to(outside, target_is_directory=True)
    response = post(user_client, other, up("x.txt", b"1"))
    assert response.status_code == 403 and "symbolic link" in response.json()["detail"]
    assert list(outside.iterdir()) == []
    (outside / "host.txt").write_text("host")
    assert user_client.get(f"/api/threads/{other}/uploads/list").status_code == 403
    assert user_client.delete(f"/api/threads/{other}/uploads/host.txt").status_code == 403
    assert (outside / "host.txt").read_text() == "host"
