"""Where the harness finds its files: config.yaml, extensions_config.json and DEER_FLOW_HOME."""

from __future__ import annotations

import os
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
        return Path(os.environ[CONFIG_ENV]).expanduser().resolve()
    return REPO_ROOT / "config.yaml"


def resolve_extensions_path(explicit: str | os.PathLike | None = None) -> Path:
    """Explicit argument, then ``$DEER_FLOW_EXTENSIONS_CONFIG_PATH``, then beside config.yaml."""
    if explicit:
        return Path(explicit).expanduser().resolve()
    if os.environ.get(EXTENSIONS_ENV):
        return Path(os.environ[EXTENSIONS_ENV]).expanduser().resolve()
    return resolve_config_path().parent / "extensions_config.json"


def deer_flow_home() -> Path:
    """The data directory: ``$DEER_FLOW_HOME`` or ``.deer-flow/`` in the repo root."""
    raw = os.environ.get(HOME_ENV)
    return Path(raw).expanduser().resolve() if raw else REPO_ROOT / ".deer-flow"


def thread_user_data_dir(user_id: str | int, thread_id: str) -> Path:
    """``users/{user_id}/threads/{thread_id}/user-data`` under the data directory."""
    return deer_flow_home() / "users" / str(user_id) / "threads" / thread_id / "user-data"
