"""The embedded console runs without a database, as on a laptop with no server: the skill
state lives in memory here (the Django app installs its ORM store at startup)."""

import pytest

from harness.skills.state import MemorySkillStateStore, get_skill_state_store, set_skill_state_store


@pytest.fixture
def memory_skill_state():
    previous = get_skill_state_store()
    set_skill_state_store(MemorySkillStateStore())
    yield
    set_skill_state_store(previous)
