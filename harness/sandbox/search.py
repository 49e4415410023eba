"""Glob patterns with ``**`` and braces, compiled to regular expressions.

``pathlib``'s glob follows symlinked directories in Python 3.11, which would let a link in
the workspace walk the host; the sandbox walks with ``os.walk(followlinks=False)`` and
matches relative paths against these expressions instead.
"""

from __future__ import annotations

import re
from functools import lru_cache

MAX_BRACE_EXPANSIONS = 64


def expand_braces(pattern: str) -> list[str]:
    """``*.{py,md}`` -> ``['*.py', '*.md']`` (nested braces supported, bounded)."""
    results = [pattern]
    out: list[str] = []
    while results:
        current = results.pop()
        start = current.find("{")
        depth, end = 0, -1
        if start >= 0:
            for i in range(start, len(current)):
                if current[i] == "{":
                    depth += 1
                elif current[i] == "}":
                    depth -= 1
                    if depth == 0:
                        end = i
                        break
        if start < 0 or end < 0:
            out.append(current)
            continue
        body = current[start + 1:end]
        options, depth, last = [], 0, 0
        for i, ch in enumerate(body):
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            elif ch == "," and depth == 0:
                options.append(body[last:i])
                last = i + 1
        options.append(body[last:])
        if len(options) == 1:  # "{x}" is literal in shells too
            out.append(current[:start] + "\x00" + body + "\x01" + current[end + 1:])
            continue
        for option in options:
            results.append(current[:start] + option + current[end + 1:])
        if len(results) + len(out) > MAX_BRACE_EXPANSIONS:
            raise ValueError(f"the pattern expands to more than {MAX_BRACE_EXPANSIONS} alternatives")
    return [p.replace("\x00", "{").replace("\x01", "}") for p in out]


def _translate(pattern: str) -> str:
    i, n, out = 0, len(pattern), []
    while i < n:
        c = pattern[i]
        if c == "*":
            if pattern.startswith("**", i):
                at_start = i == 0 or pattern[i - 1] == "/"
                j = i + 2
                if at_start and (j == n or pattern[j] == "/"):
                    # "**/" matches zero or more whole directories; a trailing "**" anything.
                    if j == n:
                        out.append(".*")
                        i = j
                    else:
                        out.append("(?:.*/)?")
                        i = j + 1
                    continue
                out.append("[^/]*")
                i = j
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            j = i + 1
            if j < n and pattern[j] in "!^":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            while j < n and pattern[j] != "]":
                j += 1
            if j >= n:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1:j].replace("\\", "\\\\")
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = j
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


@lru_cache(maxsize=256)
def compile_glob(pattern: str) -> re.Pattern[str]:
    """A regex matching relative POSIX paths (no leading slash) against ``pattern``."""
    alternatives = [_translate(p.lstrip("/")) for p in expand_braces(pattern)]
    return re.compile("^(?:" + "|".join(alternatives) + ")$", re.DOTALL)


def has_magic(text: str) -> bool:
    return any(ch in text for ch in "*?[{")
