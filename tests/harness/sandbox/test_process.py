"""run_command itself: the output the command wrote is all kept however late the reader runs,
and a background process holding or filling the pipe cannot hold the call."""

from __future__ import annotations

import os
import signal
import threading
import uuid

from harness.sandbox import process
from harness.sandbox.process import run_command
from tests.harness.sandbox.conftest import LateReader
from tests.support.waiting import HANG_SECONDS, wait_until


def _run(argv, **kwargs):
    kwargs.setdefault("timeout", HANG_SECONDS)
    return run_command(argv, cwd="/", env={"PATH": os.environ["PATH"]}, max_chars=100_000, **kwargs)


def test_output_the_reader_has_not_taken_yet_is_kept(monkeypatch):
    monkeypatch.setattr(process, "OutputCapture", LateReader)
    result = _run(["/bin/sh", "-c", "echo first; echo last"])
    assert result.exit_code == 0
    assert result.output.render() == "first\nlast\n"


def _marker() -> str:
    return f"{uuid.uuid4().int % 10**6}.{uuid.uuid4().int % 10**6}"


def _kill_all(marker: str) -> None:
    for pid in _pids_with(marker):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_a_background_child_holding_the_pipe_does_not_hold_the_call_or_lose_the_output():
    marker = _marker()
    try:
        result = _run(["/bin/sh", "-c", f"sleep {marker} & echo done"])
        assert result.exit_code == 0 and result.output.render() == "done\n"
    finally:
        _kill_all(f"sleep {marker}")


def test_a_background_child_that_never_stops_writing_does_not_hold_the_call():
    marker = _marker()
    outcome = {}
    worker = threading.Thread(target=lambda: outcome.update(result=_run(
        ["/bin/sh", "-c", f"(while :; do echo {marker}; done) & echo started"])))
    try:
        worker.start()
        worker.join(HANG_SECONDS)
        result = outcome["result"]
        assert result.exit_code == 0 and result.output.render().startswith("started\n")
    finally:
        _kill_all(f"echo {marker}")


def test_a_cancel_kills_a_grandchild_holding_the_output_and_returns():
    """The timeout kills the same way (test_execute); a cancel lets the test choose the moment."""
    marker = _marker()
    started = threading.Event()

    def watch():
        # The watch hook runs while the command runs: it sees the grandchild up before the
        # timeout is allowed to pass, so the test never depends on how fast the shell starts.
        if not started.is_set() and _pids_with(f"sleep {marker}"):
            started.set()
        return None

    cancel = threading.Event()
    outcome = {}
    worker = threading.Thread(target=lambda: outcome.update(result=_run(
        ["/bin/sh", "-c", f"echo begun; (sleep {marker}; echo never) & wait"], cancel=cancel, watch=watch,
        watch_interval=0.05)))
    worker.start()
    wait_until(started.is_set, "the grandchild to start")
    cancel.set()
    worker.join(HANG_SECONDS)
    result = outcome["result"]
    assert result.cancelled and result.exit_code is None
    assert result.output.render() == "begun\n"
    wait_until(lambda: not _pids_with(f"sleep {marker}"), "the grandchild to be gone")


def _pids_with(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{entry}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in cmdline and state != "Z":
            found.append(int(entry))
    return found
