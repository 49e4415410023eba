"""``python -m deerflow_site.server.after_servers FD MODULE [ARG ...]``: ``python -m MODULE ARG ...``,
once the web processes' launcher writes a byte on FD.

The launcher (``web_processes.py``, ``--also-run``) starts ``make run``'s Celery worker together
with its servers: forked from its preloaded imports where it can (so the worker shares those
pages with the servers), else as this fresh process. Either way the worker waits here until
every server listens, so that it looks for a free core (``cpu_pinning.py``) only once the servers
have taken theirs. EOF instead of the byte (the launcher stopped or died first) ends it with 0.
"""

from __future__ import annotations

import os
import runpy
import signal
import sys


def run_after(go_fd: int, argv: list[str]) -> int:
    # Stopped while it waits, it just ends (the launcher counts that as a clean stop), rather
    # than print a KeyboardInterrupt's traceback.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    with os.fdopen(go_fd, "rb", buffering=0) as go:
        if not go.read(1):
            return 0
    signal.signal(signal.SIGINT, signal.default_int_handler)
    module, *args = argv
    sys.argv = [module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)
    return 0


if __name__ == "__main__":
    sys.exit(run_after(int(sys.argv[1]), sys.argv[2:]))
