"""Who owns which sandbox container: the store port, its in-memory implementation, liveness.

A container belongs to one server process (its *owner*) at a time, for a lease the owner
renews while it lives, like a run's lease. Claiming is atomic in the store, so two server
processes never take the same container: a warm one, or a thread's. A lease that lapsed,
or whose owner is a dead process on this host, may be taken over or cleaned up.

The server installs the ORM store (``apps.threads.stores``) so every process sees the same
leases; the in-memory store serves the embedded client, a single process.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Lease:
    container: str  # the engine's container name
    owner: str
    thread_key: str  # "user:thread", or "" while the container waits in the warm pool
    expires_at: float  # unix time
    last_used: float


class OwnershipStore(Protocol):
    def claim(self, container: str, owner: str, thread_key: str, ttl: float) -> bool:
        """Take ``container`` for ``owner`` when nobody holds it or its lease lapsed or its owner is dead."""

    def assign(self, container: str, owner: str, thread_key: str) -> bool:
        """Give an owned warm container to a thread, unless another container already serves it."""

    def for_thread(self, thread_key: str) -> Lease | None:
        """The lease of the container serving this thread, if any."""

    def touch(self, container: str) -> None:
        """Record a use (idle timing)."""

    def renew(self, owner: str, ttl: float) -> None:
        """Extend every lease of ``owner``."""

    def release(self, container: str, owner: str | None = None) -> None:
        """Forget the lease (only ``owner``'s, when given)."""

    def leases(self) -> list[Lease]:
        """Every lease, live or not."""


def _process_start(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        return fields[19].decode()
    except (OSError, IndexError):
        return None


_HOST = socket.gethostname()


def new_owner_id() -> str:
    """host:pid:start-time:random, so a recycled pid never passes for the old owner."""
    pid = os.getpid()
    return f"{_HOST}:{pid}:{_process_start(pid) or '0'}:{uuid.uuid4().hex[:8]}"


def owner_dead(owner: str) -> bool:
    """True only when the owner is known dead: a process of this host that no longer runs."""
    parts = owner.split(":")
    if len(parts) != 4 or parts[0] != _HOST or not parts[1].isdigit():
        return False
    return _process_start(int(parts[1])) != parts[2]


def lease_live(lease: Lease, now: float | None = None) -> bool:
    return lease.expires_at > (now if now is not None else time.time()) and not owner_dead(lease.owner)


class MemoryOwnershipStore:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rows: dict[str, Lease] = {}

    def claim(self, container: str, owner: str, thread_key: str, ttl: float) -> bool:
        now = time.time()
        with self._lock:
            held = self._rows.get(container)
            if held is not None and held.owner != owner and lease_live(held, now):
                return False
            if thread_key and any(r.thread_key == thread_key and r.container != container and lease_live(r, now)
                                  for r in self._rows.values()):
                return False
            self._rows[container] = Lease(container, owner, thread_key, now + ttl, now)
            return True

    def assign(self, container: str, owner: str, thread_key: str) -> bool:
        now = time.time()
        with self._lock:
            held = self._rows.get(container)
            if held is None or held.owner != owner:
                return False
            if any(r.thread_key == thread_key and r.container != container and lease_live(r, now) for r in self._rows.values()):
                return False
            self._rows[container] = Lease(container, owner, thread_key, held.expires_at, now)
            return True

    def for_thread(self, thread_key: str) -> Lease | None:
        with self._lock:
            return next((r for r in self._rows.values() if r.thread_key == thread_key), None)

    def touch(self, container: str) -> None:
        with self._lock:
            held = self._rows.get(container)
            if held is not None:
                self._rows[container] = Lease(held.container, held.owner, held.thread_key, held.expires_at, time.time())

    def renew(self, owner: str, ttl: float) -> None:
        expires = time.time() + ttl
        with self._lock:
            for name, held in list(self._rows.items()):
                if held.owner == owner:
                    self._rows[name] = Lease(held.container, owner, held.thread_key, expires, held.last_used)

    def release(self, container: str, owner: str | None = None) -> None:
        with self._lock:
            held = self._rows.get(container)
            if held is not None and (owner is None or held.owner == owner):
                del self._rows[container]

    def leases(self) -> list[Lease]:
        with self._lock:
            return list(self._rows.values())


_store_lock = threading.Lock()
_store: OwnershipStore | None = None


def set_ownership_store(store: OwnershipStore | None) -> None:
    global _store
    with _store_lock:
        _store = store


def get_ownership_store() -> OwnershipStore:
    global _store
    with _store_lock:
        if _store is None:
            _store = MemoryOwnershipStore()
        return _store
