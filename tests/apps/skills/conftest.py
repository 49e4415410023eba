import os
from pathlib import Path

import pytest
import yaml

from harness.skills import loader


@pytest.fixture
def public_skills(tmp_path, monkeypatch):
    """A config whose skills.path holds two public skills (the real loader reads it)."""
    # Each test its own data home: user ids repeat between tests, skill folders must not.
    monkeypatch.setenv("DEER_FLOW_HOME", str(tmp_path / "home"))
    root = tmp_path / "skills"
    for name in ("alpha", "beta"):
        (root / "public" / name).mkdir(parents=True)
        (root / "public" / name / "SKILL.md").write_text(f"---\nname: {name}\ndescription: The {name} skill.\n---\nBody of {name}.\n")
    base = yaml.safe_load(Path(os.environ["DEER_FLOW_CONFIG_PATH"]).read_text())
    base["skills"] = {"path": str(root)}
    path = tmp_path / "config-skills.yaml"
    path.write_text(yaml.safe_dump(base))
    monkeypatch.setenv("DEER_FLOW_CONFIG_PATH", str(path))
    loader.clear_cache()
    return root
