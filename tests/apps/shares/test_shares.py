"""Shared chats: a read-only link to a snapshot of a thread, tested for isolation as the issue
asks — an anonymous visitor, another user, a revoked link, a deleted thread — and for files,
which a link reaches only when the owner included them and only those the snapshot names."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from rest_framework.test import APIClient

from apps.shares.models import Share
from harness.config import thread_user_data_dir
from harness.testing.script import call, tool_reply
from tests.apps.runs.test_runs_api import new_thread, wait_for_status
from tests.apps.threads.test_thread_actions import ask

pytestmark = [pytest.mark.django_db(transaction=True)]

TABLE_ANSWER = "Here is **the plan**:\n\n| day | city |\n|---|---|\n| 1 | Lisbon |\n"


def share(client, tid, **body):
    response = client.post(f"/api/threads/{tid}/shares", body, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def path_of(url: str) -> str:
    return "/" + url.split("://", 1)[1].split("/", 1)[1]


def visit(client, url_or_path: str):
    return client.get(path_of(url_or_path) if "://" in url_or_path else url_or_path)


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_anyone_with_the_link_reads_the_snapshot_and_nothing_said_later(user_client, user, other_user, scripted_agent):
    scripted_agent(TABLE_ANSWER, "A secret later answer.")
    tid = new_thread(user_client)
    ask(user_client, tid, "Plan my trip")
    other_tid = new_thread(user_client)
    user_client.patch(f"/api/threads/{other_tid}", {"metadata": {"title": "My private other chat"}}, format="json")
    made = share(user_client, tid)
    assert made["active"] and made["message_count"] == 2 and made["include_files"] is False
    ask(user_client, tid, "A later question")

    for viewer in (Client(), signed_in(other_user), signed_in(user)):
        page = visit(viewer, made["url"])
        assert page.status_code == 200
        html = page.content.decode()
        assert "Plan my trip" in html and "the plan" in html
        assert "A later question" not in html and "A secret later answer" not in html
        assert '<meta name="robots" content="noindex' in html and page["X-Robots-Tag"].startswith("noindex")
        assert page["Referrer-Policy"] == "no-referrer" and page["Cache-Control"] == "no-store"
        # Read-only, and nothing of the owner's account: no composer, no list of chats.
        assert 'id="input"' not in html and "My private other chat" not in html and 'id="thread-list"' not in html

    # Another user can neither list, revoke, nor reach the thread behind the link.
    bob = APIClient()
    bob.force_authenticate(other_user)
    assert bob.get("/api/shares").json() == {"shares": []}
    assert bob.delete(f"/api/shares/{made['id']}").status_code == 404
    assert bob.get(f"/api/threads/{tid}").status_code == 404
    assert bob.post(f"/api/threads/{tid}/shares", {}, format="json").status_code == 404
    assert signed_in(other_user).get(f"/c/{tid}/").status_code == 404
    assert visit(Client(), made["url"]).status_code == 200  # the failed revoke changed nothing

    # The owner's list has it, with the same link.
    [listed] = user_client.get("/api/shares").json()["shares"]
    assert listed["url"] == made["url"] and listed["title"] == made["title"]
    assert user_client.get(f"/api/shares?thread_id={other_tid}").json() == {"shares": []}


def test_a_revoked_link_and_a_deleted_chat_open_nothing(user_client, scripted_agent):
    scripted_agent("First answer.", "Second answer.")
    tid = new_thread(user_client)
    ask(user_client, tid, "hello")
    revoked, kept = share(user_client, tid), share(user_client, tid)
    assert revoked["url"] != kept["url"]

    assert user_client.delete(f"/api/shares/{revoked['id']}").status_code == 204
    assert user_client.delete(f"/api/shares/{revoked['id']}").status_code == 204  # again: still revoked
    gone = visit(Client(), revoked["url"])
    assert gone.status_code == 404 and "hello" not in gone.content.decode() and "not available" in gone.content.decode()
    assert visit(Client(), kept["url"]).status_code == 200
    states = {s["id"]: (s["active"], s["revoked_at"] is not None) for s in user_client.get("/api/shares").json()["shares"]}
    assert states == {revoked["id"]: (False, True), kept["id"]: (True, False)}

    assert user_client.delete(f"/api/threads/{tid}").status_code in (200, 204)
    assert visit(Client(), kept["url"]).status_code == 404
    assert user_client.get("/api/shares").json() == {"shares": []}

    # A made-up token, or one of another shape, is the same page.
    assert Client().get("/s/" + "A" * 43 + "/").status_code == 404
    assert Client().get("/s/not%20a%20token/").status_code == 404


def test_files_are_reachable_only_when_included_and_only_those_the_snapshot_names(user, user_client, scripted_agent):
    tid = new_thread(user_client)
    outputs = thread_user_data_dir(user.pk, tid) / "outputs"
    outputs.mkdir(parents=True, exist_ok=True)
    (outputs / "report.md").write_text("# The report\n")
    (outputs / "private.txt").write_text("not named in the chat")
    (outputs / "page.html").write_text("<script>alert(1)</script>")
    upload = user_client.post(f"/api/threads/{tid}/uploads", {"files": [SimpleUploadedFile("notes.txt", b"my notes")]}, format="multipart")
    assert upload.status_code in (200, 201), upload.content
    entry = upload.json()["files"][0]
    scripted_agent(tool_reply(call("present_files", filepaths=["/mnt/user-data/outputs/report.md", "/mnt/user-data/outputs/page.html"])),
                   "Here is the report.")
    run = user_client.post(f"/api/threads/{tid}/runs", {"input": {"messages": [{
        "role": "user", "content": "Write the report", "additional_kwargs": {"files": [
            {"filename": entry["filename"], "path": entry["path"], "size": entry["size"]}]}}]}}, format="json")
    assert run.status_code == 200, run.content
    assert wait_for_status(run.json()["run_id"], {"success"}).status == "success"

    without, with_files = share(user_client, tid), share(user_client, tid, include_files=True)
    assert without["file_count"] == with_files["file_count"] == 3
    files = {
        "/mnt/user-data/uploads/notes.txt": b"my notes",
        "/mnt/user-data/outputs/report.md": b"# The report\n",
    }
    anon = Client()
    page = visit(anon, without["url"]).content.decode()
    assert "notes.txt" in page and "/files/mnt/user-data" not in page  # named, not linked
    for path in [*files, "/mnt/user-data/outputs/page.html"]:
        assert visit(anon, path_of(without["url"]) + "files" + path).status_code == 404

    page = visit(anon, with_files["url"]).content.decode()
    assert "/files/mnt/user-data/uploads/notes.txt" in page and "/files/mnt/user-data/outputs/report.md" in page
    base = path_of(with_files["url"]) + "files"
    for path, body in files.items():
        response = visit(anon, base + path)
        assert response.status_code == 200 and b"".join(response.streaming_content) == body
    html = visit(anon, base + "/mnt/user-data/outputs/page.html")
    assert html.status_code == 200 and html["Content-Disposition"].startswith("attachment")
    assert "sandbox" in html["Content-Security-Policy"]
    # A file of the same chat that the snapshot does not name, and ways around the rule.
    for path in ("/mnt/user-data/outputs/private.txt", "/mnt/user-data/outputs/../outputs/private.txt",
                 "/mnt/user-data/uploads/../outputs/private.txt", "/etc/passwd"):
        assert visit(anon, base + path).status_code == 404, path
    # Revoked: its files go too.
    user_client.delete(f"/api/shares/{with_files['id']}")
    assert visit(anon, base + "/mnt/user-data/uploads/notes.txt").status_code == 404


def test_the_token_is_not_stored_and_bad_requests_are_refused(user_client, scripted_agent, other_user):
    tid = new_thread(user_client)
    empty = user_client.post(f"/api/threads/{tid}/shares", {}, format="json")
    assert empty.status_code == 422 and "no messages" in empty.json()["detail"]
    scripted_agent("An answer.")
    ask(user_client, tid, "q")
    assert user_client.post(f"/api/threads/{tid}/shares", {"include_files": "yes"}, format="json").status_code == 422
    assert user_client.post(f"/api/threads/{tid}/shares", {"public": True}, format="json").status_code == 422
    assert user_client.post(f"/api/threads/{tid}/shares", [1], format="json").status_code == 422
    assert user_client.delete("/api/shares/not-a-uuid").status_code == 404
    assert Share.objects.count() == 0
    made = share(user_client, tid)
    token = made["url"].rstrip("/").rsplit("/", 1)[1]
    row = Share.objects.values().get()
    assert len(token) == 43 and all(token not in str(value) for value in row.values())


def test_the_admin_lists_shares(user_client, scripted_agent, django_user_model):
    scripted_agent("An answer.")
    tid = new_thread(user_client)
    ask(user_client, tid, "A question for the admin list")
    made = share(user_client, tid)
    staff = django_user_model.objects.create_superuser("root", "root@example.com", "pw-root-123456")
    admin = signed_in(staff)
    listing = admin.get("/admin/shares/share/")
    assert listing.status_code == 200 and made["title"] in listing.content.decode() and "root" not in made["title"]
    assert admin.get(f"/admin/shares/share/{made['id']}/change/").status_code == 200
