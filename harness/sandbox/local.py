"""The local provider: commands run on the host with bash, virtual paths rewritten.

This gives the model predictable paths but no isolation: a command can read anything the
server's user can. It is the fallback where bubblewrap cannot run, and the server says so
in a warning at startup.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
import threading
from collections.abc import Mapping

from harness.sandbox.command import run_limited
from harness.sandbox.env_policy import HOST_RUNTIME_NAMES
from harness.sandbox.output import BoundedText
from harness.sandbox.paths import VirtualFS
from harness.sandbox.process import CommandResult
from harness.sandbox.provider import HostSandboxProvider
from harness.sandbox.sandbox import Sandbox

_BASH = shutil.which("bash") or "/bin/sh"


class LocalSandbox(Sandbox):
    def __init__(self, sandbox_id: str, user_id: str, thread_id: str, fs: VirtualFS, *, timeout: float, max_chars: int):
        super().__init__(sandbox_id, user_id, thread_id, fs)
        self.default_timeout = timeout
        self.max_chars = max_chars

    def execute_command(self, command: str, env: Mapping[str, str] | None = None, timeout: float | None = None,
                        cancel: threading.Event | None = None) -> CommandResult:
        workspace = self.fs.host_dir("workspace")
        workspace.mkdir(parents=True, exist_ok=True)
        host = {"PATH": os.defpath, "HOME": str(workspace), "TMPDIR": tempfile.gettempdir()}
        host.update({name: os.environ[name] for name in HOST_RUNTIME_NAMES if name in os.environ})
        if self.toolbox is not None:
            host["PATH"] = f"{self.toolbox}/bin:{host['PATH']}"
        result = run_limited(
            [_BASH, "-c", self.fs.translate_command(command)],
            policy=self.policy,
            cwd=str(workspace),
            env=self.policy.environment(env, {**host, "PWD": str(workspace)}),
            timeout=timeout or self.default_timeout,
            max_chars=self.max_chars,
            cancel=cancel,
        )
        # The model knows virtual paths only; host paths in output (pwd, tracebacks)
        # would confuse it and leak the server's layout.
        message = result.limit_message and self.fs.untranslate_output(result.limit_message)
        output = BoundedText(
            self.fs.untranslate_output(result.output.head),
            self.fs.untranslate_output(result.output.tail),
            result.output.omitted_chars,
        )
        return dataclasses.replace(result, output=output, limit_message=message)


class LocalSandboxProvider(HostSandboxProvider):
    prefix = "local"

    def _make_sandbox(self, sandbox_id, user_id, thread_id, fs):
        return LocalSandbox(sandbox_id, user_id, thread_id, fs,
                            timeout=self.config.bash_command_timeout, max_chars=self.config.max_output_chars)
