"""Artifacts: safe path resolution, streaming with byte ranges, forced attachments, the
hash-guarded text edit, and a run's artifact ZIP."""

from __future__ import annotations

import hashlib
import io
import os
import threading
import zipfile
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from apps.runs.journal import JournalEvent, journal_append
from apps.runs.models import Run
from apps.chat import artifacts
from apps.threads.models import Thread
from harness.config import thread_user_data_dir
from tests.apps.threads.conftest import read_body

pytestmark = pytest.mark.django_db


def put_file(user, tid, rel: str, data: bytes | str):
    path = thread_user_data_dir(user.pk, tid) / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def url(tid, rel):
    return f"/api/threads/{tid}/artifacts/mnt/user-data/{rel}"


@pytest.fixture
def tid(thread_of):
    return thread_of()


# --- reading ---------------------------------------------------------------------------------


def test_get_streams_the_file_inline_with_its_type(user_client, user, tid):
    put_file(user, tid, "outputs/hello.txt", "hello world")
    response = user_client.get(url(tid, "outputs/hello.txt"))
    assert response.status_code == 200
    assert response.streaming and read_body(response) == b"hello world"
    assert response["Content-Type"].startswith("text/plain")
    assert response["Content-Length"] == "11" and response["Accept-Ranges"] == "bytes"
    assert response["Content-Disposition"].startswith("inline;") and response["X-Content-Type-Options"] == "nosniff"
    png = put_file(user, tid, "workspace/chart.png", b"\x89PNG\r\n\x1a\n" + b"0" * 100)
    response = user_client.get(url(tid, "workspace/chart.png"))
    assert response["Content-Type"] == "image/png" and read_body(response) == png.read_bytes()
    put_file(user, tid, "uploads/r\u00e9sum\u00e9 final.pdf", b"%PDF")
    response = user_client.get(url(tid, "uploads/r%C3%A9sum%C3%A9%20final.pdf"))
    assert response.status_code == 200 and response["Content-Type"] == "application/pdf"
    assert "filename*=UTF-8''r%C3%A9sum%C3%A9%20final.pdf" in response["Content-Disposition"]


@pytest.mark.parametrize(("header", "status", "body", "content_range"), [
    ("bytes=0-4", 206, b"hello", "bytes 0-4/11"),
    ("bytes=6-", 206, b"world", "bytes 6-10/11"),
    ("bytes=-5", 206, b"world", "bytes 6-10/11"),
    ("bytes=-500", 206, b"hello world", "bytes 0-10/11"),
    ("bytes=4-100", 206, b"o world", "bytes 4-10/11"),
    ("bytes=10-10", 206, b"d", "bytes 10-10/11"),
    ("bytes=11-", 416, None, "bytes */11"),
    ("bytes=500-600", 416, None, "bytes */11"),
    ("bytes=-0", 416, None, "bytes */11"),
    ("bytes=0-1,4-5", 200, b"hello world", None),  # multi-range: the whole file
    ("bytes=5-2", 200, b"hello world", None),  # invalid spec: ignored
    ("bytes=abc", 200, b"hello world", None),
    ("items=0-4", 200, b"hello world", None),
    ("bytes=-", 200, b"hello world", None),
])
def test_range_requests(user_client, user, tid, header, status, body, content_range):
    put_file(user, tid, "outputs/hello.txt", "hello world")
    response = user_client.get(url(tid, "outputs/hello.txt"), HTTP_RANGE=header)
    assert response.status_code == status
    if status == 416:
        assert response.json()["detail"] and response["Content-Range"] == content_range
        return
    assert read_body(response) == body and response["Content-Length"] == str(len(body))
    assert response.get("Content-Range") == content_range


def test_ranges_on_an_empty_file(user_client, user, tid):
    put_file(user, tid, "outputs/empty.txt", b"")
    whole = user_client.get(url(tid, "outputs/empty.txt"))
    assert whole.status_code == 200 and read_body(whole) == b"" and whole["Content-Length"] == "0"
    assert user_client.get(url(tid, "outputs/empty.txt"), HTTP_RANGE="bytes=0-").status_code == 416
    assert user_client.get(url(tid, "outputs/empty.txt"), HTTP_RANGE="bytes=-1").status_code == 416


