"""Run one shell command with the semantics the bash tool promises the model.

- stdin is /dev/null, so a command waiting for input gets EOF instead of hanging.
- The command leads its own process group; on the wall-clock timeout the whole group is
  SIGKILLed, so children it spawned do not outlive the call.
- An optional ``watch`` callable is polled while the command runs (the disk-quota watcher);
  when it returns a message the group is killed the same way and the message is kept.
- Output (stdout and stderr interleaved, as in a terminal) is drained by a thread into a
  bounded buffer. The call returns when the command's own process exits, not when the pipe
  reaches EOF: a backgrounded server keeps the pipe's write end open forever, and waiting
  for EOF would block the turn until the timeout. What the command wrote before it exited
  is still all kept: after the exit the reader goes on until EOF or until the pipe has been
  empty for a moment, counted from when the reader itself looks (a fixed wait counted by the
  caller lost the end of the output whenever a busy machine did not schedule the reader in
  time). A background process that never stops writing is cut off after a bounded while.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from harness.observability import metrics
from harness.runtime.cpu_affinity import original_cpus_for_children
from harness.sandbox.output import BoundedText, OutputCapture

# After the command exited: the pipe counts as drained once it has been empty this long while
# the reader watched it. Only reached when a background child holds the pipe open; otherwise
# EOF ends the wait at once.
_DRAIN_GRACE_SECONDS = 0.1
# ... and a background process that keeps writing is cut off after this long.
_DRAIN_LIMIT_SECONDS = 2.0


@dataclass(frozen=True)
class CommandResult:
    exit_code: int | None  # None when the command was killed (timeout or cancel)
    output: BoundedText
    timed_out: bool
    timeout: float
    duration: float
    cancelled: bool = False
    # Why a limit stopped or hampered the command, worded for the model (quota, memory, processes).
    limit_message: str | None = None


def _drain(fd: int, wake_fd: int, capture: OutputCapture, caught_up: threading.Event) -> None:
    """Feed the pipe into ``capture``; set ``caught_up`` once what the command wrote is in.

    ``wake_fd`` becomes readable when the command has exited. From then on the pipe is read
    until EOF, until it stays empty for the grace period, or until the drain limit. After
    that the reader keeps draining, discarding, so a background process writing to an
    inherited pipe never blocks on a full buffer.
    """
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    poller.register(wake_fd, select.POLLIN)
    exited_at: float | None = None
    try:
        while True:
            if caught_up.is_set():
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                continue
            timeout_ms = None if exited_at is None else int(_DRAIN_GRACE_SECONDS * 1000)
            ready = {ready_fd for ready_fd, _ in poller.poll(timeout_ms)}
            if wake_fd in ready:
                poller.unregister(wake_fd)
                exited_at = time.monotonic()
            if fd in ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                capture.feed(chunk)
            elif exited_at is not None and wake_fd not in ready:
                caught_up.set()  # empty for the whole grace period after the exit
            if exited_at is not None and time.monotonic() - exited_at > _DRAIN_LIMIT_SECONDS:
                caught_up.set()
    except OSError:
        pass
    finally:
        caught_up.set()
        os.close(fd)
        os.close(wake_fd)


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


Watch = Callable[[], "str | None"]


def run_command(argv: Sequence[str], *, cwd: str, env: dict[str, str], timeout: float, max_chars: int,
                cancel: threading.Event | None = None, preexec: Callable[[], None] | None = None,
                watch: Watch | None = None, watch_interval: float = 0.2) -> CommandResult:
    """Run ``argv``; ``cancel`` (set from another thread) kills it like a timeout does.

    ``preexec`` runs in the child before exec (resource limits). ``watch`` is called about
    every ``watch_interval`` seconds, less often when one call takes long, so a big tree
    to measure cannot keep a core busy.
    """
    started = time.monotonic()
    read_fd, write_fd = os.pipe()
    try:
        with original_cpus_for_children():
            proc = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=write_fd,
                stderr=write_fd,
                cwd=cwd,
                env=env,
                start_new_session=True,
                close_fds=True,
                preexec_fn=preexec,
            )
    except BaseException:
        os.close(read_fd)
        os.close(write_fd)
        raise
    # Our copy of the write end must go, or the reader would never see EOF.
    os.close(write_fd)
    capture = OutputCapture(max_chars)
    caught_up = threading.Event()
    wake_read, wake_write = os.pipe()
    reader = threading.Thread(target=_drain, args=(read_fd, wake_read, capture, caught_up),
                              name=f"sandbox-drain-{proc.pid}", daemon=True)
    reader.start()

    # The watchdog kills the group on timeout or cancel. It only ever signals while the
    # command's leader is an unreaped zombie at worst (see waitid below), so the group id
    # cannot have been recycled for some unrelated process.
    finished = threading.Event()
    lock = threading.Lock()
    reason: list[str] = []

    def fire(why: str) -> None:
        with lock:
            if not finished.is_set() and not reason:
                reason.append(why)
                _kill_group(proc.pid)

    watch_message: list[str] = []
    next_watch = [started + watch_interval]

    def watchdog() -> None:
        deadline = started + timeout
        while not finished.is_set():
            if cancel is not None and cancel.is_set():
                fire("cancelled")
                return
            now = time.monotonic()
            remaining = deadline - now
            if remaining <= 0:
                fire("timeout")
                return
            if watch is not None and now >= next_watch[0]:
                message = watch()
                spent = time.monotonic() - now
                if message:
                    watch_message.append(message)
                    fire("limit")
                    return
                next_watch[0] = time.monotonic() + max(watch_interval, 2 * spent)
            wait = remaining if cancel is None else min(remaining, 0.05)
            if watch is not None:
                wait = min(wait, max(0.0, next_watch[0] - time.monotonic()))
            finished.wait(wait)

    guard = threading.Thread(target=watchdog, name=f"sandbox-watchdog-{proc.pid}", daemon=True)
    guard.start()
    try:
        # Wait for the exit without reaping, so the pid (and group id) stays ours until
        # the watchdog can no longer fire. A plain wait(timeout) would poll with sleeps
        # and add milliseconds to every short command.
        os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
    except ChildProcessError:
        pass
    except BaseException:
        # Interrupted (e.g. KeyboardInterrupt): never leave the group running.
        fire("cancelled")
        proc.wait()
        raise
    finally:
        with lock:
            finished.set()
        # The command is gone: tell the reader, which decides when the pipe is drained, since
        # only it knows whether it has been scheduled to look (see the module docstring).
        try:
            os.write(wake_write, b"x")
        except BrokenPipeError:
            pass  # the reader already saw EOF and left
        os.close(wake_write)
    proc.wait()
    guard.join()
    caught_up.wait()
    output = capture.close()
    killed = bool(reason)
    duration = time.monotonic() - started
    metrics.sandbox_command(duration, reason[0] if reason else ("ok" if proc.returncode == 0 else "error"))
    return CommandResult(
        exit_code=None if killed else proc.returncode,
        output=output,
        timed_out=reason == ["timeout"],
        timeout=timeout,
        duration=duration,
        cancelled=reason == ["cancelled"],
        limit_message=watch_message[0] if watch_message else None,
    )
