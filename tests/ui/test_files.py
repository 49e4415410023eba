"""Files in the chat: upload (picker and drag and drop) with the files on the message, the
size check before sending, and opening an artifact the agent presented."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from harness.testing.script import Reply, call, tool_reply
from tests.ui.chat_page import send

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_upload_a_file_and_see_it_on_the_message(page, script, model_server):
    script(Reply(text="I see your notes."))
    page.goto("/")
    name = "<img src=x onerror=window.__pwned=1>notes.txt"
    page.locator("#file-input").set_input_files([{"name": name, "mimeType": "text/plain", "buffer": b"remember the milk\n"}])
    chip = page.locator(".attachment")
    expect(chip).to_have_class(re.compile(r"\bdone\b"))
    expect(page).to_have_url(re.compile(r"/c/[0-9a-f-]{36}/$"))  # the upload made the thread
    send(page, "Read my notes")
    message = page.locator("article.msg.user")
    expect(message.locator(".file-chip")).to_contain_text("notes.txt")
    assert message.locator("img").count() == 0 and page.evaluate("window.__pwned") is None
    expect(page.locator("article.msg.assistant").last).to_contain_text("I see your notes.")
    expect(page.locator(".attachment")).to_have_count(0)
    # the agent was told about the file
    stored_name = message.locator(".file-chip").get_attribute("title").rsplit("/", 1)[-1]
    assert stored_name.endswith("notes.txt")
    assert stored_name in str(model_server.requests[0]["messages"])
    # the files panel lists it, and the message keeps it after a reload
    page.get_by_role("button", name="Files", exact=True).click()
    expect(page.locator("#upload-list")).to_contain_text(stored_name)
    page.reload()
    expect(page.locator("article.msg.user .file-chip")).to_contain_text(stored_name)


def test_drop_a_file_on_the_chat(page):
    page.goto("/")
    page.evaluate("""() => {
        const dt = new DataTransfer();
        dt.items.add(new File(["a,b\\n1,2\\n"], "table.csv", {type: "text/csv"}));
        const chat = document.querySelector('.chat');
        for (const type of ['dragenter', 'dragover', 'drop']) {
            chat.dispatchEvent(new DragEvent(type, {dataTransfer: dt, bubbles: true, cancelable: true}));
        }
    }""")
    expect(page.locator(".attachment")).to_contain_text("table.csv")
    expect(page.locator(".attachment")).to_have_class(re.compile(r"\bdone\b"))


def test_a_too_large_file_is_refused_before_sending(page, model_server):
    page.goto("/")
    page.locator("#file-input").set_input_files([{"name": "big.bin", "mimeType": "application/octet-stream", "buffer": b"x" * 300_000}])
    chip = page.locator(".attachment")
    expect(chip).to_have_class(re.compile(r"\berror\b"))
    expect(chip).to_contain_text("too large")
    chip.get_by_role("button", name="Remove big.bin").click()
    expect(page.locator(".attachment")).to_have_count(0)


def test_open_a_presented_artifact(page, script, doc_shot):
    script(
        tool_reply(call("write_file", description="Write the report", path="/mnt/user-data/outputs/report.md",
                        content="# Quarterly report\n\nAll **good**.\n\n<script>window.__pwned=1</script>\n")),
        tool_reply(call("present_files", filepaths=["/mnt/user-data/outputs/report.md"])),
        Reply(text="Here is the report."),
    )
    page.goto("/")
    send(page, "Write a report")
    expect(page.locator("article.msg.assistant").last).to_contain_text("Here is the report.")
    expect(page.locator("#files-count")).to_have_text("1")
    page.get_by_role("button", name="Open report.md").click()
    preview = page.get_by_role("complementary", name="report.md")
    expect(preview.get_by_role("heading", name="Quarterly report")).to_be_visible()
    expect(preview.locator(".viewer-body strong")).to_have_text("good")
    assert page.evaluate("window.__pwned") is None
    doc_shot(page, "artifact-preview")
    href = preview.get_by_role("link", name="Download").get_attribute("href")
    response = page.request.get(href)
    assert response.status == 200
    assert b"Quarterly report" in response.body()
    assert "attachment" in response.headers.get("content-disposition", "")


def _thread_dir(live, page) -> Path:
    thread_id = re.search(r"/c/([0-9a-f-]{36})/", page.url).group(1)
    found = list(Path(live.env["DEER_FLOW_HOME"]).glob(f"users/*/threads/{thread_id}/user-data"))
    assert len(found) == 1
    return found[0]


def _storage_panel_shows_usage_and_a_full_quota(page, live, doc_shot, shot_name):
    page.goto("/")
    page.locator("#file-input").set_input_files([{"name": "data.csv", "mimeType": "text/csv", "buffer": b"a,b\n" * 20_000}])
    expect(page.locator(".attachment")).to_have_class(re.compile(r"\bdone\b"))
    page.get_by_role("button", name="Files", exact=True).click()
    storage = page.get_by_role("region", name="Storage")
    expect(storage).to_be_visible()
    # The default quotas: 1 GiB per chat, 10 GiB over all of a user's chats.
    expect(storage.locator("#storage-thread-text")).to_have_text(re.compile(r"^\d+(\.\d)? KB of 1\.0 GB$"))
    expect(storage.locator("#storage-user-text")).to_have_text(re.compile(r" of 10\.0 GB$"))
    expect(storage.get_by_role("status")).to_be_hidden()
    # Fill this chat's quota on disk, as a command would, and open the panel again.
    filler = _thread_dir(live, page) / "workspace" / "filler.bin"
    filler.parent.mkdir(exist_ok=True)
    with open(filler, "wb") as fh:
        os.posix_fallocate(fh.fileno(), 0, 1024 * 1024 * 1024 + 1024 * 1024)
    try:
        page.get_by_role("button", name="Close files").click()
        page.get_by_role("button", name="Files", exact=True).click()
        expect(storage.locator("#storage-thread-text")).to_have_text(re.compile(r"^1\.0 GB of 1\.0 GB$"))
        expect(storage.get_by_role("status")).to_contain_text("Storage is full (this chat)")
        box = storage.bounding_box()
        assert box["width"] <= page.viewport_size["width"]
        doc_shot(page, shot_name)
    finally:
        filler.unlink()


def test_files_panel_shows_storage_quota(page, live, doc_shot):
    _storage_panel_shows_usage_and_a_full_quota(page, live, doc_shot, "files-storage-quota")


def test_files_panel_shows_storage_quota_on_a_phone(phone, live, doc_shot):
    _storage_panel_shows_usage_and_a_full_quota(phone, live, doc_shot, "files-storage-quota-phone")