def test_a_large_file_streams_in_chunks_and_ranges_seek(user_client, user, tid):
    data = os.urandom(3 * 1024 * 1024 + 17)
    put_file(user, tid, "outputs/video.mp4", data)
    response = user_client.get(url(tid, "outputs/video.mp4"))
    assert response["Content-Type"] == "video/mp4"
    chunks = []

    async def collect():
        async for chunk in response.streaming_content:
            chunks.append(chunk)

    from asgiref.sync import async_to_sync

    async_to_sync(collect)()
    assert b"".join(chunks) == data and len(chunks) > 1 and max(map(len, chunks)) <= 256 * 1024
    middle = user_client.get(url(tid, "outputs/video.mp4"), HTTP_RANGE="bytes=2000000-2000099")
    assert middle.status_code == 206 and read_body(middle) == data[2000000:2000100]


@pytest.mark.parametrize(("name", "content_type"), [("page.html", "text/html"), ("page.xhtml", "application/xhtml+xml"), ("logo.svg", "image/svg+xml")])
def test_active_content_is_always_an_attachment(user_client, user, tid, name, content_type):
    put_file(user, tid, f"outputs/{name}", "<svg onload=alert(1)></svg>")
    for query in ("", "?download=false", "?download=0"):
        response = user_client.get(url(tid, f"outputs/{name}") + query)
        assert response.status_code == 200 and response["Content-Type"].startswith(content_type)
        assert response["Content-Disposition"].startswith("attachment;"), query
        assert "sandbox" in response["Content-Security-Policy"]


def test_download_true_forces_an_attachment(user_client, user, tid):
    put_file(user, tid, "outputs/notes.md", "# notes")
    assert user_client.get(url(tid, "outputs/notes.md")).get("Content-Disposition").startswith("inline;")
    for value in ("true", "1", "TRUE"):
        response = user_client.get(url(tid, "outputs/notes.md") + f"?download={value}")
        assert response["Content-Disposition"] == "attachment; filename=\"notes.md\"; filename*=UTF-8''notes.md"


@pytest.mark.parametrize(("path", "status", "detail"), [
    ("mnt/user-data/outputs/../../../etc/passwd", 422, "'..'"),
    ("mnt/user-data/outputs/%2e%2e/%2e%2e/secret.txt", 422, "'..'"),
    ("mnt/user-data/outputs/%252e%252e/secret.txt", 404, "No artifact"),
    ("mnt/user-data/outputs/./secret.txt", 422, "'.'"),
    ("/etc/passwd", 422, "not absolute host paths"),
    ("etc/passwd", 422, "live under /mnt/user-data/"),
    ("mnt/user-data", 422, "live under /mnt/user-data/"),
    ("mnt/skills/public/x/SKILL.md", 422, "live under /mnt/user-data/"),
    ("mnt/user-data/outputs/a%00b.txt", 422, "NUL"),
    ("mnt/user-data/outputs//secret.txt", 422, "empty segments"),
    ("mnt/user-data/outputs/a%5Cb.txt", 422, "separator"),
    ("mnt/user-data/outputs/" + "x" * 256, 422, "longer than 255 bytes"),
    ("mnt/user-data/outputs/missing.txt", 404, "No artifact"),
    ("mnt/user-data/outputs/.upload-0a1b.part", 404, "No artifact"),
    ("mnt/user-data/outputs", 422, "is a directory"),
])
def test_bad_paths_get_a_precise_4xx(user_client, user, tid, path, status, detail):
    put_file(user, tid, "outputs/.upload-0a1b.part", "half an upload")
    put_file(user, tid, "secret.txt", "thread-level file")
    response = user_client.get(f"/api/threads/{tid}/artifacts/{path}")
    assert response.status_code == status, response.content
    assert detail in response.json()["detail"]


def test_symlinks_pointing_out_are_refused_and_inside_ones_work(user_client, user, tid, tmp_path):
    secret = tmp_path / "host-secret.txt"
    secret.write_text("do not serve")
    outputs = put_file(user, tid, "outputs/real.txt", "inside").parent
    (outputs / "escape.txt").symlink_to(secret)
    (outputs / "escape-dir").symlink_to(tmp_path, target_is_directory=True)
    (outputs / "alias.txt").symlink_to(outputs / "real.txt")
    # A link made inside the bubblewrap sandbox holds a virtual target.
    (outputs / "virtual-alias.txt").symlink_to("/mnt/user-data/outputs/real.txt")
    for name in ("escape.txt", "escape-dir/host-secret.txt"):
        response = user_client.get(url(tid, f"outputs/{name}"))
        assert response.status_code == 403 and "outside" in response.json()["detail"]
    for name in ("alias.txt", "virtual-alias.txt"):
        response = user_client.get(url(tid, f"outputs/{name}"))
        assert response.status_code == 200 and read_body(response) == b"inside"


