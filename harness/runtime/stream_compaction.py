"""How a run's older stream events are kept without losing any: fewer objects, the same result.

A client that resumes a stream (``Last-Event-ID``) must get everything after its id for as long
as the run is retained, and a real answer is thousands of ``messages`` chunks. Keeping each as
its own dict cost about a kilobyte apiece, so the bridges used to keep the newest 256 and answer
older cursors with a ``gap``. Instead, once events fall out of a bridge's recent window they are
*compacted* into segments that replay to the same result:

- consecutive token chunks of one message (same event name, same metadata, alike but for their
  text) become one text run: the joined text plus, per original event, its id and where its text
  ends. A cursor inside the run replays one chunk carrying the rest of the text, with the id of
  the run's last event, so text reassembled by concatenation (what every client does) is exact;
- a ``values`` event followed, in the same batch, by another ``values`` event of the same name
  is dropped: ``values`` is the whole state, and the later one supersedes it;
- everything else is kept as it was.

A text run's cost is its text plus 24 bytes per original event, so what a run retains grows
with what it said, not with how many pieces it was sent in. The memory bridge and the Redis
bridge compact with the same functions; segments have a JSON form for Redis.

A ``lost`` segment stands for events a bridge had to drop past its safety cap: a cursor before
its end gets the ``gap`` it always got.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Union

from langchain_core.messages import AIMessageChunk

from harness.runtime.serialize import to_jsonable
from harness.runtime.stream_items import StreamItem

_ID_RE = re.compile(r"(\d{1,20})-(\d{1,20})")

Key = tuple[int, int]


def id_key(event_id: str | None) -> Key | None:
    """An event id (``<ms>-<n>``) as a comparable pair; None for anything else."""
    if not event_id:
        return None
    match = _ID_RE.fullmatch(event_id)
    return (int(match[1]), int(match[2])) if match else None


def fmt_key(key: Key) -> str:
    return f"{key[0]}-{key[1]}"


@dataclass
class Verbatim:
    item: StreamItem

    @property
    def first(self) -> Key:
        return id_key(self.item.id)  # type: ignore[return-value]

    last = first


@dataclass
class TextRun:
    """Token chunks of one message. ``template`` is the first chunk with its text taken out;
    ``field`` says where the text goes: the message's ``content`` or its one tool call chunk's
    ``args``. ``ids`` holds ms and n of each original event, interleaved; ``ends[i]`` is where
    event i's text ends in ``text``."""

    event: str
    template: dict
    meta: Any
    field: str
    text: str
    ids: array = field(default_factory=lambda: array("q"))
    ends: array = field(default_factory=lambda: array("q"))

    @property
    def first(self) -> Key:
        return (self.ids[0], self.ids[1])

    @property
    def last(self) -> Key:
        return (self.ids[-2], self.ids[-1])

    def __len__(self) -> int:
        return len(self.ends)

    def key(self, index: int) -> Key:
        return (self.ids[2 * index], self.ids[2 * index + 1])

    def item_after(self, cursor: Key | None) -> StreamItem | None:
        """One chunk with the text of every event after ``cursor``; None when there is none."""
        start = 0
        if cursor is not None:
            lo, hi = 0, len(self)
            while lo < hi:  # the first event whose id is above the cursor
                mid = (lo + hi) // 2
                if self.key(mid) <= cursor:
                    lo = mid + 1
                else:
                    hi = mid
            start = lo
        if start >= len(self):
            return None
        offset = self.ends[start - 1] if start else 0
        return StreamItem(self.event, [_with_text(self.template, self.field, self.text[offset:]), self.meta], fmt_key(self.last))


@dataclass
class Lost:
    """Events dropped past a bridge's safety cap: ids from ``first`` to ``last``."""

    first: Key
    last: Key


Segment = Union[Verbatim, TextRun, Lost]


# -- compacting ------------------------------------------------------------------------------

def _text_of(item: StreamItem) -> tuple[str, str, dict] | None:
    """(field, text, template) for a token chunk that may join a text run; None otherwise."""
    if not item.event.startswith("messages"):
        return None
    data = item.data
    if not isinstance(data, (list, tuple)) or len(data) != 2 or not isinstance(data[0], dict):
        return None
    chunk = data[0]
    if chunk.get("type") != "AIMessageChunk" or not isinstance(chunk.get("content"), str):
        return None
    tool_chunks = chunk.get("tool_call_chunks") or []
    if not tool_chunks:
        if chunk.get("tool_calls") or chunk.get("invalid_tool_calls"):
            return None
        return "content", chunk["content"], {**chunk, "content": ""}
    if len(tool_chunks) != 1 or chunk["content"]:
        return None
    tool = tool_chunks[0]
    # Only continuation pieces (no name, no id) join: the first piece names the call.
    if not isinstance(tool, dict) or tool.get("name") or tool.get("id") or not isinstance(tool.get("args"), str):
        return None
    template = {**chunk, "tool_call_chunks": [{**tool, "args": ""}], "tool_calls": None, "invalid_tool_calls": None}
    return "args", tool["args"], template


