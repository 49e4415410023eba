"""File operations of a sandbox, on both providers: normal use and escape attempts."""

from __future__ import annotations

import os
import threading

import pytest

from harness.sandbox import SandboxError, SandboxPathError
from harness.config import thread_user_data_dir
from tests.harness.sandbox.conftest import make_provider


def test_write_then_read_text_and_bytes(sandbox):
    assert sandbox.write_file("/mnt/user-data/workspace/notes/a.md", "héllo\n") == len("héllo\n".encode())
    assert sandbox.read_file("/mnt/user-data/workspace/notes/a.md") == "héllo\n"
    sandbox.write_file("/mnt/user-data/outputs/blob.bin", b"\x00\x01\x02")
    assert sandbox.read_bytes("/mnt/user-data/outputs/blob.bin") == b"\x00\x01\x02"
    host = thread_user_data_dir("alice", "thread-1") / "workspace" / "notes" / "a.md"
    assert host.read_text() == "héllo\n"


def test_relative_paths_are_workspace_relative(sandbox):
    sandbox.write_file("rel.txt", "x")
    assert sandbox.read_file("/mnt/user-data/workspace/rel.txt") == "x"


def test_append_and_overwrite(sandbox):
    p = "/mnt/user-data/workspace/log.txt"
    sandbox.write_file(p, "one\n")
    sandbox.write_file(p, "two\n", append=True)
    assert sandbox.read_file(p) == "one\ntwo\n"
    sandbox.write_file(p, "three\n")
    assert sandbox.read_file(p) == "three\n"