def test_another_users_thread_is_404(user, other_user, tid):
    put_file(user, tid, "outputs/mine.txt", "secret")
    bob = APIClient()
    bob.force_authenticate(other_user)
    assert bob.get(url(tid, "outputs/mine.txt")).status_code == 404
    sha = hashlib.sha256(b"secret").hexdigest()
    assert bob.put(url(tid, "outputs/mine.txt"), {"content": "x", "expected_sha256": sha}, format="json").status_code == 404
    assert (thread_user_data_dir(user.pk, tid) / "outputs/mine.txt").read_text() == "secret"


# --- editing ---------------------------------------------------------------------------------


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_put_replaces_an_output_text_file_when_the_hash_matches(user_client, user, tid):
    path = put_file(user, tid, "outputs/report.md", "# Draft\n")
    os.chmod(path, 0o640)
    response = user_client.put(url(tid, "outputs/report.md"), {"content": "# Final \u2713\n", "expected_sha256": sha("# Draft\n")}, format="json")
    assert response.status_code == 200, response.content
    assert response.json() == {"path": "/mnt/user-data/outputs/report.md", "sha256": sha("# Final \u2713\n"), "size": len("# Final \u2713\n".encode())}
    assert path.read_text() == "# Final \u2713\n" and (path.stat().st_mode & 0o777) == 0o640
    assert sorted(os.listdir(path.parent)) == ["report.md"]
    # The old hash is now stale.
    stale = user_client.put(url(tid, "outputs/report.md"), {"content": "again", "expected_sha256": sha("# Draft\n")}, format="json")
    assert stale.status_code == 409 and sha("# Final \u2713\n") in stale.json()["detail"]
    assert path.read_text() == "# Final \u2713\n"


def test_put_conflicts_while_a_run_is_active(user_client, user, tid):
    path = put_file(user, tid, "outputs/report.md", "v1")
    # Leased, as a live process holds it: a run without a lease is one recovery may take.
    Run.objects.create(thread_id=tid, owner=user, status=Run.Status.RUNNING, lease_owner="elsewhere:1",
                       lease_expires_at=timezone.now() + timedelta(seconds=60))
    response = user_client.put(url(tid, "outputs/report.md"), {"content": "v2", "expected_sha256": sha("v1")}, format="json")
    assert response.status_code == 409 and "active run" in response.json()["detail"]
    assert path.read_text() == "v1"


@pytest.mark.parametrize(("rel", "body", "status", "detail"), [
    ("uploads/data.txt", {"content": "x", "expected_sha256": sha("data")}, 403, "only files under /mnt/user-data/outputs"),
    ("workspace/data.txt", {"content": "x", "expected_sha256": sha("data")}, 403, "only files under"),
    ("outputs/image.bin", {"content": "x", "expected_sha256": hashlib.sha256(b"\xff\xfe\x00binary").hexdigest()}, 415, "not a UTF-8 text file"),
    ("outputs/missing.md", {"content": "x", "expected_sha256": sha("data")}, 404, "No artifact"),
    ("outputs/data.txt", {"content": "x", "expected_sha256": "abc"}, 422, "64-hex-digit"),
    ("outputs/data.txt", {"content": 5, "expected_sha256": sha("data")}, 422, "content must be a string"),
    ("outputs/data.txt", {"expected_sha256": sha("data")}, 422, "content must be a string"),
    ("outputs/data.txt", {"content": "x" * 101, "expected_sha256": sha("data")}, 413, "limited to 100 bytes"),
    ("outputs/../outputs/data.txt", {"content": "x", "expected_sha256": sha("data")}, 422, "'..'"),
])
def test_put_bad_requests(user_client, user, tid, uploads_config, rel, body, status, detail):
    uploads_config(artifact_edit_max_bytes=100)
    for sub in ("uploads", "workspace", "outputs"):
        put_file(user, tid, f"{sub}/data.txt", "data")
    put_file(user, tid, "outputs/image.bin", b"\xff\xfe\x00binary")
    response = user_client.put(url(tid, rel), body, format="json")
    assert response.status_code == status, response.content
    assert detail in response.json()["detail"]
    for sub in ("uploads", "workspace", "outputs"):
        assert (thread_user_data_dir(user.pk, tid) / sub / "data.txt").read_text() == "data"
    assert not [n for n in os.listdir(thread_user_data_dir(user.pk, tid) / "outputs") if n.startswith(".")]


