"""SKILL.md parsing edge cases, discovery, and what the sandbox shows under /mnt/skills."""

from __future__ import annotations

import os
import time

import pytest

from harness.skills import loader
from harness.skills.loader import custom_root, load_skills
from harness.skills.parser import SkillParseError, parse_skill_md
from harness.skills.state import MemorySkillStateStore, resolve_skill_set
from tests.harness.sandbox.conftest import make_provider


def md(front: str, body: str = "Do the thing.\n") -> str:
    return f"---\n{front}---\n{body}"


def write_skill(root, folder, front, body="Steps.\n"):
    path = root / folder
    path.mkdir(parents=True, exist_ok=True)
    (path / "SKILL.md").write_text(md(front, body))
    return path


def test_full_front_matter():
    meta = parse_skill_md(md(
        "name: data-x\ndescription: >\n  Analyse data\n  files.\nlicense: MIT\nversion: 1.0\nauthor: Ann\n"
        "compatibility: python3\nallowed-tools: bash read_file\nrequired-secrets:\n  - ERP_TOKEN\n"
        "  - {name: OTHER_KEY, optional: true}\nmetadata: {x: 1}\n"
    ))
    assert (meta.name, meta.description, meta.license, meta.version, meta.author) == ("data-x", "Analyse data files.", "MIT", "1.0", "Ann")
    assert meta.allowed_tools == ("bash", "read_file")
    assert [(s.name, s.optional) for s in meta.required_secrets] == [("ERP_TOKEN", False), ("OTHER_KEY", True)]
    assert meta.body == "Do the thing.\n"


def test_allowed_tools_list_and_absent():
    assert parse_skill_md(md("name: a\ndescription: d\nallowed-tools: [bash, ls]\n")).allowed_tools == ("bash", "ls")
    assert parse_skill_md(md("name: a\ndescription: d\n")).allowed_tools is None


@pytest.mark.parametrize("text, fragment, line", [
    ("no front matter\n", "must start with", 1),
    ("---\nname: a\ndescription: d\n", "not closed", 1),
    ("---\nname: [a\ndescription: d\n---\n", "not valid YAML", None),
    (md("description: d\n"), "no 'name'", 2),
    (md("name: ../etc\ndescription: d\n"), "not valid", 2),
    (md("name: a/b\ndescription: d\n"), "not valid", 2),
    (md("name: Upper\ndescription: d\n"), "not valid", 2),
    (md("name: a\n"), "no 'description'", 2),
    (md("- just\n- a list\n"), "mapping", 2),
    (md("name: a\ndescription: d\nrequired-secrets: [\"bad name\"]\n"), "environment variable", 4),
    (md("name: a\ndescription: d\nallowed-tools: {x: 1}\n"), "allowed-tools", 4),
])
def test_bad_front_matter_is_refused_with_a_line(text, fragment, line):
    with pytest.raises(SkillParseError) as info:
        parse_skill_md(text)
    assert fragment in info.value.message
    if line is not None:
        assert info.value.line == line


def test_bom_and_crlf():
    meta = parse_skill_md("\ufeff---\r\nname: a\r\ndescription: d\r\n---\r\nbody\r\n")
    assert meta.name == "a"


@pytest.fixture
def roots(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("DEER_FLOW_HOME", str(home))
    skills = tmp_path / "skills"
    write_skill(skills / "public", "alpha", "name: alpha\ndescription: Alpha.\n")
    nested = write_skill(skills / "public", "beta", "name: beta\ndescription: Beta.\n")
    write_skill(nested / "templates", "inner", "name: inner\ndescription: Not a skill.\n")
    write_skill(skills / "public", "broken", "name: Bad Name\ndescription: x\n")
    write_skill(skills / "public" / ".hidden", "h", "name: h\ndescription: x\n")
    loader.clear_cache()
    return skills, home


def test_discovery_skips_nested_hidden_and_broken(roots):
    skills, _ = roots
    found = load_skills("alice", str(skills))
    assert [s.name for s in found] == ["alpha", "beta"]
    beta = found[1]
    assert beta.category == "public" and beta.container_path == "/mnt/skills/public/beta"
    assert beta.skill_md_path == "/mnt/skills/public/beta/SKILL.md"


def test_custom_skills_are_per_user_and_cannot_shadow_public(roots):
    skills, _ = roots
    write_skill(custom_root("alice"), "mine", "name: mine\ndescription: Alice's.\n")
    write_skill(custom_root("alice"), "alpha", "name: alpha\ndescription: Impostor.\n")
    alice = {s.name: s for s in load_skills("alice", str(skills))}
    assert alice["mine"].category == "custom" and alice["mine"].container_path == "/mnt/skills/custom/mine"
    assert alice["alpha"].category == "public"
    assert "mine" not in {s.name for s in load_skills("bob", str(skills))}


def test_parse_is_cached_until_the_directory_changes(roots, monkeypatch):
    skills, _ = roots
    calls = []
    real = loader.parse_skill_md
    monkeypatch.setattr(loader, "parse_skill_md", lambda text: calls.append(1) or real(text))
    load_skills("alice", str(skills))
    first = len(calls)
    load_skills("alice", str(skills))
    assert len(calls) == first  # unchanged: no parse
    path = skills / "public" / "alpha" / "SKILL.md"
    path.write_text(md("name: alpha\ndescription: Alpha, edited.\n"))
    os.utime(path, ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))
    assert {s.name: s for s in load_skills("alice", str(skills))}["alpha"].meta.description == "Alpha, edited."


