"""Tell the model about files the user uploaded since the last run.

The upload API only writes files; the model learns about them from one hidden message
per run listing the new ones with their virtual paths, so it can read them with tools.
``uploaded_files`` in state remembers what was already announced.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from langchain.agents.middleware import AgentMiddleware

from harness.agents.markers import context_block, hidden_message, neutralize_tags

VIRTUAL_UPLOADS = "/mnt/user-data/uploads"


def scan_uploads(directory: str) -> list[dict[str, Any]]:
    root = Path(directory)
    if not root.is_dir():
        return []
    files = []
    for entry in sorted(os.scandir(root), key=lambda e: e.name):
        # staging files of an upload in progress are not the user's files yet
        if not entry.is_file() or entry.name.startswith("."):
            continue
        stat = entry.stat()
        files.append({"filename": entry.name, "path": f"{VIRTUAL_UPLOADS}/{entry.name}", "size": stat.st_size, "modified": int(stat.st_mtime)})
    return files


def _human_size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


class UploadsMiddleware(AgentMiddleware):
    def _update(self, state: dict[str, Any], files: list[dict[str, Any]]) -> dict[str, Any] | None:
        known = {(f["filename"], f["size"], f["modified"]) for f in state.get("uploaded_files") or []}
        new = [f for f in files if (f["filename"], f["size"], f["modified"]) not in known]
        if not new and len(files) == len(known):
            return None
        update: dict[str, Any] = {"uploaded_files": files}
        if new:
            lines = "\n".join(f"- {neutralize_tags(f['path'])} ({_human_size(f['size'])})" for f in new)
            text = context_block("uploads", f"The user uploaded these files; read them with your file tools when relevant:\n{lines}")
            update["messages"] = [hidden_message("uploads", text)]
        return update

    def before_agent(self, state: dict[str, Any], runtime: Any) -> dict[str, Any] | None:
        data = state.get("thread_data") or {}
        if not data.get("uploads_path"):
            return None
        return self._update(state, scan_uploads(data["uploads_path"]))

    async def abefore_agent(self, state: dict[str, Any], runtime: Any) -> dict[str, Any] | None:
        data = state.get("thread_data") or {}
        if not data.get("uploads_path"):
            return None
        return self._update(state, await asyncio.to_thread(scan_uploads, data["uploads_path"]))