def test_put_needs_a_json_object(user_client, user, tid):
    put_file(user, tid, "outputs/a.txt", "a")
    assert user_client.put(url(tid, "outputs/a.txt"), ["content"], format="json").status_code == 422
    assert user_client.put(url(tid, "outputs/a.txt"), "content=x", content_type="application/x-www-form-urlencoded").status_code == 415


# The edits reserve the thread (a row each tries to insert) from threads of their own, which
# need the test's rows committed.
@pytest.mark.django_db(transaction=True)
def test_concurrent_edits_from_the_same_version_let_exactly_one_win(user, tid):
    path = put_file(user, tid, "outputs/shared.md", "base")
    thread = Thread.objects.get(pk=tid)
    barrier = threading.Barrier(6)
    outcomes = []

    def edit(i):
        barrier.wait()
        try:
            artifacts.artifact_replace(thread=thread, path="mnt/user-data/outputs/shared.md", content=f"edit {i}", expected_sha256=sha("base"))
            outcomes.append(("ok", i))
        except artifacts.Conflict:
            outcomes.append(("conflict", i))

    workers = [threading.Thread(target=edit, args=(i,)) for i in range(6)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    winners = [i for kind, i in outcomes if kind == "ok"]
    assert len(winners) == 1 and len(outcomes) == 6
    assert path.read_text() == f"edit {winners[0]}"


# --- the run archive -------------------------------------------------------------------------


def presented_run(user, tid, *calls, status=Run.Status.SUCCESS):
    """A finished run whose journal holds ``present_files`` calls: (paths, succeeded) pairs."""
    run = Run.objects.create(thread_id=tid, owner=user, status=status)
    events = []
    for n, (paths, ok) in enumerate(calls):
        call_id = f"call-{n}"
        events.append(JournalEvent("llm.ai.response", "message", {"type": "ai", "content": "", "tool_calls": [
            {"name": "present_files", "args": {"filepaths": paths}, "id": call_id}]}, {}))
        text = ("Presented to the user: " + ", ".join(paths)) if ok else "Error: nothing was presented."
        events.append(JournalEvent("llm.tool.result", "message", {"type": "tool", "name": "present_files", "tool_call_id": call_id, "content": text}, {}))
    journal_append(thread_id=tid, run_id=str(run.pk), events=events)
    return run


def archive_url(tid, run):
    return f"/api/threads/{tid}/runs/{run.pk}/artifacts/archive"


def test_archive_holds_the_files_the_run_presented(user_client, user, tid):
    put_file(user, tid, "outputs/report.md", "# Report")
    put_file(user, tid, "outputs/charts/a.png", b"\x89PNG data")
    put_file(user, tid, "outputs/not-presented.txt", "x")
    put_file(user, tid, "outputs/failed.txt", "x")
    earlier = presented_run(user, tid, (["/mnt/user-data/outputs/not-presented.txt"], True))
    run = presented_run(user, tid, (["/mnt/user-data/outputs/report.md"], True), (["/mnt/user-data/outputs/failed.txt"], False),
                        (["/mnt/user-data/outputs/charts/a.png", "/mnt/user-data/outputs/report.md"], True))
    response = user_client.get(archive_url(tid, run))
    assert response.status_code == 200, getattr(response, "content", b"")
    assert response["Content-Type"] == "application/zip" and response["X-Archive-Files"] == "2"
    assert response["Content-Disposition"].startswith(f'attachment; filename="run-{run.pk}-artifacts.zip"')
    body = read_body(response)
    assert response["Content-Length"] == str(len(body))
    with zipfile.ZipFile(io.BytesIO(body)) as archive:
        assert archive.namelist() == ["report.md", "charts/a.png"]
        assert archive.read("report.md") == b"# Report" and archive.read("charts/a.png") == b"\x89PNG data"
    assert earlier.pk != run.pk


def test_archive_bounds_are_413(user_client, user, tid, uploads_config):
    for name in ("a.txt", "b.txt", "c.txt"):
        put_file(user, tid, f"outputs/{name}", "x" * 40)
    run = presented_run(user, tid, ([f"/mnt/user-data/outputs/{n}" for n in ("a.txt", "b.txt", "c.txt")], True))
    uploads_config(archive_max_files=2)
    response = user_client.get(archive_url(tid, run))
    assert response.status_code == 413 and "more than 2 files" in response.json()["detail"]
    uploads_config(archive_max_bytes=100)
    response = user_client.get(archive_url(tid, run))
    assert response.status_code == 413 and "more than 100 bytes" in response.json()["detail"]
    uploads_config(archive_max_files=3, archive_max_bytes=120)
    assert user_client.get(archive_url(tid, run)).status_code == 200


def test_archive_skips_what_left_outputs_and_404s_when_nothing_is_left(user_client, user, tid, tmp_path):
    outside = tmp_path / "host.txt"
    outside.write_text("host file")
    outputs = put_file(user, tid, "outputs/gone.txt", "x").parent
    (outputs / "gone.txt").unlink()
    (outputs / "link.txt").symlink_to(outside)
    run = presented_run(user, tid, (["/mnt/user-data/outputs/gone.txt", "/mnt/user-data/outputs/link.txt", "/mnt/user-data/uploads/u.txt"], True))
    response = user_client.get(archive_url(tid, run))
    assert response.status_code == 404 and "presented no files" in response.json()["detail"]
    quiet = presented_run(user, tid)
    assert user_client.get(archive_url(tid, quiet)).status_code == 404


def test_archive_of_another_users_run_is_404(user, other_user, tid):
    put_file(user, tid, "outputs/r.md", "x")
    run = presented_run(user, tid, (["/mnt/user-data/outputs/r.md"], True))
    bob = APIClient()
    bob.force_authenticate(other_user)
    assert bob.get(archive_url(tid, run)).status_code == 404
    assert bob.get(f"/api/threads/{tid}/runs/not-a-uuid/artifacts/archive").status_code == 404


def test_files_inside_a_skill_archive_are_served(user_client, user, tid):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as bundle:
        bundle.writestr("SKILL.md", "---\nname: demo\n---\nDo the thing.")
        bundle.writestr("scripts/run.py", "print('hi')")
        bundle.writestr("page.html", "<script>alert(1)</script>")
        bundle.writestr("docs/", "")
    put_file(user, tid, "outputs/demo.skill", buf.getvalue())
    response = user_client.get(url(tid, "outputs/demo.skill/SKILL.md"))
    assert response.status_code == 200 and read_body(response) == b"---\nname: demo\n---\nDo the thing."
    assert response["Content-Type"].startswith("text/markdown")
    ranged = user_client.get(url(tid, "outputs/demo.skill/scripts/run.py"), HTTP_RANGE="bytes=0-4")
    assert ranged.status_code == 206 and read_body(ranged) == b"print"
    assert user_client.get(url(tid, "outputs/demo.skill/page.html"))["Content-Disposition"].startswith("attachment;")
    assert user_client.get(url(tid, "outputs/demo.skill/missing.md")).status_code == 404
    assert user_client.get(url(tid, "outputs/demo.skill/docs")).status_code == 404
    assert user_client.get(url(tid, "outputs/demo.skill/../secret")).status_code == 422
    put_file(user, tid, "outputs/broken.skill", b"not a zip")
    broken = user_client.get(url(tid, "outputs/broken.skill/SKILL.md"))
    assert broken.status_code == 422 and "not a readable skill archive" in broken.json()["detail"]
    # The archive itself still downloads as a file.
    assert read_body(user_client.get(url(tid, "outputs/demo.skill"))) == buf.getvalue()
    # Reading inside is fine; writing inside would replace the whole archive, so it is refused.
    edit = user_client.put(url(tid, "outputs/demo.skill/SKILL.md"), {"content": "x", "expected_sha256": sha("x")}, format="json")
    assert edit.status_code == 403 and "inside a .skill archive" in edit.json()["detail"]
    assert read_body(user_client.get(url(tid, "outputs/demo.skill"))) == buf.getvalue()


def test_file_responses_may_be_framed_by_our_own_pages_only(user_client, user, tid):
    """The chat's viewer frames PDFs: SAMEORIGIN here, while active content keeps its sandbox."""
    put_file(user, tid, "outputs/report.pdf", b"%PDF-1.4")
    put_file(user, tid, "outputs/page.html", "<script>alert(1)</script>")
    pdf = user_client.get(url(tid, "outputs/report.pdf"))
    assert pdf.status_code == 200 and pdf["X-Frame-Options"] == "SAMEORIGIN"
    assert pdf["Content-Security-Policy"] == "frame-ancestors 'self'"
    html = user_client.get(url(tid, "outputs/page.html"))
    assert html["X-Frame-Options"] == "SAMEORIGIN"
    assert html["Content-Security-Policy"].startswith("sandbox;") and "frame-ancestors 'self'" in html["Content-Security-Policy"]
    # every other page still refuses to be framed
    assert user_client.get(f"/api/threads/{tid}")["X-Frame-Options"] == "DENY"
