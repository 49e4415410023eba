"""Run one shell command with the semantics the bash tool promises the model.

- stdin is /dev/null, so a command waiting for input gets EOF instead of hanging.
- The command leads its own process group; on the wall-clock timeout the whole group is
  SIGKILLed, so children it spawned do not outlive the call.
- Output (stdout and stderr interleaved, as in a terminal) is drained by a thread into a
  bounded buffer. The call returns when the command's own process exits, not when the pipe
  reaches EOF: a backgrounded server keeps the pipe's write end open forever, and waiting
  for EOF would block the turn until the timeout.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from harness.sandbox.output import BoundedText, OutputCapture

# How long to keep reading after the command exited, for output still in the pipe. Only
# reached when a background child holds the pipe open; otherwise EOF ends the wait at once.
_DRAIN_GRACE_SECONDS = 0.1


@dataclass(frozen=True)
class CommandResult:
    exit_code: int | None  # None when the command was killed on timeout
    output: BoundedText
    timed_out: bool
    timeout: float
    duration: float


def _drain(fd: int, capture: OutputCapture) -> None:
    # Keeps reading even after the capture is frozen, so a background process writing to
    # an inherited pipe never blocks on a full buffer.
    try:
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            capture.feed(chunk)
    except OSError:
        pass
    finally:
        os.close(fd)


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_command(argv: Sequence[str], *, cwd: str, env: dict[str, str], timeout: float, max_chars: int) -> CommandResult:
    started = time.monotonic()
    read_fd, write_fd = os.pipe()
    try:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=write_fd,
            stderr=write_fd,
            cwd=cwd,
            env=env,
            start_new_session=True,
            close_fds=True,
        )
    except BaseException:
        os.close(read_fd)
        os.close(write_fd)
        raise
    # Our copy of the write end must go, or the reader would never see EOF.
    os.close(write_fd)
    capture = OutputCapture(max_chars)
    reader = threading.Thread(target=_drain, args=(read_fd, capture), name=f"sandbox-drain-{proc.pid}", daemon=True)
    reader.start()
    timed_out = False
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc.pid)
        proc.wait()
    except BaseException:
        # Interrupted (e.g. the run was cancelled): never leave the group running.
        _kill_group(proc.pid)
        proc.wait()
        raise
    reader.join(_DRAIN_GRACE_SECONDS)
    output = capture.close()
    return CommandResult(
        exit_code=None if timed_out else proc.returncode,
        output=output,
        timed_out=timed_out,
        timeout=timeout,
        duration=time.monotonic() - started,
    )