def _with_text(template: dict, field_name: str, text: str) -> dict:
    if field_name == "content":
        return {**template, "content": text}
    tool = {**template["tool_call_chunks"][0], "args": text}
    calls, invalid = _parsed_tool_calls(tool)
    return {**template, "tool_call_chunks": [tool], "tool_calls": calls, "invalid_tool_calls": invalid}


def _parsed_tool_calls(tool: dict) -> tuple[list, list]:
    """What an AIMessageChunk derives from a tool call chunk, as its JSON form carries it."""
    chunk = AIMessageChunk(content="", tool_call_chunks=[{k: tool.get(k) for k in ("name", "args", "id", "index")}])
    return to_jsonable(chunk.tool_calls), to_jsonable(chunk.invalid_tool_calls)


def compact(items: Iterable[StreamItem]) -> list[Segment]:
    """Segments that replay ``items`` (in order, ids ascending) to the same result."""
    items = list(items)
    last_values: dict[str, int] = {}
    for index, item in enumerate(items):
        if item.event.startswith("values"):
            last_values[item.event] = index
    segments: list[Segment] = []
    run: TextRun | None = None
    pieces: list[str] = []

    def close() -> None:
        nonlocal run
        if run is not None:
            run.text = "".join(pieces)
            pieces.clear()
            run = None

    for index, item in enumerate(items):
        if item.event.startswith("values") and last_values[item.event] != index:
            continue  # superseded by a later state in this batch
        text = _text_of(item)
        key = id_key(item.id)
        if text is None or key is None:
            close()
            segments.append(Verbatim(item))
            continue
        field_name, piece, template = text
        meta = item.data[1]
        if run is None or run.event != item.event or run.field != field_name or run.template != template \
                or not (run.meta is meta or run.meta == meta):
            close()
            run = TextRun(item.event, template, meta, field_name, "")
            segments.append(run)
        pieces.append(piece)
        run.ids.extend(key)
        run.ends.append((run.ends[-1] if len(run.ends) else 0) + len(piece))
    close()
    # A run of one chunk saves nothing: keep that event as it was.
    return [Verbatim(_single(s)) if isinstance(s, TextRun) and len(s) == 1 else s for s in segments]


def _single(run: TextRun) -> StreamItem:
    item = run.item_after(None)
    assert item is not None
    return item


def replay(segments: Iterable[Segment], cursor: Key | None) -> Iterator[StreamItem | Lost]:
    """What ``segments`` hold after ``cursor`` (everything when None), in order. A ``Lost``
    segment that covers ids after the cursor is yielded as it is: the caller turns it into a gap."""
    for segment in segments:
        if cursor is not None and segment.last <= cursor:
            continue
        if isinstance(segment, Verbatim):
            yield segment.item
        elif isinstance(segment, TextRun):
            item = segment.item_after(cursor)
            if item is not None:
                yield item
        else:
            yield segment


def count_events(segments: Iterable[Segment]) -> int:
    return sum(len(s) if isinstance(s, TextRun) else 1 for s in segments)


# -- the JSON form (Redis) -------------------------------------------------------------------

def to_json(segment: Segment) -> dict:
    if isinstance(segment, Verbatim):
        item = segment.item
        return {"k": "item", "event": item.event, "data": item.data, "id": item.id}
    if isinstance(segment, TextRun):
        return {"k": "text", "event": segment.event, "template": segment.template, "meta": segment.meta,
                "field": segment.field, "text": segment.text, "ids": segment.ids.tolist(), "ends": segment.ends.tolist()}
    return {"k": "lost", "first": fmt_key(segment.first), "last": fmt_key(segment.last)}


def from_json(value: dict) -> Segment:
    kind = value.get("k")
    if kind == "item":
        return Verbatim(StreamItem(value["event"], value.get("data"), value["id"]))
    if kind == "text":
        return TextRun(value["event"], value["template"], value.get("meta"), value["field"], value["text"],
                       array("q", value["ids"]), array("q", value["ends"]))
    return Lost(id_key(value["first"]), id_key(value["last"]))  # type: ignore[arg-type]
