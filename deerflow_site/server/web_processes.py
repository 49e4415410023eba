"""The web server on several processes sharing one port: ``make run`` uses both cores.

``python -m deerflow_site.server.web_processes -b HOST -p PORT [--processes N] deerflow_site.asgi:application``

One Python process runs Python on one core at a time (the GIL), so one Daphne server leaves a
second core idle. This launcher binds one listening socket and starts N servers
(``deerflow_site.server.daphne_server``, with everything it does to request bodies) that all accept
from it through Daphne's ``--fd``: the kernel hands each new connection to whichever server
calls ``accept`` first, and a server busy with Python is not there to call it, so the idle one
takes it. No port per process and no proxy in front.

It serves nothing itself and never loads the application (``deerflow_site.asgi``, whose
import starts the runs loop and its threads). It does import the libraries every server
imports (``PRELOAD``: LangChain, LangGraph, harness/, Django, the libraries the installed apps
import and the parts of Twisted Daphne uses, not ``daphne.server`` or Twisted's reactor, which
make the loop), sets Django up with its URL configuration (``setup_django``), and then forks the
servers, so their copies of that code and its objects are one set of memory pages shared
between them rather than one per server (issue 55: ``make run`` at rest took about 75 MB less
memory for the libraries, and about 90 MB less again with Django's setup; 3.9 s of start-up
CPU instead of 6.7). Nothing runs then but the main thread: no loop, no connection, no lock held. Where that
cannot be had (no ``os.fork``, an import or the setup failing, a thread started), the servers
are started as fresh processes instead, and report what failed themselves. The servers pin
themselves to a core each when they load the application (deerflow_site/server/cpu_pinning.py).
``--ready-file`` is written once every server is listening.

``--also-run 'MODULE ARG ...'`` runs ``python -m MODULE ARG ...`` beside the servers: scripts/run.sh's
Celery worker (with its embedded beat). It is forked with the servers, from the same preloaded
imports (issue 55: the worker and its beat had imported them on their own, about 80 MB), or
started fresh where the servers are, and waits (``after_servers.py``) until every server listens:
with the cores taken by the servers it stays unpinned rather than take one a server needs.

It lives and dies with its children: SIGTERM or SIGINT is passed on to them, and when any of
them exits it stops the others and exits with that child's code, so a site with half its
servers (or its worker) gone does not look up to whatever watches the launcher. Extra options
(``-v 2``, ``--access-log -``, ...) are passed on to every server.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import runpy
import shlex
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import django
from django.urls import get_resolver

from deerflow_site.server.after_servers import run_after
from harness.config import get_app_config

ENV = "WEB_PROCESSES"
# Beyond two the servers mostly queue behind SQLite's one writer and each other's GIL-free
# waits; more cores are better used by Celery workers (docs/deployment.md).
AUTO_MAX = 2
# A typo such as 200 should not fork 200 copies of the site.
MAX_PROCESSES = 64
# Connections the kernel queues while every server is busy (capped by net.core.somaxconn).
BACKLOG = 2048
# How long servers get to finish their requests after SIGTERM before they are killed, at least.
STOP_GRACE_SECONDS = 15
# Beyond memory.shutdown_flush_timeout_seconds: a server stops serving first, then flushes.
FLUSH_MARGIN_SECONDS = 5
# The servers report, on this inherited descriptor, that they are listening.
READY_FD_ENV = "DEERFLOW_WEB_READY_FD"


# What every server imports before it sets Django up, each pulling in its libraries. None starts
# a thread, opens a connection or makes a loop at import (preload() checks the first and the
# loop). daphne.server and twisted.internet.reactor are not here: importing daphne.server
# installs the reactor on a new loop, whose epoll descriptor forked servers would share.
PRELOAD = (
    "harness.agents", "harness.agents.custom", "harness.agents.goals", "harness.agents.input_polish",
    "harness.agents.middlewares.token_usage", "harness.governance.gate", "harness.knowledge.tools",
    "harness.memory.tools", "harness.memory.updater", "harness.memory.injection", "harness.memory.retrieval",
    "harness.models.factory", "harness.observability.tracing", "harness.observability.metrics",
    "harness.runtime.checkpointer", "harness.runtime.stream_bridge", "harness.runtime.serialize",
    "harness.sandbox", "harness.sandbox.provider", "harness.skills.loader", "harness.skills.install",
    "harness.tools.web.tools", "harness.uploads.files", "harness.usage.pricing",
    "harness.workspace_changes.recorder", "harness.mcp.settings",
    "django.core.handlers.asgi", "django.db.models", "django.db.backends.sqlite3.base", "django.http",
    "django.forms", "django.template.defaulttags", "django.contrib.admin.sites",
    "psycopg", "celery", "kombu", "numpy", "rich", "requests", "langgraph_sdk", "opentelemetry.sdk.trace",
    # What Django's setup then imports for the installed apps (the Docker sandbox, allauth's
    # cryptography and QR codes, django-celery-beat's cron text, DRF's schema) and the parts
    # of Twisted and Autobahn that Daphne uses, short of its reactor.
    "docker", "cryptography.x509", "OpenSSL.SSL", "service_identity.pyopenssl", "jinja2", "segno", "cron_descriptor",
    "uritemplate", "cbor2", "pygments.formatters", "environ", "unittest.mock", "uvloop", "zope.interface", "attr",
    "hyperlink", "txaio", "twisted.logger", "twisted.internet.defer", "twisted.internet.asyncioreactor", "twisted.web.http",
    "autobahn.websocket.protocol",
    # What a server's first run imports (about 150 modules): the lead agent with its middlewares
    # and tools, the OpenAI client's chat resources and its HTTP stack, LangChain's tracers, the
    # session and message storage of the first signed-in page. Imported here, they are shared
    # pages, and no server pays for them in its first run.
    "harness.agents.lead_agent.agent", "harness.subagents.tool", "harness.mcp.tools", "harness.mcp.deferred",
    "harness.skills.activation", "harness.governance.guardrails", "harness.tools.builtins", "harness.tools.sandbox_tools",
    "harness.tools.skill_review", "harness.tools.browser.tools",
    "openai.resources.chat.completions.completions", "openai.lib.streaming.chat", "openai.pagination",
    "httpcore2", "anyio._backends._asyncio", "anyio.streams.tls", "anyio.streams.memory", "anyio.streams.stapled", "h11",
    "truststore", "jiter", "langchain_core.tracers.stdout", "langchain_core.tracers.run_collector",
    "langchain_core.messages.block_translators.langchain_v0",
    "django.contrib.messages.storage.fallback", "django.contrib.sessions.serializers",
)
# Modules whose presence means the reactor's loop exists already: no forking then.
LOOP_MODULES = ("daphne.server", "twisted.internet.reactor")
SERVER_MODULE = "deerflow_site.server.daphne_server"
AFTER_MODULE = "deerflow_site.server.after_servers"


def setup_django() -> None:
    """Django's setup (settings, every app's models and ``ready()``) and the URL configuration
    with the views it imports: what each server would otherwise build on its own copy, about
    45 MB a process. The servers' own setup then finds the apps ready and does not run again
    (asgi.py), as does the Celery worker's. Nothing in it may hold what a process calls its own:
    run leases name the process when asked (apps/runs/runtime.py ``process_id``)."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "deerflow_site.settings")
    django.setup(set_prefix=False)
    get_resolver().url_patterns  # noqa: B018  (the property imports every view)


