"""Skills in a real lead agent with the scripted model: the prompt block, /skill
activation, the allowed-tools policy and request-scoped secrets."""

from __future__ import annotations

import logging
import pickle

import pytest
from langchain_core.messages import ToolMessage

from harness.sandbox import reset_sandbox_provider, set_sandbox_provider
from harness.sandbox.local import LocalSandboxProvider
from harness.skills import loader
from harness.skills.loader import custom_root
from harness.testing import call, tool_reply
from harness.tools.sandbox_tools import get_sandbox_tools
from tests.harness.agents.conftest import AgentHarness, app_config

pytestmark = pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")
SECRET = "erp-7d1c0ffee5eed"


def write(root, name, front="", body="Steps for the skill.\n"):
    (root / name).mkdir(parents=True, exist_ok=True)
    (root / name / "SKILL.md").write_text(f"---\nname: {name}\ndescription: The {name} skill.\n{front}---\n{body}")


@pytest.fixture
def skills(tmp_path, monkeypatch):
    monkeypatch.setenv("DEER_FLOW_HOME", str(tmp_path / "home"))
    root = tmp_path / "skills"
    write(root / "public", "alpha", body="ALPHA-INSTRUCTIONS\n")
    write(root / "public", "narrow", "allowed-tools: [read_file]\n")
    write(root / "public", "erp", "required-secrets: [ERP_TOKEN]\n")
    loader.clear_cache()
    set_sandbox_provider(LocalSandboxProvider(skills_dir=root))
    yield root
    reset_sandbox_provider()


class SkillAgent(AgentHarness):
    async def send(self, text, secrets=None):
        config = self.config()
        context = {**config["configurable"], **({"secrets": secrets} if secrets else {})}
        return await self.graph.ainvoke({"messages": [{"role": "user", "content": text}]}, config, context=context)


def agent(script, skills):
    return SkillAgent(script, tools=get_sandbox_tools(), app=app_config(f"skills:\n  path: {skills}\n"))


def skills_block(request) -> str:
    text = request.system_text
    return text[text.index("## Skills"):]


async def test_prompt_block_lists_enabled_skills_and_is_stable_across_turns(skills, memory_skill_state):
    h = agent(["one", "two"], skills)
    await h.send("hello")
    await h.send("again")
    first, second = h.model.requests
    assert first.system_text == second.system_text
    block = skills_block(first)
    assert "- alpha: The alpha skill. (/mnt/skills/public/alpha/SKILL.md)" in block
    memory_skill_state.set_enabled("tester", "alpha", False)
    h2 = agent(["three"], skills)
    h2.user_id = "tester"
    await h2.send("hi")
    assert "alpha" not in skills_block(h2.model.requests[0]) and "narrow" in skills_block(h2.model.requests[0])


async def test_custom_skill_of_another_user_is_not_in_the_prompt(skills):
    write(custom_root("someone-else"), "private-one")
    write(custom_root("tester"), "mine")
    h = agent(["ok"], skills)
    await h.send("hello")
    block = skills_block(h.model.requests[0])
    assert "/mnt/skills/custom/mine/SKILL.md" in block and "private-one" not in block


async def test_slash_loads_skill_md_as_hidden_context(skills):
    h = agent(["done"], skills)
    await h.send("/alpha summarise the report")
    sent = h.model.requests[0].messages
    hidden = [m for m in sent if "ALPHA-INSTRUCTIONS" in str(m.content)]
    assert hidden and hidden[0].additional_kwargs.get("hide_from_ui")
    stored = h.state()["messages"]
    assert stored[0].content == "/alpha summarise the report"
    assert not any("ALPHA-INSTRUCTIONS" in str(m.content) for m in stored)


@pytest.mark.parametrize("text, fragment", [("/nope do it", "There is no skill called /nope"),
                                            ("/alpha go", "turned off")])
async def test_unknown_or_disabled_slash_answers_without_calling_the_model(skills, memory_skill_state, text, fragment):
    memory_skill_state.set_enabled("tester", "alpha", False)
    h = agent(["the model must not be called"], skills)
    result = await h.send(text)
    assert fragment in result["messages"][-1].content
    assert "/narrow" in result["messages"][-1].content
    assert h.model.requests == []


async def test_reserved_words_and_paths_are_not_skills(skills):
    h = agent(["a", "b"], skills)
    await h.send("/help")
    await h.send("/mnt/user-data/workspace has my files")
    assert len(h.model.requests) == 2
    assert not any("deerflow-context kind=\"skill\"" in str(m.content) for r in h.model.requests for m in r.messages)


