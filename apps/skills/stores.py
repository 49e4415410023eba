"""The harness's skill-state port on the ORM (``harness.skills.state.SkillStateStore``)."""

from __future__ import annotations

from apps.skills.models import SkillState


class OrmSkillStateStore:
    def enabled_overrides(self, user_id: str) -> dict[str, bool]:
        rows = SkillState.objects.filter(owner__isnull=True).values_list("name", "enabled")
        result = dict(rows)
        if str(user_id).isdigit():
            result.update(SkillState.objects.filter(owner_id=int(user_id)).values_list("name", "enabled"))
        return result

    def set_enabled(self, user_id: str, name: str, enabled: bool) -> None:
        SkillState.objects.update_or_create(owner_id=int(user_id), name=name, defaults={"enabled": bool(enabled)})