def preload() -> bool:
    """Imports ``PRELOAD`` and freezes what it made; True if the servers can now be forked."""
    if not hasattr(os, "fork"):
        return False
    try:
        for name in PRELOAD:
            importlib.import_module(name)
        setup_django()
    except Exception:  # the servers import it again, fresh, and report what is wrong themselves
        return False
    if threading.active_count() > 1 or any(name in sys.modules for name in LOOP_MODULES):
        return False
    # The imported objects move out of the collector's reach: a collection in a server would
    # otherwise write to every one of them and so copy the pages the servers share.
    gc.collect()
    gc.freeze()
    return True


class ForkedServer:
    """What ``Launcher`` needs of a ``subprocess.Popen``, for a server forked from the launcher."""

    def __init__(self, pid: int):
        self.pid = pid
        self.returncode: int | None = None

    def send_signal(self, signum: int) -> None:
        os.kill(self.pid, signum)

    def kill(self) -> None:
        os.kill(self.pid, signal.SIGKILL)


def fresh_signals() -> None:
    """In a forked child: the launcher's handlers would stop the launcher's copy of its
    children; the defaults a fresh process has, until the child sets its own."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})


def serve_forked(argv: list[str], ready_read: int, ready_write: int) -> int:
    """In a forked child: Daphne's command line, as ``python -m`` would run the server module."""
    fresh_signals()
    os.close(ready_read)
    os.environ[READY_FD_ENV] = str(ready_write)
    sys.argv = [SERVER_MODULE, *argv]
    runpy.run_module(SERVER_MODULE, run_name="__main__", alter_sys=True)
    return 0