def test_enable_state_public_default_on_user_override(roots):
    skills, _ = roots
    store = MemorySkillStateStore()
    assert [e.enabled for e in resolve_skill_set("alice", skills_path=str(skills), store=store).entries] == [True, True]
    store.set_enabled("alice", "alpha", False)
    alice = resolve_skill_set("alice", skills_path=str(skills), store=store)
    assert [s.name for s in alice.enabled()] == ["beta"]
    assert [s.name for s in resolve_skill_set("bob", skills_path=str(skills), store=store).enabled()] == ["alpha", "beta"]


@pytest.mark.parametrize("kind", ["local", "bwrap"])
def test_sandbox_sees_public_and_only_its_own_custom_skills(kind, roots):
    skills, _ = roots
    write_skill(custom_root("alice"), "mine", "name: mine\ndescription: Alice's.\n")
    write_skill(custom_root("bob"), "bobs", "name: bobs\ndescription: Bob's.\n")
    provider = make_provider(kind, skills, bash_command_timeout=20)
    sandbox = provider.get(provider.acquire("alice", "t1"))
    out = sandbox.execute_command("cat /mnt/skills/public/alpha/SKILL.md; ls /mnt/skills/custom; "
                                  "touch /mnt/skills/custom/mine/x 2>/dev/null && echo WROTE || echo READONLY").output.render()
    assert "name: alpha" in out and "mine" in out and "bobs" not in out
    if kind == "bwrap":
        assert "READONLY" in out
    assert "name: mine" in sandbox.read_file("/mnt/skills/custom/mine/SKILL.md")
    with pytest.raises(Exception):
        sandbox.write_file("/mnt/skills/custom/mine/x", "no")


def test_global_skills_are_seen_by_every_user_and_yield_to_public_and_own(roots):
    skills, _ = roots
    write_skill(loader.global_root(), "shared", "name: shared\ndescription: For everyone.\n")
    write_skill(loader.global_root(), "alpha", "name: alpha\ndescription: Global impostor.\n")
    write_skill(loader.global_root(), "mine", "name: mine\ndescription: Global mine.\n")
    write_skill(custom_root("alice"), "mine", "name: mine\ndescription: Alice's own.\n")
    alice = {s.name: s for s in load_skills("alice", str(skills))}
    bob = {s.name: s for s in load_skills("bob", str(skills))}
    for view in (alice, bob):
        assert view["shared"].category == "global" and view["shared"].container_path == "/mnt/skills/global/shared"
        assert view["alpha"].category == "public"
    # a user's own skill wins over a global one of the same name; others get the global one
    assert (alice["mine"].category, alice["mine"].meta.description) == ("custom", "Alice's own.")
    assert (bob["mine"].category, bob["mine"].container_path) == ("global", "/mnt/skills/global/mine")
    assert [s.category for s in load_skills("bob", str(skills))] == ["public", "public", "global", "global"]


@pytest.mark.parametrize("kind", ["local", "bwrap"])
def test_sandbox_sees_global_skills_read_only_for_every_user(kind, roots):
    skills, _ = roots
    write_skill(loader.global_root(), "shared", "name: shared\ndescription: For everyone.\n")
    provider = make_provider(kind, skills, bash_command_timeout=20)
    for user in ("alice", "bob"):
        sandbox = provider.get(provider.acquire(user, "t1"))
        out = sandbox.execute_command("cat /mnt/skills/global/shared/SKILL.md; ls /mnt/skills/global; "
                                      "touch /mnt/skills/global/shared/x 2>/dev/null && echo WROTE || echo READONLY").output.render()
        assert "name: shared" in out and "\nshared\n" in out
        if kind == "bwrap":  # the local provider is not isolated: only its file tools refuse
            assert "READONLY" in out
        assert "name: shared" in sandbox.read_file("/mnt/skills/global/shared/SKILL.md")
        with pytest.raises(Exception):
            sandbox.write_file("/mnt/skills/global/shared/x", "no")
    if kind == "bwrap":
        assert not (loader.global_root() / "shared" / "x").exists()
