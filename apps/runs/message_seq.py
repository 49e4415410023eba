"""A run's stamper: ``deerflow_seq`` on the messages of its root ``values`` frames.

The messages a run's frames carry from before the run are in the journal already; a client that
reloads mid-run merges the frames with the feed and needs their seqs (``harness/runtime/
message_seq.py`` says why). Looking them up per frame would be a query per model step, so the
stamper remembers: identities it resolved, identities the feed does not hold, and the run's own
messages (journaled by this run as it goes, so not in the feed when the frame is sent: a client
appends them at the tail, which is where they belong). In practice one lookup per run, at its
first frame; another only when a frame brings messages nobody has seen (a rewritten history).
Subgraph frames are not stamped: a subagent's messages are not in this thread's feed.
"""

from __future__ import annotations

import logging
from typing import Any

from apps.runs.runtime import database_sync_to_async
from apps.runs.selectors import message_seqs
from harness.runtime.message_seq import identities, message_identity, stamp_messages

logger = logging.getLogger(__name__)


class SeqStamper:
    def __init__(self, thread_id: str) -> None:
        self.thread_id = thread_id
        self.seqs: dict[str, int] = {}
        self.absent: set[str] = set()

    def own(self, messages: list[Any]) -> None:
        """Messages this run journals: never looked up."""
        for message in messages:
            identity = message_identity(message)
            if identity is not None and identity not in self.seqs:
                self.absent.add(identity)

    async def stamp(self, payload: Any) -> Any:
        messages = payload.get("messages") if isinstance(payload, dict) else None
        if not isinstance(messages, list) or not messages:
            return payload
        names = identities(messages)
        unknown = {i for i in names if i is not None and i not in self.seqs and i not in self.absent}
        if unknown:
            try:
                found = await database_sync_to_async(message_seqs)(thread_id=self.thread_id, identities=unknown)
            except Exception:  # placement is an aid: a frame without it still goes out
                logger.warning("Could not look up message seqs for thread %s", self.thread_id, exc_info=True)
                found = {}
            self.seqs.update(found)
            self.absent |= unknown - found.keys()
        if not self.seqs:
            return payload
        return {**payload, "messages": stamp_messages(messages, self.seqs, names)}
