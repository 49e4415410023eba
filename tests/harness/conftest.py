"""Harness tests run without a database: skill enable state lives in memory here, as it
does for the embedded client (the Django app installs its ORM store at startup)."""

import pytest

from harness.skills.state import MemorySkillStateStore, get_skill_state_store, set_skill_state_store


@pytest.fixture(autouse=True)
def memory_skill_state():
    previous = get_skill_state_store()
    store = MemorySkillStateStore()
    set_skill_state_store(store)
    yield store
    set_skill_state_store(previous)
