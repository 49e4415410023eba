"""What the web processes' launcher runs after its servers in tests/site/test_web_processes.py:
``--also-run "tests.support.after_servers_probe LOG OUT CODE"``.

Writes to OUT whether the launcher's LOG already says that every server listens (it must not
have started before that), then waits: SIGTERM ends it (the default action), SIGUSR1 makes it
exit with CODE, as a worker that stops on its own would.
"""

import signal
import sys
from pathlib import Path

log, out, code = sys.argv[1:4]
signal.signal(signal.SIGUSR1, lambda _signum, _frame: sys.exit(int(code)))
said = "listening" if " listening (pids " in Path(log).read_text() else "not yet listening"
Path(out + ".tmp").write_text(said)
Path(out + ".tmp").replace(out)
while True:
    signal.pause()
