"""End to end: the real lead agent writes and presents a file; the run's archive holds it, and
an upload made before the run is what the agent was told about."""

from __future__ import annotations

import io
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.runs.models import Run
from harness.testing import call, tool_reply
from tests.apps.threads.conftest import read_body

pytestmark = [pytest.mark.django_db(transaction=True)]


def test_presented_output_lands_in_the_run_archive(user_client, scripted_agent, settings, thread_of):
    settings.DEERFLOW_AGENT_FACTORY = "tests.support.agents:make_scripted_lead_agent"
    seen = {}

    def present(messages):
        seen["context"] = "\n".join(str(getattr(m, "content", m)) for m in messages)
        return tool_reply(call("present_files", filepaths=["/mnt/user-data/outputs/summary.md"]))

    scripted_agent(
        tool_reply(call("write_file", description="write the summary", path="/mnt/user-data/outputs/summary.md", content="# Summary\nok\n")),
        present,
        "Here is your summary.",
    )
    tid = thread_of()
    upload = user_client.post(f"/api/threads/{tid}/uploads", {"files": [SimpleUploadedFile("brief.txt", b"the brief")]}, format="multipart")
    assert upload.status_code == 200
    response = user_client.post(f"/api/threads/{tid}/runs/wait", {"assistant_id": "lead_agent",
                                "input": {"messages": [{"role": "user", "content": "summarise"}]}}, format="json")
    read_body(response)
    run = Run.objects.get(thread_id=tid)
    assert run.status == "success", run.error
    assert "/mnt/user-data/uploads/brief.txt" in seen["context"]
    archive = user_client.get(f"/api/threads/{tid}/runs/{run.pk}/artifacts/archive")
    assert archive.status_code == 200
    with zipfile.ZipFile(io.BytesIO(read_body(archive))) as zf:
        assert zf.namelist() == ["summary.md"] and zf.read("summary.md") == b"# Summary\nok\n"
    served = user_client.get(f"/api/threads/{tid}/artifacts/mnt/user-data/outputs/summary.md")
    assert read_body(served) == b"# Summary\nok\n"
