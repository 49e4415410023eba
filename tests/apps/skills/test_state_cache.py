"""Skill on/off choices are cached per user between runs, and a change is seen at once."""

import pytest

from apps.skills.models import SkillState
from harness.skills.state import _store

pytestmark = pytest.mark.django_db


def test_choices_are_read_once_and_a_change_drops_them(user, settings, django_assert_num_queries):
    settings.SKILL_STATE_CACHE_SECONDS = 60
    SkillState.objects.create(owner=None, name="deep-research", enabled=False)
    SkillState.objects.create(owner=user, name="deep-research", enabled=True)
    SkillState.objects.create(owner=user, name="slide-deck", enabled=False)
    with django_assert_num_queries(1):
        assert _store.enabled_overrides(str(user.pk)) == {"deep-research": True, "slide-deck": False}
        assert _store.enabled_overrides(str(user.pk)) == {"deep-research": True, "slide-deck": False}
    SkillState.objects.filter(owner=user, name="slide-deck").update(enabled=True)  # no signal: still cached
    assert _store.enabled_overrides(str(user.pk))["slide-deck"] is False
    SkillState.objects.filter(owner=user, name="deep-research").delete()
    assert _store.enabled_overrides(str(user.pk)) == {"deep-research": False, "slide-deck": True}
