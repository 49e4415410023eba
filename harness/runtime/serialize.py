"""Turning LangGraph/LangChain objects into the JSON the wire carries.

Messages become LangChain ``model_dump()`` dicts; LangGraph's private ``__pregel_*`` keys
are dropped and ``__interrupt__`` is kept, as LangGraph Platform does.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import enum
import uuid
from collections.abc import Mapping
from typing import Any

from langchain_core.messages import BaseMessage, BaseMessageChunk
from pydantic import BaseModel

# model_dump() of each message a values event carries, kept: every step of a run sends the
# whole list again, and a long thread's older messages are the same objects from run to run
# (harness/runtime/serde_cache.py). Messages are not changed in place once in the state.
# Keyed by id() with the object kept alive, so an id is never reused while its entry lives.
_DUMPED_MAX = 20_000
_dumped: dict[int, tuple[BaseMessage, dict]] = {}


def _dump_message(message: BaseMessage) -> dict:
    if isinstance(message, BaseMessageChunk):  # a streamed piece: seen once
        return message.model_dump()
    hit = _dumped.get(id(message))
    if hit is not None and hit[0] is message:
        return dict(hit[1])
    dumped = message.model_dump()
    if len(_dumped) >= _DUMPED_MAX:
        _dumped.clear()
    _dumped[id(message)] = (message, dumped)
    return dict(dumped)


def to_jsonable(obj: Any) -> Any:
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    if isinstance(obj, BaseMessage):
        return _dump_message(obj)
    if isinstance(obj, BaseModel):
        return to_jsonable(obj.model_dump())
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v) for k, v in obj.items() if not str(k).startswith("__pregel_")}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [to_jsonable(v) for v in obj]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return to_jsonable({f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)})
    if isinstance(obj, (dt.datetime, dt.date, dt.time)):
        return obj.isoformat()
    if isinstance(obj, uuid.UUID):
        return str(obj)
    if isinstance(obj, enum.Enum):
        return to_jsonable(obj.value)
    if isinstance(obj, bytes):
        return base64.b64encode(obj).decode("ascii")
    if hasattr(obj, "_asdict"):
        return to_jsonable(obj._asdict())
    # Interrupt objects and other plain classes: their public attributes.
    if hasattr(obj, "__dict__"):
        return {k: to_jsonable(v) for k, v in vars(obj).items() if not k.startswith("_")}
    return str(obj)


def serialize_values(values: Any) -> Any:
    return to_jsonable(values) if values is not None else {}