def test_binary_file_read_as_text_is_a_clear_error(sandbox):
    sandbox.write_file("/mnt/user-data/workspace/img.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    with pytest.raises(SandboxError, match="binary file"):
        sandbox.read_file("/mnt/user-data/workspace/img.png")


def test_str_replace_single_all_missing_and_ambiguous(sandbox):
    p = "/mnt/user-data/workspace/code.py"
    sandbox.write_file(p, "a = 1\nb = 1\n")
    with pytest.raises(SandboxError, match="appears 2 times"):
        sandbox.str_replace(p, "= 1", "= 2")
    assert sandbox.read_file(p) == "a = 1\nb = 1\n"
    with pytest.raises(SandboxError, match="not found"):
        sandbox.str_replace(p, "c = 1", "c = 2")
    assert sandbox.str_replace(p, "a = 1", "a = 3") == 1
    assert sandbox.str_replace(p, "= 1", "= 9", replace_all=True) == 1
    assert sandbox.read_file(p) == "a = 3\nb = 9\n"
    assert sandbox.str_replace(p, "= ", "=", replace_all=True) == 2
    assert sandbox.read_file(p) == "a =3\nb =9\n"


def test_list_dir_is_two_levels(sandbox):
    for path in ("a/b/c/deep.txt", "a/top.txt", "z.txt"):
        sandbox.write_file(path, "x")
    entries, truncated = sandbox.list_dir("/mnt/user-data/workspace")
    paths = [e.path for e in entries]
    assert "/mnt/user-data/workspace/a" in paths
    assert "/mnt/user-data/workspace/a/b" in paths
    assert "/mnt/user-data/workspace/a/top.txt" in paths
    assert "/mnt/user-data/workspace/a/b/c" not in paths
    assert not truncated


def test_glob_and_grep(sandbox):
    sandbox.write_file("src/app.py", "def main():\n    return 1\n")
    sandbox.write_file("src/lib/util.py", "def helper():\n    pass\n# TODO tidy\n")
    sandbox.write_file("README.md", "TODO: write docs\n")
    sandbox.write_file("data.bin", b"\x00TODO\x00")
    matches, _ = sandbox.glob("**/*.py")
    assert matches == ["/mnt/user-data/workspace/src/app.py", "/mnt/user-data/workspace/src/lib/util.py"]
    assert sandbox.glob("*.{md,txt}")[0] == ["/mnt/user-data/workspace/README.md"]
    assert sandbox.glob("/mnt/user-data/workspace/src/*.py")[0] == ["/mnt/user-data/workspace/src/app.py"]
    found, _ = sandbox.grep("TODO")
    assert [(m.path, m.line_number) for m in found] == [
        ("/mnt/user-data/workspace/README.md", 1),
        ("/mnt/user-data/workspace/src/lib/util.py", 3),
    ]
    py_only, _ = sandbox.grep("todo", glob="*.py", ignore_case=True)
    assert [m.path for m in py_only] == ["/mnt/user-data/workspace/src/lib/util.py"]
    one_file, _ = sandbox.grep("def", path="/mnt/user-data/workspace/src/app.py")
    assert [m.line for m in one_file] == ["def main():"]
    bounded, truncated = sandbox.grep("e", max_results=2)
    assert len(bounded) == 2 and truncated


def test_skills_are_readable_not_writable(sandbox):
    assert "Demo skill" in sandbox.read_file("/mnt/skills/public/demo/SKILL.md")
    with pytest.raises(SandboxPathError, match="read-only"):
        sandbox.write_file("/mnt/skills/public/demo/SKILL.md", "overwritten")
    assert "Demo skill" in sandbox.read_file("/mnt/skills/public/demo/SKILL.md")


ESCAPES = [
    "/mnt/user-data/workspace/../../../../etc/passwd",
    "../../etc/passwd",
    "/etc/passwd",
    "/mnt/user-data/workspace/a\x00b",
    "/mnt/user-data/workspace/" + "n" * 300,
    "/mnt/skills/../user-data/../../etc/passwd",
    "~/.ssh/id_rsa",
    "",
]


@pytest.mark.parametrize("path", ESCAPES)
def test_escapes_are_refused_for_every_operation(sandbox, path, home):
    before = sorted(p for p in home.rglob("*"))
    operations = [
        lambda: sandbox.read_file(path),
        lambda: sandbox.read_bytes(path),
        lambda: sandbox.write_file(path, "pwned"),
        lambda: sandbox.str_replace(path, "root", "pwned"),
        lambda: sandbox.list_dir(path),
        lambda: sandbox.glob("*", path),
        lambda: sandbox.grep("root", path),
    ]
    for op in operations:
        with pytest.raises(SandboxPathError) as info:
            op()
        assert str(info.value).startswith("Error: ")
    assert sorted(p for p in home.rglob("*")) == before


def test_other_thread_is_out_of_reach(provider):
    other = provider.get(provider.acquire("bob", "secret-thread"))
    other.write_file("/mnt/user-data/workspace/private.txt", "bob's data")
    mine = provider.get(provider.acquire("alice", "thread-1"))
    host_path = str(thread_user_data_dir("bob", "secret-thread") / "workspace" / "private.txt")
    with pytest.raises(SandboxPathError):
        mine.read_file(host_path)
    with pytest.raises(SandboxPathError):
        mine.read_file("/mnt/user-data/workspace/../../../../bob/threads/secret-thread/user-data/workspace/private.txt")


def test_symlink_pointing_out_is_refused(sandbox, tmp_path):
    secret = tmp_path / "host-secret.txt"
    secret.write_text("server secret")
    workspace = sandbox.fs.host_dir("workspace")
    os.symlink(secret, workspace / "link.txt")
    os.symlink(tmp_path, workspace / "linkdir")
    for op in (
        lambda: sandbox.read_file("/mnt/user-data/workspace/link.txt"),
        lambda: sandbox.write_file("/mnt/user-data/workspace/link.txt", "pwned"),
        lambda: sandbox.read_file("/mnt/user-data/workspace/linkdir/host-secret.txt"),
        lambda: sandbox.write_file("/mnt/user-data/workspace/linkdir/new.txt", "pwned"),
        lambda: sandbox.list_dir("/mnt/user-data/workspace/linkdir"),
        lambda: sandbox.grep("secret", "/mnt/user-data/workspace/linkdir"),
    ):
        with pytest.raises(SandboxPathError, match="symbolic link"):
            op()
    assert secret.read_text() == "server secret"
    assert not (tmp_path / "new.txt").exists()
    # A tree search never follows the links either.
    found, _ = sandbox.grep("server secret")
    assert found == []
    # glob names the link itself but does not descend through linkdir to the host.
    assert sandbox.glob("**/*.txt")[0] == ["/mnt/user-data/workspace/link.txt"]


def test_symlink_inside_the_thread_is_followed(sandbox):
    sandbox.write_file("/mnt/user-data/outputs/report.md", "report")
    os.symlink("../outputs/report.md", sandbox.fs.host_dir("workspace") / "report-link.md")
    assert sandbox.read_file("/mnt/user-data/workspace/report-link.md") == "report"


def test_same_path_writes_are_serialized_and_other_sandboxes_do_not_wait(provider):
    mine = provider.get(provider.acquire("alice", "thread-1"))
    other = provider.get(provider.acquire("alice", "thread-2"))
    path = "/mnt/user-data/workspace/shared.txt"
    finished = threading.Event()

    def write():
        mine.write_file(path, "second")
        finished.set()

    with mine.path_lock(path):
        worker = threading.Thread(target=write)
        worker.start()
        assert not finished.wait(0.3), "a write to the same path ran while the lock was held"
        # Same virtual path in another sandbox: not blocked.
        other.write_file(path, "independent")
        mine_host = mine.fs.host_dir("workspace") / "shared.txt"
        assert not mine_host.exists()
    assert finished.wait(5)
    worker.join(5)
    assert mine.read_file(path) == "second"
    assert other.read_file(path) == "independent"


def test_parallel_str_replace_loses_no_update(sandbox):
    path = "/mnt/user-data/workspace/tally.txt"
    names = [f"w{i}" for i in range(16)]
    sandbox.write_file(path, "".join(f"[{n}:todo]\n" for n in names))
    errors = []

    def edit(name):
        try:
            sandbox.str_replace(path, f"[{name}:todo]", f"[{name}:done]")
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=edit, args=(n,)) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert errors == []
    assert sandbox.read_file(path) == "".join(f"[{n}:done]\n" for n in names)


