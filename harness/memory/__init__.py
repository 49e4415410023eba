"""Long-term memory: what the agent learns about each user (per agent bucket).

The harness owns the shapes (:mod:`.types`), the storage port (:class:`MemoryStore`, with a
file implementation for the embedded client), the updater that turns one model call into a
checked set of changes, the debounced queue, and the injection text. ``apps/memory`` stores
the same shapes on the ORM.
"""

from harness.memory.types import SUMMARY_KEYS, Fact, MemoryDoc, RevisionConflict
from harness.memory.store import FileMemoryStore, MemoryStore

__all__ = ["SUMMARY_KEYS", "Fact", "FileMemoryStore", "MemoryDoc", "MemoryStore", "RevisionConflict"]
