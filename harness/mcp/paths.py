"""Translating local file paths in MCP results into the paths the model knows.

A stdio server runs on the host, so a file it writes into a thread's user-data directory
comes back as a host path the model cannot use with its own tools. Only paths that name an
existing file or directory inside *this* thread's user-data tree are rewritten to
``/mnt/user-data/...``; anything else is left as it is (no copying, no guessing).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

VIRTUAL_ROOT = "/mnt/user-data"
_PATH_END = re.compile(r"[^\s'\"`<>()\[\]{},;]*")


def translate_text(text: str, user_data: Path) -> str:
    root = str(user_data.resolve())
    if root not in text:
        return text
    out: list[str] = []
    pos = 0
    while (start := text.find(root, pos)) != -1:
        match = _PATH_END.match(text, start + len(root))
        end = match.end() if match else start + len(root)
        candidate = text[start:end].rstrip(".:")
        end = start + len(candidate)
        rest = candidate[len(root):]
        if rest and not rest.startswith("/"):
            out.append(text[pos:end])  # a sibling like .../user-data2, not inside the tree
            pos = end
            continue
        path = Path(candidate)
        inside = path.resolve().is_relative_to(user_data.resolve())
        out.append(text[pos:start])
        out.append(VIRTUAL_ROOT + rest if inside and path.exists() else candidate)
        pos = end
    out.append(text[pos:])
    return "".join(out)


def translate_content(content: Any, user_data: Path | None) -> Any:
    """Text and text blocks of a tool result; ResourceLink URIs (``file://``) too."""
    if user_data is None:
        return content
    if isinstance(content, str):
        return translate_text(content, user_data)
    if isinstance(content, list):
        return [translate_content(block, user_data) for block in content]
    if isinstance(content, dict):
        block = dict(content)
        for key in ("text", "uri", "url"):
            value = block.get(key)
            if isinstance(value, str):
                prefix = "file://" if value.startswith("file://") else ""
                translated = translate_text(value[len(prefix):], user_data)
                block[key] = translated if translated.startswith(VIRTUAL_ROOT) and prefix else prefix + translated
        return block
    return content