def test_links_made_by_commands_work_for_file_tools(sandbox):
    """An absolute link made by a command (virtual inside bwrap, host path on local) is followed."""
    result = sandbox.execute_command(
        "mkdir -p /mnt/user-data/outputs/run1 && echo result > /mnt/user-data/outputs/run1/out.txt && "
        "ln -s /mnt/user-data/outputs/run1 latest && ln -s /mnt/skills/public/demo skill"
    )
    assert result.exit_code == 0, result.output.render()
    assert sandbox.read_file("/mnt/user-data/workspace/latest/out.txt") == "result\n"
    sandbox.write_file("/mnt/user-data/workspace/latest/more.txt", "more")
    assert (sandbox.fs.host_dir("outputs") / "run1" / "more.txt").read_text() == "more"
    assert "Demo skill" in sandbox.read_file("/mnt/user-data/workspace/skill/SKILL.md")
    with pytest.raises(SandboxPathError, match="read-only"):
        sandbox.write_file("/mnt/user-data/workspace/skill/SKILL.md", "pwned")


def test_relative_link_climbing_out_and_link_loops_are_refused(sandbox):
    workspace = sandbox.fs.host_dir("workspace")
    os.symlink("../../../../../../../../etc/passwd", workspace / "climb")
    os.symlink("../../../", workspace / "updir")
    os.symlink("loop-b", workspace / "loop-a")
    os.symlink("loop-a", workspace / "loop-b")
    with pytest.raises(SandboxPathError, match="outside the sandbox"):
        sandbox.read_file("/mnt/user-data/workspace/climb")
    with pytest.raises(SandboxPathError, match="outside the sandbox"):
        sandbox.list_dir("/mnt/user-data/workspace/updir")
    with pytest.raises(SandboxPathError, match="too many levels"):
        sandbox.read_file("/mnt/user-data/workspace/loop-a")


def test_files_still_being_uploaded_are_invisible_to_listing_and_search(sandbox):
    uploads = thread_user_data_dir("alice", "thread-1") / "uploads"
    uploads.mkdir(parents=True, exist_ok=True)
    (uploads / "report.txt").write_text("needle here\n")
    (uploads / ".upload-0123456789abcdef.part").write_text("needle half-written\n")
    names = [e.path for e in sandbox.list_dir("/mnt/user-data/uploads")[0]]
    assert names == ["/mnt/user-data/uploads/report.txt"]
    assert sandbox.glob("**/*", "/mnt/user-data/uploads")[0] == ["/mnt/user-data/uploads/report.txt"]
    hits, _ = sandbox.grep("needle", "/mnt/user-data/uploads")
    assert [h.path for h in hits] == ["/mnt/user-data/uploads/report.txt"]


def test_extra_mounts_reach_the_file_tools_and_commands(provider_kind, home, skills_dir, tmp_path):
    reference, scratch = tmp_path / "reference", tmp_path / "scratch"
    reference.mkdir()
    scratch.mkdir()
    (reference / "facts.txt").write_text("the sky is blue\n")
    provider = make_provider(provider_kind, skills_dir, bash_command_timeout=20, mounts=[
        {"host_path": str(reference), "container_path": "/data/reference", "read_only": True},
        {"host_path": str(scratch), "container_path": "/data/scratch"}])
    sandbox = provider.get(provider.acquire("alice", "thread-mounts"))
    assert sandbox.read_file("/data/reference/facts.txt") == "the sky is blue\n"
    with pytest.raises(SandboxPathError, match="read-only mount"):
        sandbox.write_file("/data/reference/new.txt", "no")
    sandbox.write_file("/data/scratch/from-tool.txt", "written by write_file\n")
    result = sandbox.execute_command("cat /data/reference/facts.txt /data/scratch/from-tool.txt; echo cmd > /data/scratch/c.txt")
    assert "the sky is blue\nwritten by write_file\n" in result.output.render()
    assert sandbox.read_file("/data/scratch/c.txt") == "cmd\n"
    with pytest.raises(SandboxPathError):
        sandbox.read_file("/data/elsewhere.txt")
