"""Two changes to one user's skill at once both land: the per-(user, skill) lock keeps the
second from building on the copy the first is about to replace; and the scan's refusal of a
name the front matter does not carry leaves the skill as it was."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from harness.skills import loader
from harness.skills import manage, state
from harness.skills.manage import MemorySkillHistoryStore, SkillChangeRefused, prepare_change
from harness.tools.skill_manage import _manage

MD = "---\nname: notes\ndescription: Notes.\n---\n- one\n- two\n- three\n"


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("DEER_FLOW_HOME", str(tmp_path / "home"))
    # The harness's own in-memory ports (the app installs its database ones at startup).
    history, states = manage.get_skill_history_store(), state.get_skill_state_store()
    manage.set_skill_history_store(MemorySkillHistoryStore())
    state.set_skill_state_store(state.MemorySkillStateStore())
    loader.clear_cache()
    yield tmp_path / "home"
    manage.set_skill_history_store(history)
    state.set_skill_state_store(states)


def test_concurrent_patches_to_one_skill_both_land(home):
    runtime = SimpleNamespace(context={"user_id": "7", "thread_id": "t-1"}, config={})

    async def scenario():
        await _manage(runtime, "create", "notes", MD, None, None, None, None)
        return await asyncio.gather(*(_manage(runtime, "patch", "notes", None, None, f"- {w}", f"- {w.upper()}", None)
                                      for w in ("one", "two", "three")))

    asyncio.run(scenario())
    text = (loader.custom_root("7") / "notes" / "SKILL.md").read_text()
    assert "- ONE\n- TWO\n- THREE\n" in text
    changes = manage.get_skill_history_store().changes
    assert [c.action for c in changes] == ["create", "patch", "patch", "patch"] and {c.thread_id for c in changes} == {"t-1"}


def test_a_front_matter_naming_another_skill_is_refused(home):
    with pytest.raises(SkillChangeRefused) as refused:
        prepare_change(user_id="7", name="notes", action="create", content=MD.replace("name: notes", "name: other"))
    assert [f.rule for f in refused.value.findings] == ["name.mismatch"]
    assert not (loader.custom_root("7") / "notes").exists()
    assert not [p for p in (home / "users" / "7" / "skills").iterdir() if p.name.startswith(".staging-")]
