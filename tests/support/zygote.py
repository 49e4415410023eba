"""The live stacks' Python processes, forked from an interpreter that has imported their
heaviest libraries already.

A Daphne server, a Celery worker or a shell server of a live stack starts by importing about
2 s of CPU worth of third-party libraries (the OpenAI client, LangChain, LangGraph, Celery)
before Django is set up, and the suite starts more than a hundred of them. Here one process per
test process imports those once and forks for every start; the child then takes the stack's
environment, working directory, arguments and standard streams, and runs the module as
``python -m`` would: it imports Django, the product and Daphne (whose reactor is made at import,
so it is never shared) itself, as a process started from scratch does.

Only modules that do not depend on a stack's environment at import are loaded before the
fork: none reads a Django setting or a variable the stacks set (langsmith caches the variables
it looked up, and the child clears that cache). Beside the suite's own list that is the product's
``web_processes.PRELOAD``, which `make run`'s launcher imports before it forks its servers for
the same reason: harness/, the lead agent, Django's and Twisted's modules short of the reactor.
A Daphne server forked from here then starts on about 1.1 s of CPU instead of 2.6 s.

Protocol, over a SOCK_SEQPACKET socket (its fd is the zygote's argument): ``{"id", "module", "argv",
"env", "cwd"}`` with the child's stdin, stdout and stderr as SCM_RIGHTS fds in; ``{"id",
"pid"}`` back once forked, and ``{"exited": pid, "code": int}`` (Popen's returncode: minus the
signal for a signal) whenever a child ends.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import itertools
import json
import os
import runpy
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

from deerflow_site.server import web_processes

PRELOAD = (
    "openai", "httpx", "pydantic", "yaml",
    "langchain_core.tools", "langchain_core.tracers.event_stream", "langchain_openai",
    "langchain.agents", "langchain.agents.middleware", "langgraph.checkpoint.base", "celery.app",
)
_MAX_MESSAGE = 1 << 20


# --- the zygote ---------------------------------------------------------------------------

def _become(request: dict, fds: list[int], control: socket.socket, wake_r: int, wake_w: int) -> None:
    """In the forked child: turn into ``python -m <module> <argv>`` with the request's
    environment and streams. Never returns: the module's end ends the interpreter."""
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    control.close()
    os.close(wake_r)
    os.close(wake_w)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    for fd in fds:
        if fd > 2:
            os.close(fd)
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    with contextlib.suppress(ImportError, AttributeError):
        import langsmith.utils

        langsmith.utils.get_env_var.cache_clear()
    sys.stdin = open(0, closefd=False)
    sys.stdout = open(1, "w", closefd=False, buffering=1)
    sys.stderr = open(2, "w", closefd=False, buffering=1)
    sys.argv = [request["module"], *request["argv"]]
    sys.path[0] = request["cwd"]
    runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
    sys.exit(0)


def _preload() -> None:
    for name in (*PRELOAD, *web_processes.PRELOAD):
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    # The same conditions as the launcher's forks: a thread or a loop made here would be
    # every child's, half-copied.
    if threading.active_count() > 1 or any(name in sys.modules for name in web_processes.LOOP_MODULES):
        raise RuntimeError("the zygote's imports started a thread or made the reactor's loop")
    # Out of the collector's reach: the children then neither scan these objects nor, by
    # touching them, copy the pages they share.
    gc.collect()
    gc.freeze()


def _serve(control: socket.socket) -> None:
    _preload()
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    import select

    while True:
        ready, _, _ = select.select([control, wake_r], [], [])
        if wake_r in ready:
            os.read(wake_r, 512)
            while True:
                try:
                    pid, status = os.waitpid(-1, os.WNOHANG)
                except ChildProcessError:
                    break
                if pid == 0:
                    break
                control.send(json.dumps({"exited": pid, "code": os.waitstatus_to_exitcode(status)}).encode())
        if control in ready:
            try:
                message, fds, _, _ = socket.recv_fds(control, _MAX_MESSAGE, 3)
            except OSError:
                return
            if not message:
                return  # the test process is gone: its children are its own business
            request = json.loads(message)
            pid = os.fork()
            if pid == 0:
                _become(request, fds, control, wake_r, wake_w)
            for fd in fds:
                os.close(fd)
            control.send(json.dumps({"id": request["id"], "pid": pid}).encode())


# --- the test process's side --------------------------------------------------------------