# What a server may spend after SHUTDOWN_GRACE_SECONDS handing its runs to recovery.
HANDOVER_MARGIN_SECONDS = 15


def stop_grace_seconds() -> float:
    """At least ``STOP_GRACE_SECONDS``; longer when the servers' run drain
    (``SHUTDOWN_GRACE_SECONDS``, apps/runs/shutdown.py) or memory's
    ``shutdown_flush_timeout_seconds`` needs it, so a stopping server is not killed while it
    still lets its runs finish or applies pending memory updates within the bounds the
    operator set."""
    try:
        drain = float(os.environ.get("SHUTDOWN_GRACE_SECONDS") or 20) + HANDOVER_MARGIN_SECONDS
    except ValueError:  # the server refuses the value itself; the stop goes on
        drain = 20 + HANDOVER_MARGIN_SECONDS
    try:
        memory = get_app_config().memory
    except Exception:  # a broken config must not stop the stop
        return max(STOP_GRACE_SECONDS, drain)
    flush = memory.shutdown_flush_timeout_seconds + FLUSH_MARGIN_SECONDS if memory.enabled else 0
    return max(STOP_GRACE_SECONDS, drain + flush)


class UsageError(Exception):
    """A bad process count or address: one line on stderr, exit 2."""


def usable_cpus() -> int:
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def process_count(value: str | None) -> int:
    """``auto`` (the default) is one per usable core, at most ``AUTO_MAX``."""
    text = (value or "auto").strip().lower()
    if text == "auto":
        return min(usable_cpus(), AUTO_MAX)
    try:
        count = int(text)
    except ValueError:
        count = 0
    if not 1 <= count <= MAX_PROCESSES:
        raise UsageError(f"{ENV} must be 'auto' or a whole number from 1 to {MAX_PROCESSES}, not {value!r}")
    return count


def listen(host: str, port: int) -> socket.socket:
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    except socket.gaierror as exc:
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock = socket.socket(family, kind, proto)
    # A restarted site takes its port back at once, whatever connections linger in TIME_WAIT.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(BACKLOG)
    except OSError as exc:
        sock.close()
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    return sock


def server_command(sock: socket.socket, application: str, extra: list[str]) -> list[str]:
    # Daphne's --fd adopts an IPv4 socket; an IPv6 one needs Twisted's endpoint string.
    if sock.family == socket.AF_INET6:
        endpoint = ["-e", f"fd:fileno={sock.fileno()}:domain=INET6"]
    else:
        endpoint = ["--fd", str(sock.fileno())]
    return [sys.executable, "-m", SERVER_MODULE, *endpoint, *extra, application]


