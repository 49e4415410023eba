"""How large a thread's metadata may be, and how much of it a list response carries.

The measure is compact UTF-8 JSON (``{"a":1}`` is 7 bytes), close to what a client sends.
Writes (create, patch, branch) are refused over ``DEERFLOW_MAX_THREAD_METADATA`` (413); a
thread already over it (written before the limit) may still be patched as long as the patch
does not make it larger, and is read whole by ``GET /threads/{id}``. A search page carries each
thread's metadata whole while it fits the limit and the page's budget (:data:`PAGE_THREADS`
threads' worth); past either, the thread's keys that do not fit are left out and the thread is
marked ``metadata_truncated``.
"""

from __future__ import annotations

import json

from django.conf import settings

from apps.errors import PayloadTooLarge

# A search page carries at most this many threads' worth of metadata (6.4 MB at the default
# limit), however large its ``limit``.
PAGE_THREADS = 100


def metadata_limit() -> int:
    return settings.DEERFLOW_MAX_THREAD_METADATA


def metadata_size(metadata: dict) -> int:
    """Bytes of the metadata as compact UTF-8 JSON: the measure of DEERFLOW_MAX_THREAD_METADATA."""
    return len(json.dumps(metadata, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass"))


def check_metadata_size(metadata: dict, *, before: dict | None = None, what: str = "thread metadata") -> None:
    """PayloadTooLarge when ``metadata`` is over the limit. With ``before`` (the stored value a
    patch replaces), a thread already over the limit from before it was set may still be
    written as long as it does not grow."""
    limit = metadata_limit()
    size = metadata_size(metadata)
    if size <= limit:
        return
    message = f"{what} would be {size} bytes of JSON; the limit is {limit} bytes (DEERFLOW_MAX_THREAD_METADATA)"
    if before is not None:
        was = metadata_size(before)
        if size <= was:
            return
        if was > limit:
            message += (f". This thread's metadata is already {was} bytes, from before the limit: remove keys "
                        "(set them to null) to make it smaller")
    raise PayloadTooLarge(message)


def metadata_within(metadata, allowance: int) -> tuple[dict, bool]:
    """``metadata`` if it fits in ``allowance`` bytes; otherwise the keys that fit, in order
    (a large value is skipped, the small keys after it kept), and True."""
    if not isinstance(metadata, dict):
        return (metadata, False) if metadata_size(metadata) <= allowance else ({}, True)
    if metadata_size(metadata) <= allowance:
        return metadata, False
    kept: dict = {}
    used = 2  # {}
    for key, value in metadata.items():
        if isinstance(value, str) and len(value) > allowance:
            continue  # cannot fit: skip without encoding it
        item = metadata_size({key: value}) - 2 + (1 if kept else 0)  # less the braces, plus a comma
        if used + item <= allowance:
            kept[key] = value
            used += item
    return kept, True
