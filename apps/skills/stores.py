"""The harness's skill-state port on the ORM (``harness.skills.state.SkillStateStore``).

Every run reads the user's on/off choices; they change rarely. So they are read in one query
and kept per user for ``settings.SKILL_STATE_CACHE_SECONDS`` (2 s), and dropped at once when
this process saves or deletes a choice (signals). Another server process sees a change within
that time. (The test settings set 0: the suite flushes tables without signals.)
"""

from __future__ import annotations

import threading
import time

from django.conf import settings
from django.db.models import Q
from django.db.models.signals import post_delete, post_save

from apps.skills.models import SkillRevision, SkillState
from apps.skills.selectors import skill_history, skill_reviews
from harness.skills.manage import SkillChange

class OrmSkillStateStore:
    def __init__(self) -> None:
        self._cache: dict[str, tuple[float, dict[str, bool]]] = {}
        self._lock = threading.Lock()
        post_save.connect(self._forget, sender=SkillState, weak=False)
        post_delete.connect(self._forget, sender=SkillState, weak=False)

    def _forget(self, **_: object) -> None:
        with self._lock:
            self._cache.clear()

    def enabled_overrides(self, user_id: str) -> dict[str, bool]:
        now = time.monotonic()
        with self._lock:
            hit = self._cache.get(user_id)
        if hit is not None and now - hit[0] < getattr(settings, "SKILL_STATE_CACHE_SECONDS", 2.0):
            return dict(hit[1])
        owner = Q(owner_id=int(user_id)) if str(user_id).isdigit() else Q(pk__in=[])
        rows = SkillState.objects.filter(Q(owner__isnull=True) | owner).values_list("owner_id", "name", "enabled", "held")
        everyone = {name: enabled for owner_id, name, enabled, _ in rows if owner_id is None}
        mine = {name: enabled for owner_id, name, enabled, _ in rows if owner_id is not None}
        # A global skill held by its install scan stays off for everyone until an admin lifts
        # the hold: a user's older choice about that name does not turn it on.
        held = {name: False for owner_id, name, _, is_held in rows if owner_id is None and is_held}
        result = {**everyone, **mine, **held}
        with self._lock:
            if len(self._cache) > 10_000:
                self._cache.clear()
            self._cache[user_id] = (now, result)
        return dict(result)

    def set_enabled(self, user_id: str, name: str, enabled: bool) -> None:
        SkillState.objects.update_or_create(owner_id=int(user_id), name=name, defaults={"enabled": bool(enabled)})

    def reviews(self, user_id: str, skills: list) -> dict[str, tuple[bool, list]]:
        return skill_reviews(owner_id=user_id, skills=skills)

    def forget(self, user_id: str, name: str) -> None:
        """A fresh install starts on again: the user's older choice about the name goes."""
        if str(user_id).isdigit():
            SkillState.objects.filter(owner_id=int(user_id), name=name).delete()


class OrmSkillHistoryStore:
    """The harness's ``SkillHistoryStore``: each ``skill_manage`` change is a ``SkillRevision``."""

    def record(self, change: SkillChange) -> None:
        SkillRevision.objects.create(
            owner_id=int(change.user_id), name=change.name, action=change.action, file_path=change.file_path,
            thread_id=change.thread_id or "", prev_content=change.prev_content, new_content=change.new_content,
            findings=change.findings, moderation=change.moderation)

    def history(self, user_id: str, name: str) -> list[dict]:
        return skill_history(user=int(user_id), name=name) if str(user_id).isdigit() else []