class Launcher:
    def __init__(self, sock: socket.socket, command: list[str], count: int, ready_file: Path | None, fork: bool = False,
                 also: list[str] | None = None):
        self.sock = sock
        self.command = command
        self.count = count
        self.ready_file = ready_file
        self.fork = fork
        # ``--also-run``: MODULE and its arguments, run once every server listens.
        self.also = also or []
        self.also_pid: int | None = None
        self.go_write: int | None = None
        self.children: dict[int, subprocess.Popen | ForkedServer] = {}
        self.stopping = False
        self.stop_signal = signal.SIGTERM

    def start(self) -> int | None:
        """Starts the servers; None in the launcher. In a forked server, it returns that
        server's exit code once it has stopped (main() returns it, and the process exits)."""
        ready_read, ready_write = os.pipe()
        go_read, self.go_write = os.pipe() if self.also else (None, None)
        env = {**os.environ, READY_FD_ENV: str(ready_write)}
        forked = False
        try:
            for _ in range(self.count):
                if self.fork:
                    child, forked = self._fork()
                    if forked:
                        if go_read is not None:  # else the one that runs after could miss the launcher's end
                            os.close(go_read)
                            os.close(self.go_write)
                        return serve_forked(self.command[3:], ready_read, ready_write)
                else:
                    child = subprocess.Popen(self.command, env=env, pass_fds=(self.sock.fileno(), ready_write))
                self._started(child)
            if go_read is not None:
                # Started now, while the launcher has one thread and nothing but its imports, and
                # held at go_read until the servers listen (after_servers.py).
                if self.fork:
                    child, forked = self._fork()
                    if forked:
                        fresh_signals()
                        for fd in (ready_read, ready_write, self.go_write):
                            os.close(fd)
                        self.sock.close()
                        return run_after(go_read, self.also)
                else:
                    child = subprocess.Popen([sys.executable, "-m", AFTER_MODULE, str(go_read), *self.also], pass_fds=(go_read,))
                os.close(go_read)
                self.also_pid = child.pid
                self._started(child)
        finally:
            if not forked:  # a server's descriptors are its own to close
                os.close(ready_write)
                # The servers hold the socket now; this process never accepts.
                self.sock.close()
        threading.Thread(target=self._await_ready, args=(ready_read,), name="ready", daemon=True).start()
        return None

    def _started(self, child: subprocess.Popen | ForkedServer) -> None:
        self.children[child.pid] = child
        if self.stopping:  # a signal came while the others started: this one stops too
            child.send_signal(self.stop_signal)

    def _fork(self) -> tuple[ForkedServer | None, bool]:
        """(the server, False) in the launcher, (None, True) in the new server. The stop
        signals wait meanwhile, so that none reaches the child's copy of the launcher's handlers."""
        sys.stdout.flush()
        sys.stderr.flush()  # else what the launcher buffered would be written by each server too
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
        pid = os.fork()
        if pid == 0:
            return None, True
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
        return ForkedServer(pid), False

    def _await_ready(self, ready_read: int) -> None:
        """One byte per server once it listens; EOF first means one died before (see wait())."""
        got = 0
        try:
            with os.fdopen(ready_read, "rb", buffering=0) as pipe:
                while got < self.count:
                    chunk = pipe.read(self.count - got)
                    if not chunk:
                        return
                    got += len(chunk)
            pids = ", ".join(str(pid) for pid in self.children if pid != self.also_pid)
            print(f"web_processes: {self.count} server process{'es' if self.count > 1 else ''} listening (pids {pids})", file=sys.stderr, flush=True)
            if self.go_write is not None and not self.stopping:
                os.write(self.go_write, b"1")
                print(f"web_processes: started python -m {shlex.join(self.also)} (pid {self.also_pid})", file=sys.stderr, flush=True)
        finally:
            if self.go_write is not None:  # EOF: what waits for the servers ends instead
                os.close(self.go_write)
        if self.ready_file is not None and not self.stopping:
            partial = self.ready_file.with_name(self.ready_file.name + ".tmp")
            partial.write_text(f"{self.count}\n")
            partial.replace(self.ready_file)

    def stop(self, signum: int = signal.SIGTERM) -> None:
        # Only ever called on the main thread (signal handlers, wait()); no lock, since a signal
        # arriving inside stop() would re-enter it, and sending the signals twice is harmless.
        if self.stopping:
            return
        self.stopping = True
        self.stop_signal = signum
        for child in list(self.children.values()):
            if child.returncode is None:
                try:
                    child.send_signal(signum)
                except ProcessLookupError:
                    pass  # it exited meanwhile: nothing left to stop
        timer = threading.Timer(stop_grace_seconds(), self._kill_remaining)
        timer.daemon = True
        timer.start()

    def _kill_remaining(self) -> None:
        for child in list(self.children.values()):
            if child.returncode is None:
                try:
                    child.kill()
                except ProcessLookupError:
                    pass  # it exited meanwhile: nothing left to stop

    def wait(self) -> int:
        """Until every server has exited. The code is that of the first to exit on its own; after
        a stop we asked for, 0 unless a server failed to stop cleanly."""
        first: int | None = None
        remaining = set(self.children)
        while remaining:
            pid, status = os.waitpid(-1, 0)
            if pid not in remaining:
                continue
            remaining.discard(pid)
            code = os.waitstatus_to_exitcode(status)
            self.children[pid].returncode = code
            if code < 0:  # killed by a signal: report it the way a shell would
                code = 0 if self.stopping and -code in (signal.SIGTERM, signal.SIGINT) else 128 - code
            if not self.stopping:
                first = code
                what = f"process {pid} (python -m {self.also[0]})" if pid == self.also_pid else f"server process {pid}"
                print(f"web_processes: {what} exited with code {code}; stopping the others", file=sys.stderr, flush=True)
                self.stop()
            elif not first:
                first = code
        if self.ready_file is not None:
            self.ready_file.unlink(missing_ok=True)
        return first or 0


