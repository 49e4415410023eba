"""A checkpoint serializer that decodes a large blob once per process.

Every read of a long thread decodes its message list again: the full checkpoint in full
mode, the latest snapshot in delta mode. Building hundreds of message objects is most of
what a turn of a long thread costs, and the blob is the same from turn to turn until the
next snapshot. So large blobs are decoded once and kept (bounded, least recently used);
each read gets fresh containers (dicts, lists, tuples, snapshots) around shared leaves.
Messages are never changed in place by the agent: updates replace them by id.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.serde.types import _DeltaSnapshot

MIN_CACHED_BYTES = 16 * 1024


def _container(kind: type) -> bool:
    return kind is tuple or issubclass(kind, (dict, list, _DeltaSnapshot))


def _fresh(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _fresh(v) for k, v in value.items()}
    if isinstance(value, list):
        # A snapshot's message list holds only leaves: copied in one go, not item by item.
        if not any(map(_container, set(map(type, value)))):
            return list(value)
        return [_fresh(v) for v in value]
    if isinstance(value, _DeltaSnapshot):
        return _DeltaSnapshot(_fresh(value.value))
    if type(value) is tuple:
        return tuple(_fresh(v) for v in value)
    return value


class CachingSerializer(JsonPlusSerializer):
    def __init__(self, *, max_bytes: int = 64 * 1024 * 1024, **kwargs: Any):
        super().__init__(**kwargs)
        self.max_bytes = max_bytes
        self._cache: OrderedDict[tuple, Any] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        type_, blob = data
        if type_ != "msgpack" or len(blob) < MIN_CACHED_BYTES:
            return super().loads_typed(data)
        # Bytes sampled across the blob pick its slot (hashing all of a long thread's snapshot
        # took tens of microseconds per read); the full comparison below decides, and a
        # different blob in the same slot takes it over.
        key = (len(blob), bytes(blob[::1024]), bytes(blob[-256:]))
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None and hit[0] == blob:
                self._cache.move_to_end(key)
                return _fresh(hit[1])
        value = super().loads_typed(data)
        with self._lock:
            replaced = self._cache.pop(key, None)
            if replaced is not None:
                self._bytes -= len(replaced[0])
            self._cache[key] = (bytes(blob), value)
            self._bytes += len(blob)
            while self._bytes > self.max_bytes and self._cache:
                _, (old, _) = self._cache.popitem(last=False)
                self._bytes -= len(old)
        return _fresh(value)
