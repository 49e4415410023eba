"""What ``LiveServer.shell`` runs: ``manage.py shell -c`` for many calls at the price of one
Django start-up.

Started once per live stack with the stack's environment (forked from the test process's
zygote, tests/support/zygote.py, like the stack's servers), it sets Django up and then, for
each request read from stdin, forks: the child runs the code as ``manage.py shell -c`` would
(one fresh process per call, which exits when the code is done, so any runs loop or
connection it opened ends with it, as before) and the parent reports the child's exit status
and output. Fork is safe here because the parent never opens a database connection or starts
a thread: it only imports. Setting Django up costs a few seconds of CPU; a fork and an
exit, under a second.

Protocol, one line each way: ``{"code": ...}`` in, ``{"rc": int, "stdout": str, "stderr": str}``
out.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile


def _child(code: str, out_path: str, err_path: str) -> None:
    out = os.open(out_path, os.O_WRONLY | os.O_TRUNC)
    err = os.open(err_path, os.O_WRONLY | os.O_TRUNC)
    os.dup2(out, 1)
    os.dup2(err, 2)
    sys.stdin = open(os.devnull)
    rc = 0
    try:
        exec(compile(code, "<shell>", "exec"), {"__name__": "__main__"})
    except SystemExit as exc:
        rc = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
        rc = 1
    # Leave as the interpreter leaves a script: it waits for the threads the code started (a
    # run still going in its runs loop finishes there, as it did under manage.py shell), then
    # runs the atexit handlers and flushes the output. SystemExit unwinds main(), which catches
    # nothing, so the child never returns to the request loop.
    sys.exit(rc)


def main() -> None:
    import django

    django.setup()
    # manage.py shell imports the same: the models are loaded, nothing is connected.
    requests = sys.stdin
    reply = sys.stdout
    workdir = tempfile.mkdtemp(prefix="deerflow-shell-")
    out_path, err_path = os.path.join(workdir, "out"), os.path.join(workdir, "err")
    for line in requests:
        code = json.loads(line)["code"]
        for path in (out_path, err_path):
            open(path, "w").close()
        reply.flush()
        pid = os.fork()
        if pid == 0:
            _child(code, out_path, err_path)
        _, status = os.waitpid(pid, 0)
        with open(out_path, errors="replace") as out, open(err_path, errors="replace") as err:
            result = {"rc": os.waitstatus_to_exitcode(status), "stdout": out.read(), "stderr": err.read()}
        reply.write(json.dumps(result) + "\n")
        reply.flush()
    shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
