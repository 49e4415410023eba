"""The terminal console as a person at an 80×24 terminal uses it: `deerflow` runs in a tmux
pane against a live server (the scripted model behind it) with a personal access token; the
test types keys and reads the pane, as a user's eyes would.

Every wait polls the pane until what a user would see is there, with a deadline; none sleeps
a fixed time.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import httpx
import pytest

from harness.testing import Reply, call, loopback_config_text, tool_reply
from tests.support.live import ROOT, start_live_server

pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux (scripts/bootstrap.sh test)")]

CONSOLE_YAML = """sandbox:
  use: local
  bash_command_timeout: 30
approvals:
  rules:
    - name: risky-shell
      tool: bash
      match: "rm "
      action: ask
"""
DEADLINE = 60
PROMPT = "▊  "  # the start of the prompt's line, inside its border
DOCS = ROOT / "docs" / "screenshots"  # the pane as text, shown in docs/terminal.md


class Pane:
    """One tmux server of the test's own (its own socket), one 80×24 pane running deerflow."""

    def __init__(self, workdir: Path, command: list[str], env: dict[str, str]) -> None:
        # A short path of its own: a unix socket's path must fit in 108 bytes, a test's tmp_path may not.
        self.socket_dir = tempfile.mkdtemp(prefix="deerflow-tmux-")
        self.socket = os.path.join(self.socket_dir, "s")
        # After deerflow exits the pane says how, then waits on `cat` until the server goes.
        script = '"$@"; echo "[deerflow exited with status $?]"; exec cat'
        args = ["new-session", "-d", "-x", "80", "-y", "24", "-s", "console", "-c", str(workdir)]
        for key, value in env.items():
            args += ["-e", f"{key}={value}"]
        self.tmux(*args, "sh", "-c", script, "sh", *command)

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-S", self.socket, *args], check=True, capture_output=True, text=True,
                              env={**os.environ, "LANG": "C.UTF-8"}).stdout

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "console", *keys)

    def type(self, text: str) -> None:
        self.tmux("send-keys", "-t", "console", "-l", text)

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "console")

    def wait_for(self, *texts: str, gone: str | None = None) -> str:
        deadline = time.monotonic() + DEADLINE
        while True:
            screen = self.screen()
            if all(t in screen for t in texts) and (gone is None or gone not in screen):
                return screen
            if time.monotonic() > deadline:
                pytest.fail(f"the pane never showed {texts!r}" + (f" without {gone!r}" if gone else "") + f":\n{screen}")
            time.sleep(0.1)

    def settled(self) -> str:
        """The screen once two looks in a row agree: no frame caught half drawn."""
        deadline = time.monotonic() + DEADLINE
        last = self.screen()
        while True:
            time.sleep(0.2)
            screen = self.screen()
            if screen == last or time.monotonic() > deadline:
                return screen
            last = screen

    def close(self) -> None:
        subprocess.run(["tmux", "-S", self.socket, "kill-server"], capture_output=True)
        shutil.rmtree(self.socket_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def live(tmp_path_factory, model_server):
    config = loopback_config_text(model_server.base_url, timeout=30, extra_yaml=CONSOLE_YAML)
    server = start_live_server(tmp_path_factory.mktemp("console-home"), config_text=config)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def token(live):
    return live.create_user_token("console-user")


@pytest.fixture
def pane(tmp_path, live, token):
    deerflow = ROOT / ".venv" / "bin" / "deerflow"
    assert deerflow.exists(), "scripts/bootstrap.sh installs .venv/bin/deerflow"
    env = {"DEERFLOW_TOKEN": token, "TERM": "xterm-256color", "LANG": "C.UTF-8", "TEXTUAL_ANIMATIONS": "none"}
    pane = Pane(tmp_path, [str(deerflow), "--server", live.url], env)
    yield pane
    pane.close()


def runs_of(live, token, thread_id):
    with httpx.Client(base_url=f"{live.url}/api", headers={"Authorization": f"Bearer {token}"}, timeout=30) as api:
        return api.get(f"/threads/{thread_id}/runs").json()


def test_a_conversation_in_the_terminal(pane, live, token, script, model_server, tmp_path):
    script("Hello from **DeerFlow**.\n\n- streamed in pieces\n- rendered as Markdown",
           tool_reply(call("ask_clarification", question="Which city should the trip start from?", options=["Paris", "Berlin"])),
           "Starting from Berlin.",
           tool_reply(call("bash", command="rm -f /mnt/user-data/outputs/old.txt && echo tidied", description="tidy the outputs")),
           "All tidy.",
           tool_reply(call("bash", command="rm -rf /mnt/user-data/workspace")),
           "Fine, I left the workspace alone.",
           Reply(text="This answer never arrives.", delay=120),
           Reply(text="Nor does this one.", delay=120))

    pane.wait_for("DeerFlow │ new thread", "Connected to")

    # Send; the answer streams in and is rendered as Markdown.
    pane.type("Say hello")
    pane.keys("Enter")
    screen = pane.wait_for("Hello from DeerFlow.", "• rendered as Markdown", "Done.")
    assert "**" not in screen

    # A clarification: the question and its options, answered with a number.
    pane.type("Plan a trip")
    pane.keys("Enter")
    pane.wait_for("The agent asks", "Which city should the trip start from?", "2 Berlin")
    pane.type("2")
    pane.keys("Enter")
    pane.wait_for("› Berlin", "Starting from Berlin.", gone="The agent asks")

    # A /skill completes with Tab.
    pane.type("/deep-re")
    pane.wait_for("\n /deep-research\n")  # the status line lists the matches
    pane.keys("Tab")
    pane.type("now")
    pane.wait_for(f"{PROMPT}/deep-research now")
    pane.keys("C-u")
    pane.wait_for(f"{PROMPT}Message DeerFlow")

    # An upload from a path (relative to where deerflow was started).
    (tmp_path / "notes.txt").write_text("trip notes\n")
    pane.type("/upload notes.txt")
    pane.wait_for(f"{PROMPT}/upload notes.txt")
    pane.keys("Enter")
    pane.wait_for("Uploaded notes.txt → /mnt/user-data/uploads/notes.txt")

    # The model picker lists the server's models; the pick shows in the top bar.
    pane.keys("C-o")
    pane.wait_for("Model  Enter picks", "loopback")
    pane.keys("Enter")
    pane.wait_for("│ loopback │", gone="Enter picks")

    # An approval gate: the call waits for a key, then runs; its card is folded to one line.
    pane.type("Tidy the outputs")
    pane.keys("Enter")
    pane.wait_for("Approval needed", "bash", "rule risky-shell", "y approve")
    (DOCS / "terminal-console-approval.txt").write_text(pane.settled())
    pane.keys("y")
    screen = pane.wait_for("✓ bash", "All tidy.", gone="Approval needed")
    assert "exit code" not in screen  # the result ("tidied\n[exit code: 0]") stays folded

    # Denied with a reason typed in the prompt; the model is told it.
    pane.type("Clean the workspace")
    pane.keys("Enter")
    pane.wait_for("Approval needed", "rm -rf /mnt/user-data/workspace")
    pane.keys("n")
    pane.wait_for(f"{PROMPT}Why deny?")
    pane.type("keep my drafts")
    pane.keys("Enter")
    pane.wait_for("› denied: keep my drafts", "✗ bash", "Fine, I left the workspace alone.")
    assert "keep my drafts" in str(model_server.requests[-1]["messages"][-1])

    # Ctrl-C cancels the run, on the server too, and the console stays.
    pane.type("Write a long essay")
    pane.keys("Enter")
    pane.wait_for("Working… Ctrl-C cancels")
    pane.keys("C-c")
    pane.wait_for("Cancelled.")
    thread_id = next(t for t in _thread_ids(live, token))
    deadline = time.monotonic() + DEADLINE
    while runs_of(live, token, thread_id)[0]["status"] != "interrupted":
        assert time.monotonic() < deadline, runs_of(live, token, thread_id)[0]
        time.sleep(0.1)
    (DOCS / "terminal-console.txt").write_text(pane.settled())

    # Ctrl-C as soon as the turn shows, mostly before the server has named the run: the run
    # is cancelled when it is.
    runs_before = len(runs_of(live, token, thread_id))
    pane.type("Write another")
    pane.keys("Enter")
    pane.wait_for("Working… Ctrl-C cancels")
    pane.keys("C-c")
    screen = pane.wait_for("› Write another", "Ready.")
    assert "Cancelled." in screen.split("› Write another")[1] and "server error" not in screen
    deadline = time.monotonic() + DEADLINE
    while len(runs := runs_of(live, token, thread_id)) == runs_before or runs[0]["status"] != "interrupted":
        assert time.monotonic() < deadline, runs[0]
        time.sleep(0.1)

    # The thread can be left and resumed from the list.
    pane.keys("C-n")
    pane.wait_for("DeerFlow │ new thread", gone="All tidy.")
    pane.keys("C-t")
    pane.wait_for("Threads", "Enter picks")
    pane.keys("Enter")
    pane.wait_for("All tidy.", "Resumed thread")

    pane.keys("C-q")
    pane.wait_for("[deerflow exited with status 0]")


def _thread_ids(live, token):
    with httpx.Client(base_url=f"{live.url}/api", headers={"Authorization": f"Bearer {token}"}, timeout=30) as api:
        return [t["thread_id"] for t in api.post("/threads/search", json={"limit": 5, "sort_by": "updated_at", "sort_order": "desc"}).json()]
