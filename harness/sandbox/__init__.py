"""Per-thread sandboxes: virtual paths, the local and bubblewrap providers, and the factory."""

from harness.sandbox.errors import SandboxError, SandboxPathError, SandboxUnavailable
from harness.sandbox.factory import (
    build_sandbox_provider, get_sandbox_provider, reset_sandbox_provider, sandbox_thread_deleted, set_sandbox_provider,
)
from harness.sandbox.paths import OUTPUTS, UPLOADS, USER_DATA, WORKSPACE, VirtualFS
from harness.sandbox.process import CommandResult
from harness.sandbox.provider import SandboxProvider
from harness.sandbox.sandbox import DirEntry, GrepMatch, Sandbox

__all__ = [
    "OUTPUTS",
    "UPLOADS",
    "USER_DATA",
    "WORKSPACE",
    "CommandResult",
    "DirEntry",
    "GrepMatch",
    "Sandbox",
    "SandboxError",
    "SandboxPathError",
    "SandboxProvider",
    "SandboxUnavailable",
    "VirtualFS",
    "build_sandbox_provider",
    "get_sandbox_provider",
    "reset_sandbox_provider",
    "sandbox_thread_deleted",
    "set_sandbox_provider",
]
