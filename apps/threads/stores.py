"""The harness's sandbox container OwnershipStore on the ORM, shared by every server process.

Claims run in one transaction and lean on the table's constraints: the primary key (one
lease per container) and the unique thread key (one container per thread), so a race
between two processes ends in an IntegrityError for one of them, which reads as "not yours".
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.threads.models import SandboxContainer
from harness.sandbox.ownership import Lease, lease_live


def _ts(value: datetime) -> float:
    return value.timestamp()


def _lease(row: SandboxContainer) -> Lease:
    return Lease(row.name, row.owner, row.thread_key, _ts(row.expires_at), _ts(row.last_used))


class DjangoOwnershipStore:
    def claim(self, container: str, owner: str, thread_key: str, ttl: float) -> bool:
        now = timezone.now()
        try:
            with transaction.atomic():
                held = SandboxContainer.objects.select_for_update().filter(name=container).first()
                if held is not None and held.owner != owner and lease_live(_lease(held)):
                    return False
                if thread_key:
                    for other in SandboxContainer.objects.select_for_update().filter(thread_key=thread_key).exclude(name=container):
                        if lease_live(_lease(other)):
                            return False
                        other.delete()
                SandboxContainer.objects.update_or_create(
                    name=container,
                    defaults={"owner": owner, "thread_key": thread_key, "expires_at": now + timedelta(seconds=ttl), "last_used": now},
                )
        except IntegrityError:
            return False
        return True

    def assign(self, container: str, owner: str, thread_key: str) -> bool:
        try:
            with transaction.atomic():
                for other in SandboxContainer.objects.select_for_update().filter(thread_key=thread_key).exclude(name=container):
                    if lease_live(_lease(other)):
                        return False
                    other.delete()
                return bool(SandboxContainer.objects.filter(name=container, owner=owner).update(
                    thread_key=thread_key, last_used=timezone.now()))
        except IntegrityError:
            return False

    def for_thread(self, thread_key: str) -> Lease | None:
        row = SandboxContainer.objects.filter(thread_key=thread_key).first() if thread_key else None
        return _lease(row) if row is not None else None

    def touch(self, container: str) -> None:
        SandboxContainer.objects.filter(name=container).update(last_used=timezone.now())

    def renew(self, owner: str, ttl: float) -> None:
        SandboxContainer.objects.filter(owner=owner).update(expires_at=timezone.now() + timedelta(seconds=ttl))

    def release(self, container: str, owner: str | None = None) -> None:
        rows = SandboxContainer.objects.filter(name=container)
        if owner is not None:
            rows = rows.filter(owner=owner)
        rows.delete()

    def leases(self) -> list[Lease]:
        return [_lease(row) for row in SandboxContainer.objects.all()]