class ForkedProcess:
    """What the suite uses of ``subprocess.Popen`` for a process the zygote forked."""

    def __init__(self, zygote: Zygote, pid: int, args: list[str], stdin=None, stdout=None):
        self._zygote, self.pid, self.args = zygote, pid, args
        self.stdin, self.stdout = stdin, stdout
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self._zygote.exit_code(self.pid, timeout=0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            code = self._zygote.exit_code(self.pid, timeout=timeout)
            if code is None:
                raise subprocess.TimeoutExpired(self.args, timeout)
            self.returncode = code
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class Zygote:
    def __init__(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "PYTEST", "DATABASE_URL"))}
        self._process = subprocess.Popen([sys.executable, "-m", "tests.support.zygote", str(theirs.fileno())],
                                         cwd=Path(__file__).resolve().parents[2], env=env, stdin=subprocess.DEVNULL,
                                         pass_fds=[theirs.fileno()])
        theirs.close()
        self._control = ours
        self._ids = itertools.count()
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._pids: dict[int, int] = {}
        self._exits: dict[int, int] = {}
        self._closed = False
        threading.Thread(target=self._read, name="zygote-reader", daemon=True).start()

    def _read(self) -> None:
        while True:
            try:
                message = self._control.recv(_MAX_MESSAGE)
            except OSError:
                message = b""
            with self._changed:
                if not message:
                    self._closed = True
                    self._changed.notify_all()
                    return
                reply = json.loads(message)
                if "exited" in reply:
                    self._exits[reply["exited"]] = reply["code"]
                else:
                    self._pids[reply["id"]] = reply["pid"]
                self._changed.notify_all()

    def spawn(self, module: str, argv: list[str], *, env: dict, cwd: Path | str, stdin: int, stdout: int, stderr: int) -> int:
        request_id = next(self._ids)
        message = json.dumps({"id": request_id, "module": module, "argv": argv, "env": env, "cwd": str(cwd)}).encode()
        socket.send_fds(self._control, [message], [stdin, stdout, stderr])
        with self._changed:
            if not self._changed.wait_for(lambda: request_id in self._pids or self._closed, timeout=60):
                raise RuntimeError("the zygote did not fork")
            if request_id not in self._pids:
                raise RuntimeError(f"the zygote exited (status {self._process.poll()})")
            return self._pids.pop(request_id)

    def exit_code(self, pid: int, timeout: float | None) -> int | None:
        with self._changed:
            self._changed.wait_for(lambda: pid in self._exits or self._closed, timeout=timeout)
            return self._exits.get(pid)


_zygote: Zygote | None = None
_zygote_lock = threading.Lock()


def _the_zygote() -> Zygote:
    global _zygote
    with _zygote_lock:
        if _zygote is None or _zygote._closed:
            _zygote = Zygote()
        return _zygote


def start_module(module: str, argv: list[str], *, env: dict, cwd: Path | str, stdout=None, stderr=None,
                 pipes: bool = False) -> ForkedProcess:
    """``Popen([sys.executable, "-m", module, *argv], env=env, cwd=cwd, ...)``, forked from the
    zygote. ``stdout`` is a file (``stderr`` a file or ``subprocess.STDOUT``); with
    ``pipes=True`` the process gets text pipes as stdin and stdout instead."""
    zygote = _the_zygote()
    opened: list[int] = []
    ends: dict = {}
    try:
        if pipes:
            child_in, ends["stdin"] = os.pipe()
            ends["stdout"], child_out = os.pipe()
            opened += [child_in, child_out]
        else:
            child_in = os.open(os.devnull, os.O_RDONLY)
            opened.append(child_in)
            child_out = stdout.fileno() if stdout is not None else os.dup(1)
            if stdout is None:
                opened.append(child_out)
        child_err = child_out if stderr in (None, subprocess.STDOUT) else stderr.fileno()
        pid = zygote.spawn(module, argv, env=env, cwd=cwd, stdin=child_in, stdout=child_out, stderr=child_err)
    finally:
        for fd in opened:
            os.close(fd)
    stdin = os.fdopen(ends["stdin"], "w") if pipes else None
    stdout_pipe = os.fdopen(ends["stdout"], "r") if pipes else None
    return ForkedProcess(zygote, pid, [sys.executable, "-m", module, *argv], stdin=stdin, stdout=stdout_pipe)


if __name__ == "__main__":
    _serve(socket.socket(fileno=int(sys.argv[1])))
