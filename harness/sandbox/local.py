"""The local provider: commands run on the host with bash, virtual paths rewritten.

This gives the model predictable paths but no isolation: a command can read anything the
server's user can. It is the fallback where bubblewrap cannot run, and the server says so
in a warning at startup.
"""

from __future__ import annotations

import dataclasses
import shutil
import threading
from collections.abc import Mapping

from harness.sandbox.env_policy import build_sandbox_env
from harness.sandbox.output import BoundedText
from harness.sandbox.paths import VirtualFS
from harness.sandbox.process import CommandResult, run_command
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
        result = run_command(
            [_BASH, "-c", self.fs.translate_command(command)],
            cwd=str(workspace),
            env=build_sandbox_env(env),
            timeout=timeout or self.default_timeout,
            max_chars=self.max_chars,
            cancel=cancel,
        )
        # The model knows virtual paths only; host paths in output (pwd, tracebacks)
        # would confuse it and leak the server's layout.
        output = BoundedText(
            self.fs.untranslate_output(result.output.head),
            self.fs.untranslate_output(result.output.tail),
            result.output.omitted_chars,
        )
        return dataclasses.replace(result, output=output)


class LocalSandboxProvider(HostSandboxProvider):
    prefix = "local"

    def _make_sandbox(self, sandbox_id, user_id, thread_id, fs):
        return LocalSandbox(sandbox_id, user_id, thread_id, fs,
                            timeout=self.config.bash_command_timeout, max_chars=self.config.max_output_chars)