def parse_args(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    parser = argparse.ArgumentParser(prog="python -m deerflow_site.server.web_processes", description=__doc__.split("\n\n")[0])
    parser.add_argument("-b", "--bind", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    parser.add_argument("-p", "--port", type=int, default=8000, help="the port to listen on (default 8000)")
    parser.add_argument("--processes", default=None, help=f"how many server processes: 'auto' or 1-{MAX_PROCESSES} (default: ${ENV}, else auto)")
    parser.add_argument("--ready-file", type=Path, default=None, help="written (with the process count) once every server listens")
    parser.add_argument("--also-run", default=None, metavar="'MODULE ARG ...'",
                        help="also run python -m MODULE ARG ... (e.g. 'celery -A deerflow_site worker --beat') once every server listens;"
                             " it lives and dies with the servers")
    parser.add_argument("application", help="the ASGI application, e.g. deerflow_site.asgi:application")
    return parser.parse_known_args(argv)


def main(argv: list[str] | None = None) -> int:
    args, extra = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        count = process_count(args.processes if args.processes is not None else os.environ.get(ENV))
        sock = listen(args.bind, args.port)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.ready_file is not None:
        args.ready_file.unlink(missing_ok=True)  # a stale one from a launcher that was killed
    also = shlex.split(args.also_run) if args.also_run else None
    launcher = Launcher(sock, server_command(sock, args.application, extra), count, args.ready_file, also=also)
    # Handlers first: a signal while the servers start must still reach them.
    signal.signal(signal.SIGTERM, lambda signum, _frame: launcher.stop(signum))
    signal.signal(signal.SIGINT, lambda signum, _frame: launcher.stop(signum))
    launcher.fork = preload()
    served = launcher.start()
    if served is not None:  # this is a forked server, and it has stopped
        return served
    return launcher.wait()


if __name__ == "__main__":
    sys.exit(main())
