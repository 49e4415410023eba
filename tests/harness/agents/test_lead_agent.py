"""The assembled lead agent: prompt caching, chain order, options and loud failures."""

import pytest

from harness.agents.lead_agent import LeadAgentOptions, build_middlewares, make_lead_agent
from harness.agents.lead_agent.agent import ExtensionMiddlewareError, load_extension_middlewares
from harness.models import UnknownModelError
from harness.testing import Reply

from .conftest import app_config


async def test_system_prompt_is_byte_identical_across_turns_and_date_goes_to_first_user_message(agent_factory):
    h = agent_factory(["first answer", "second answer"])
    await h.send("hello")
    await h.send("and again")
    first, second = h.model.requests
    assert first.messages[0].type == "system" and second.messages[0].type == "system"
    assert first.messages[0].content == second.messages[0].content
    assert "Today's date" not in first.messages[0].content
    # per-turn facts ride in the first user message, only in the request
    assert "Today's date" in first.messages[1].content and first.messages[1].content.endswith("hello")
    assert second.messages[1].content == first.messages[1].content
    stored = h.state()["messages"][0]
    assert stored.content == "hello"


def test_chain_order_is_the_documented_one():
    app = app_config()
    chain = build_middlewares(LeadAgentOptions(is_plan_mode=True), app=app, entry=app.models[0], model=None)
    names = [type(m).__name__ for m in chain]
    assert names == [
        "RunSetupMiddleware", "ToolCallOrderMiddleware", "ToolOutputBudgetMiddleware", "RemoteContentSanitizationMiddleware", "DanglingToolCallMiddleware",
        "LLMErrorHandlingMiddleware", "ReadBeforeWriteMiddleware", "ToolErrorHandlingMiddleware", "SandboxAuditMiddleware",
        "DynamicContextMiddleware", "SkillsMiddleware", "PlanTodoMiddleware", "TokenUsageMiddleware", "TitleMiddleware",
        "ViewImageMiddleware", "SystemMessageCoalescingMiddleware", "LoopDetectionMiddleware",
        "TokenBudgetMiddleware", "TerminalResponseMiddleware", "SafetyFinishReasonMiddleware", "LengthFinishReasonMiddleware", "ClarificationMiddleware",
        "ToolSchemaCacheMiddleware",
    ]
    # the run's setup hooks, in the order they run, as one graph step
    assert [type(m).__name__ for m in chain[0].parts] == [
        "InputSanitizationMiddleware", "ThreadDataMiddleware", "UploadsMiddleware", "SandboxMiddleware", "SkillSetSnapshot"]
    assert chain[0].parts[-1].skills is chain[names.index("SkillsMiddleware")]  # resolves the set the chain's skills use
    without_plan = [type(m).__name__ for m in build_middlewares(LeadAgentOptions(), app=app, entry=app.models[0], model=None)]
    assert "PlanTodoMiddleware" not in without_plan and without_plan[-2:] == ["ClarificationMiddleware", "ToolSchemaCacheMiddleware"]


def test_guardrails_sit_right_after_the_approval_gate():
    app = app_config("approvals:\n  rules:\n    - {name: r, tool: bash, action: ask}\n"
                     "guardrails:\n  enabled: true\n  provider:\n    use: tests.support.guardrails:DenyToolProvider\n")
    names = [type(m).__name__ for m in build_middlewares(LeadAgentOptions(), app=app, entry=app.models[0], model=None)]
    assert names[1:4] == ["ToolCallOrderMiddleware", "ApprovalGateMiddleware", "GuardrailMiddleware"]


def test_options_come_from_configurable_and_are_clamped():
    opts = LeadAgentOptions.from_config({"configurable": {"model_name": "m", "is_plan_mode": True, "max_concurrent_subagents": 99,
                                                          "thread_id": "ignored-here", "tool_groups": ["web"]}})
    assert opts.model_name == "m" and opts.is_plan_mode and opts.max_concurrent_subagents == 4 and opts.tool_groups == ("web",)


def test_unknown_model_name_lists_configured_models():
    with pytest.raises(UnknownModelError, match="configured models: test-model"):
        make_lead_agent({"configurable": {"model_name": "nope"}}, app_config=app_config(), tools=[])


def test_extension_middlewares_load_loudly():
    with pytest.raises(ExtensionMiddlewareError, match="not installed"):
        load_extension_middlewares(["deerflow_missing_pkg.mw:Thing"])
    with pytest.raises(ExtensionMiddlewareError, match="not an AgentMiddleware"):
        load_extension_middlewares(["collections:OrderedDict"])
    loaded = load_extension_middlewares(["harness.agents.middlewares.system_coalescing:SystemMessageCoalescingMiddleware"])
    assert type(loaded[0]).__name__ == "SystemMessageCoalescingMiddleware"


async def test_non_interactive_runs_have_no_clarification_tool(agent_factory):
    from harness.tools.builtins import get_builtin_tools

    h = agent_factory(["ok"], configurable={"non_interactive": True}, tools=get_builtin_tools())
    await h.send("hi")
    assert "ask_clarification" not in h.model.requests[0].tools
    assert "present_files" in h.model.requests[0].tools


async def test_stop_reason_is_reset_each_run(agent_factory):
    h = agent_factory([Reply(text="cut of", finish_reason="length"), "complete"])
    await h.send("long please")
    assert h.state()["stop_reason"] == "model_length_capped"
    await h.send("again")
    assert h.state().get("stop_reason") is None