async def test_allowed_tools_hide_schemas_and_refuse_execution(skills):
    h = agent([tool_reply(call("bash", description="x", command="echo hi")), "done"], skills)
    await h.send("/narrow do it")
    first = h.model.requests[0]
    assert "read_file" in first.tools and "bash" not in first.tools and "write_file" not in first.tools
    refused = [m for m in h.state()["messages"] if isinstance(m, ToolMessage)]
    assert refused and refused[0].status == "error" and "not allowed while the skill narrow is active" in refused[0].content
    # the next run without the skill gets every tool back
    h.model.script.append("free again")
    await h.send("plain question")
    assert "bash" in h.model.requests[-1].tools


async def test_reading_skill_md_activates_the_skill_for_the_run(skills):
    h = agent([tool_reply(call("read_file", description="load", path="/mnt/skills/public/narrow/SKILL.md")), "next", ], skills)
    await h.send("please work")
    assert "bash" in h.model.requests[0].tools
    assert "bash" not in h.model.requests[1].tools  # re-resolved on the next model call
    assert h.state()["skill_context"][-1]["name"] == "narrow"


ECHO = "echo token=${ERP_TOKEN:-none}; echo $ERP_TOKEN > /mnt/user-data/workspace/t.txt"


async def test_secrets_reach_bash_only_while_their_skill_is_active(skills, caplog):
    caplog.set_level(logging.DEBUG)
    h = agent([tool_reply(call("bash", description="x", command=ECHO)), "first done",
               tool_reply(call("bash", description="x", command="echo token=${ERP_TOKEN:-none}")), "second done"], skills)
    await h.send("/erp fetch invoices", secrets={"ERP_TOKEN": SECRET, "UNRELATED_KEY": "zzz-unrelated-999"})
    out = [m for m in h.state()["messages"] if isinstance(m, ToolMessage)]
    assert "token=********" in out[0].content and SECRET not in out[0].content
    assert (h.outputs.parent / "workspace" / "t.txt").read_text() == SECRET + "\n"  # it really reached the command
    await h.send("now without the skill", secrets={"ERP_TOKEN": SECRET})
    out = [m for m in h.state()["messages"] if isinstance(m, ToolMessage)]
    assert "token=none" in out[-1].content
    # never in what the model saw, the checkpoint or the logs
    assert not any(SECRET in str(m.content) for r in h.model.requests for m in r.messages)
    assert SECRET.encode() not in pickle.dumps(h.state())
    for checkpoint in h.checkpointer.list(h.config()):
        assert SECRET not in repr(checkpoint.checkpoint)
    assert SECRET not in caplog.text


async def test_unrelated_secret_never_reaches_bash(skills):
    h = agent([tool_reply(call("bash", description="x", command="echo other=${UNRELATED_KEY:-none}")), "done"], skills)
    await h.send("/erp go", secrets={"ERP_TOKEN": SECRET, "UNRELATED_KEY": "zzz-unrelated-999"})
    out = [m for m in h.state()["messages"] if isinstance(m, ToolMessage)]
    assert "other=none" in out[0].content


async def test_deferred_discovery_lists_names_and_describe_skill_searches(skills):
    h = SkillAgent([tool_reply(call("describe_skill", query="select:alpha,erp")), tool_reply(call("describe_skill", query="+nar")),
                    "done"], tools=get_sandbox_tools(), app=app_config(f"skills:\n  path: {skills}\n  deferred_discovery: true\n"))
    await h.send("what can you do")
    block = skills_block(h.model.requests[0])
    assert "Enabled skills: alpha, erp, narrow" in block and "The alpha skill." not in block
    assert "describe_skill" in h.model.requests[0].tools
    out = [m.content for m in h.state()["messages"] if isinstance(m, ToolMessage)]
    assert "- alpha: The alpha skill. (read /mnt/skills/public/alpha/SKILL.md)" in out[0] and "erp" in out[0]
    assert "narrow" in out[1] and "alpha" not in out[1]


async def test_global_skill_is_in_every_users_prompt_and_slash_starts_it(skills):
    write(loader.global_root(), "team-way", body="TEAM-WAY-INSTRUCTIONS\n")
    for user in ("tester", "someone-else"):
        h = agent(["ok"], skills)
        h.user_id = user
        await h.send("hello")
        assert "- team-way: The team-way skill. (/mnt/skills/global/team-way/SKILL.md)" in skills_block(h.model.requests[0])
    h = agent(["done"], skills)
    await h.send("/team-way do it")
    assert any("TEAM-WAY-INSTRUCTIONS" in str(m.content) for m in h.model.requests[0].messages)
