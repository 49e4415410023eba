"""Thread directories exist for the run; new uploads are announced once."""

from pathlib import Path

from harness.agents.markers import is_hidden


async def test_thread_dirs_created_and_recorded(agent_factory):
    h = agent_factory(["ok"])
    await h.send("hi")
    data = h.state()["thread_data"]
    for key in ("workspace_path", "uploads_path", "outputs_path"):
        assert Path(data[key]).is_dir()
    assert data["outputs_path"] == str(h.outputs)


async def test_new_uploads_are_announced_once(agent_factory):
    h = agent_factory(["first", "second", "third"])
    await h.send("hi")  # creates the directories
    uploads = Path(h.state()["thread_data"]["uploads_path"])
    (uploads / "report.csv").write_text("a,b\n1,2\n")
    (uploads / ".upload-123.part").write_text("partial")
    await h.send("look at my file")
    sent = h.model.requests[1].messages
    notices = [m for m in sent if is_hidden(m, "uploads")]
    assert len(notices) == 1 and "/mnt/user-data/uploads/report.csv" in notices[0].content
    assert ".upload-123.part" not in notices[0].content
    assert [f["filename"] for f in h.state()["uploaded_files"]] == ["report.csv"]
    await h.send("thanks")
    assert sum(1 for m in h.model.requests[2].messages if is_hidden(m, "uploads")) == 1  # not announced again
