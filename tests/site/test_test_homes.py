"""The suite's throwaway ``DEER_FLOW_HOME`` (tests/settings.py) is removed by the process that
made it when that process ends, and only by it: a forked child or a process started with the
home in its environment leaves it alone, and a process that inherits a home makes none."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Imports the settings as every test process does, forks a child that exits through atexit,
# and starts a process that inherits the home; the home must outlive both.
SCRIPT = """
import os, subprocess, sys
import tests.settings
home = os.environ["DEER_FLOW_HOME"]
pid = os.fork()
if pid == 0:
    sys.exit(0)
os.waitpid(pid, 0)
subprocess.run([sys.executable, "-c", "import tests.settings"], env=os.environ, check=True)
assert os.path.isdir(home), "another process removed the home"
print(home)
"""


@pytest.mark.parametrize("worker", ["", "gw7"])
def test_the_process_that_made_a_test_home_removes_it_at_exit(tmp_path, worker):
    env = {k: v for k, v in os.environ.items() if k not in ("DEER_FLOW_HOME", "DEERFLOW_TEST_HOME_OF", "PYTEST_XDIST_WORKER")}
    env["TMPDIR"] = str(tmp_path)  # where mkdtemp makes the home: nobody else's
    if worker:
        env["PYTEST_XDIST_WORKER"] = worker
        env["DEER_FLOW_HOME"] = str(tmp_path / "the-controllers-home")  # a worker makes its own all the same
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    home = Path(done.stdout.strip().splitlines()[-1])
    assert home.parent == tmp_path and home.name.startswith("deerflow-test-home-")
    assert not home.exists()
    assert list(tmp_path.glob("deerflow-test-home-*")) == []  # nor did the inheriting process make one
