"""JSON from clients, refused at the door unless it can be stored and read back.

Two kinds of JSON parse fine in Python and break later:

- strings holding a lone UTF-16 surrogate (``"\\ud800"``): they are stored (JSONField escapes
  them) but cannot be encoded as UTF-8, so every page that lists the row fails;
- values nested thousands deep: the parser, the serializers or the checkpointer recurse until
  RecursionError.

``load_json`` (for the websocket) and ``StrictJSONParser`` (every DRF view) refuse both with
InvalidRequest (422) naming where; the depth limit is DEERFLOW_MAX_JSON_DEPTH.
"""

from __future__ import annotations

import json
from typing import Any

from rest_framework.parsers import JSONParser
from rest_framework.renderers import JSONRenderer



def _invalid(detail: str) -> Exception:
    # Imported late: DRF imports this module (DEFAULT_PARSER_CLASSES) while rest_framework.views,
    # which deerflow_site.errors needs, is still initialising.
    from apps.errors import InvalidRequest

    return InvalidRequest(detail)


def _max_depth() -> int:
    from django.conf import settings

    return settings.DEERFLOW_MAX_JSON_DEPTH


def _is_text(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_json_value(data: Any, *, max_depth: int | None = None) -> Any:
    """``data`` unchanged, or InvalidRequest naming the first place that cannot be stored."""
    limit = _max_depth() if max_depth is None else max_depth
    stack: list[tuple[Any, str, int]] = [(data, "", 1)]
    while stack:
        value, where, depth = stack.pop()
        if isinstance(value, str):
            if not _is_text(value):
                raise _invalid(f"{where or 'the body'}: the text holds a lone UTF-16 surrogate (like \\ud800), which is not valid Unicode")
        elif isinstance(value, (dict, list)):
            if depth > limit:
                raise _invalid(f"{where or 'the body'}: JSON is nested deeper than {limit} levels")
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for key, item in items:
                path = f"{where}.{key}" if isinstance(value, dict) and where else (str(key) if isinstance(value, dict) else f"{where}[{key}]")
                if isinstance(key, str) and not _is_text(key):
                    raise _invalid(f"{where or 'the body'}: a key holds a lone UTF-16 surrogate (like \\ud800), which is not valid Unicode")
                stack.append((item, path, depth + 1))
    return data


def load_json(text: str | bytes) -> Any:
    try:
        data = json.loads(text)
    except RecursionError:
        raise _invalid(f"JSON is nested deeper than {_max_depth()} levels") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise _invalid(f"the body is not valid JSON: {exc}") from None
    return check_json_value(data)


class StrictJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        raw = stream.read() if stream is not None else b""
        if not raw:
            return None
        return load_json(raw)


def _scrubbed(data: Any) -> Any:
    if isinstance(data, str):
        return data if _is_text(data) else "".join("\ufffd" if 0xD800 <= ord(ch) <= 0xDFFF else ch for ch in data)
    if isinstance(data, dict):
        return {_scrubbed(k): _scrubbed(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [_scrubbed(v) for v in data]
    return data


class SafeJSONRenderer(JSONRenderer):
    """DRF's renderer, except that text stored before the door was closed (a lone surrogate in
    an old row) is shown as U+FFFD instead of failing the whole response: one bad row must
    never take a list down."""

    def render(self, data, accepted_media_type=None, renderer_context=None):
        try:
            return super().render(data, accepted_media_type, renderer_context)
        except UnicodeEncodeError:
            return super().render(_scrubbed(data), accepted_media_type, renderer_context)
