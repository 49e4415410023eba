"""Where the harness finds its files: config.yaml, extensions_config.json and DEER_FLOW_HOME."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
CONFIG_ENV = "DEER_FLOW_CONFIG_PATH"
EXTENSIONS_ENV = "DEER_FLOW_EXTENSIONS_CONFIG_PATH"
HOME_ENV = "DEER_FLOW_HOME"


def resolve_config_path(explicit: str | os.PathLike | None = None) -> Path:
    """Explicit argument, then ``$DEER_FLOW_CONFIG_PATH``, then ``config.yaml`` in the repo root."""
    if explicit:
        return Path(explicit).expanduser().resolve()
    if os.environ.get(CONFIG_ENV):
        return _resolved(os.environ[CONFIG_ENV])
    return REPO_ROOT / "config.yaml"


def resolve_extensions_path(explicit: str | os.PathLike | None = None) -> Path:
    """Explicit argument, then ``$DEER_FLOW_EXTENSIONS_CONFIG_PATH``, then beside config.yaml."""
    if explicit:
        return Path(explicit).expanduser().resolve()
    if os.environ.get(EXTENSIONS_ENV):
        return _resolved(os.environ[EXTENSIONS_ENV])
    return resolve_config_path().parent / "extensions_config.json"


def _resolved(raw: str) -> Path:
    # A run asks for these paths a dozen times, and resolving walks the file system each time.
    # Keyed by the variable's value (and the working directory, for a relative one), so a
    # changed environment is still followed.
    return _resolve(raw, "" if raw.startswith(("/", "~")) else os.getcwd())


@lru_cache(maxsize=16)
def _resolve(raw: str, cwd: str) -> Path:
    return Path(cwd, raw).expanduser().resolve() if cwd else Path(raw).expanduser().resolve()


def deer_flow_home() -> Path:
    """The data directory: ``$DEER_FLOW_HOME`` or ``.deer-flow/`` in the repo root."""
    raw = os.environ.get(HOME_ENV)
    return _resolved(raw) if raw else REPO_ROOT / ".deer-flow"


def thread_user_data_dir(user_id: str | int, thread_id: str) -> Path:
    """``users/{user_id}/threads/{thread_id}/user-data`` under the data directory."""
    return deer_flow_home().joinpath("users", str(user_id), "threads", thread_id, "user-data")
