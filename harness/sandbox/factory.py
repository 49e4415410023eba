"""The process-wide sandbox provider, chosen once from ``sandbox.use``.

``null`` prefers isolation: bubblewrap when it works on this machine, otherwise the local
provider with one warning that says commands are not isolated. ``bwrap`` insists on
isolation and fails loudly where it cannot run, rather than silently running model
commands on the host.
"""

from __future__ import annotations

import logging
import threading

from harness.config import class_path
from harness.config.app_config import AppConfig
from harness.config.paths import thread_user_data_dir
from harness.sandbox import disk
from harness.sandbox.errors import SandboxUnavailable
from harness.sandbox.provider import SandboxProvider

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_provider: SandboxProvider | None = None


def build_sandbox_provider(config: AppConfig) -> SandboxProvider:
    from harness.sandbox.bwrap import BwrapSandboxProvider, probe_bwrap
    from harness.sandbox.container import ContainerSandboxProvider
    from harness.sandbox.local import LocalSandboxProvider

    sandbox_cfg = config.sandbox
    kwargs = {"skills_dir": config.skills.path, "skills_container_path": config.skills.container_path}
    use = sandbox_cfg.use
    if use == "local":
        logger.warning("sandbox.use is 'local': agent commands run on the host WITHOUT isolation.")
        return LocalSandboxProvider(sandbox_cfg, **kwargs)
    if use == "bwrap":
        return BwrapSandboxProvider(sandbox_cfg, **kwargs)
    if use == "container":
        return ContainerSandboxProvider(sandbox_cfg, **kwargs)
    if use is None:
        ok, reason = probe_bwrap()
        if ok:
            logger.info("Sandbox: isolated bubblewrap provider.")
            return BwrapSandboxProvider(sandbox_cfg, **kwargs)
        logger.warning(
            "Sandbox: %s; falling back to the local provider, so agent commands run on the host WITHOUT "
            "isolation and can read anything this server's user can. Install bubblewrap (apt-get install "
            "bubblewrap) and allow user namespaces to isolate them.",
            reason,
        )
        return LocalSandboxProvider(sandbox_cfg, **kwargs)
    cls = class_path.resolve(use)
    if not (isinstance(cls, type) and issubclass(cls, SandboxProvider)):
        raise SandboxUnavailable(f"sandbox.use '{use}' is not a SandboxProvider subclass")
    return cls(sandbox_cfg, **kwargs)


def get_sandbox_provider() -> SandboxProvider:
    """The provider for this process, built on first use from the current config."""
    global _provider
    if _provider is not None:
        return _provider
    with _lock:
        if _provider is None:
            from harness.config import get_app_config

            _provider = build_sandbox_provider(get_app_config())
        return _provider


def sandbox_thread_deleted(user_id: str, thread_id: str) -> None:
    """Before a thread's files are removed: its container and disk image go first.

    Uses the provider this process already has (building one just for this would start
    nothing worth stopping); a thread disk mounted by an earlier process is unmounted anyway,
    so the folder can be removed. Never raises: the delete goes on.
    """
    try:
        if _provider is not None:
            _provider.thread_deleted(str(user_id), str(thread_id))
        disk.remove(thread_user_data_dir(user_id, thread_id))
    except Exception:  # noqa: BLE001 - a delete must not fail on the sandbox's account
        logger.warning("Sandbox: cleaning up after deleted thread %s failed", thread_id, exc_info=True)


def set_sandbox_provider(provider: SandboxProvider | None) -> None:
    """Install a specific provider (embedding, tests)."""
    global _provider
    with _lock:
        _provider = provider


def reset_sandbox_provider() -> None:
    """Forget the provider so the next call re-reads the config (tests)."""
    global _provider
    with _lock:
        if _provider is not None:
            _provider.shutdown()
        _provider = None
