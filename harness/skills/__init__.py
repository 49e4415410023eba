"""Skills: SKILL.md packages the agent discovers, activates and obeys (docs/skills.md)."""

from harness.skills.loader import Skill, custom_root, load_skills, public_root
from harness.skills.parser import SkillMeta, SkillParseError, parse_skill_md
from harness.skills.state import SkillSet, resolve_skill_set, set_skill_state_store

__all__ = [
    "Skill", "SkillMeta", "SkillParseError", "SkillSet", "custom_root", "load_skills", "parse_skill_md",
    "public_root", "resolve_skill_set", "set_skill_state_store",
]
