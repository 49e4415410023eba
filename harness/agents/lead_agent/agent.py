"""Assemble the lead agent: model, tools, system prompt and the middleware chain."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool

from harness.agents.custom import AGENT_SECTION, BOOTSTRAP_SECTION, custom_agent_tools
from harness.agents.lead_agent.options import LeadAgentOptions
from harness.agents.lead_agent.prompt import build_system_prompt
from harness.agents.middlewares.browser_session import BrowserSessionMiddleware
from harness.agents.middlewares.clarification import ClarificationMiddleware
from harness.agents.middlewares.dangling_tool_calls import DanglingToolCallMiddleware
from harness.agents.middlewares.dynamic_context import DynamicContextMiddleware, date_provider, summary_provider
from harness.agents.middlewares.input_sanitization import InputSanitizationMiddleware
from harness.agents.middlewares.length_finish import LengthFinishReasonMiddleware
from harness.agents.middlewares.llm_error import LLMErrorHandlingMiddleware
from harness.agents.middlewares.loop_detection import LoopDetectionMiddleware
from harness.agents.middlewares.read_before_write import ReadBeforeWriteMiddleware
from harness.agents.middlewares.remote_content import RemoteContentSanitizationMiddleware
from harness.agents.middlewares.run_setup import RunSetupMiddleware
from harness.agents.middlewares.safety_finish import SafetyFinishReasonMiddleware
from harness.agents.middlewares.sandbox import SandboxMiddleware
from harness.agents.middlewares.sandbox_audit import SandboxAuditMiddleware
from harness.agents.middlewares.summarization import DeerFlowSummarizationMiddleware
from harness.agents.middlewares.skills import SkillSetSnapshot, SkillsMiddleware
from harness.agents.middlewares.system_coalescing import SystemMessageCoalescingMiddleware
from harness.agents.middlewares.terminal_response import TerminalResponseMiddleware
from harness.agents.middlewares.thread_data import ThreadDataMiddleware
from harness.agents.middlewares.title import TitleMiddleware
from harness.agents.middlewares.tool_call_order import ToolCallOrderMiddleware
from harness.agents.middlewares.todo_list import PlanTodoMiddleware
from harness.agents.middlewares.token_budget import TaskTokenBudgetMiddleware, TokenBudgetMiddleware
from harness.agents.middlewares.token_usage import TokenUsageMiddleware
from harness.agents.middlewares.tool_schemas import ToolSchemaCacheMiddleware
from harness.agents.middlewares.tool_errors import ToolErrorHandlingMiddleware
from harness.agents.middlewares.tool_output_budget import ToolOutputBudgetMiddleware
from harness.agents.middlewares.tool_progress import ToolProgressMiddleware
from harness.agents.middlewares.uploads import UploadsMiddleware
from harness.agents.middlewares.view_image import ViewImageMiddleware
from harness.agents.state_schema import thread_state_schema
from harness.agents.tracing import install_inline_trace_setup
from harness.config import AppConfig, ModelConfig, class_path, get_app_config
from harness.governance.budget import budget_middleware
from harness.governance.gate import approval_middleware
from harness.governance.guardrails import guardrail_middleware
from harness.knowledge.tools import KNOWLEDGE_SECTION, knowledge_tools
from harness.memory.injection import memory_provider
from harness.models import ModelError, create_chat_model, get_model_config
from harness.subagents.types import SubagentType
from harness.tools.browser import uses_browser

logger = logging.getLogger(__name__)


DEFAULT_CONTEXT_WINDOW = 32000


class ExtensionMiddlewareError(ValueError):
    pass


def load_extension_middlewares(paths: Sequence[str]) -> list[AgentMiddleware]:
    """Zero-argument middleware classes from ``extensions_config.json`` ``middlewares``.
    Operator-trusted code: anything that does not load stops the agent build."""
    loaded = []
    for path in paths:
        try:
            cls = class_path.resolve(path)
        except class_path.ClassPathError as exc:
            raise ExtensionMiddlewareError(f"extension middleware {path!r}: {exc}") from None
        if not (isinstance(cls, type) and issubclass(cls, AgentMiddleware)):
            raise ExtensionMiddlewareError(f"extension middleware {path!r} is not an AgentMiddleware subclass")
        try:
            loaded.append(cls())
        except Exception as exc:
            raise ExtensionMiddlewareError(f"extension middleware {path!r} could not be created: {exc}") from exc
        logger.info("loaded extension middleware %s", path)
    return loaded


def _optional_model(name: str | None, app: AppConfig, purpose: str) -> BaseChatModel | None:
    """A helper model (title, summaries). If it cannot be built (say its key is missing)
    the run still works: the caller falls back, and the log says why."""
    if not name:
        return None
    try:
        return create_chat_model(name, config=app)
    except ModelError as exc:
        logger.warning("%s.model_name: %s; falling back", purpose, exc)
        return None


def _summarization(app: AppConfig, entry: ModelConfig, model: BaseChatModel) -> AgentMiddleware | None:
    cfg = app.summarization
    if not cfg.enabled:
        return None
    summarizer = _optional_model(cfg.model_name, app, "summarization") or model
    window = entry.context_window
    if not window:
        profile = getattr(model, "profile", None) or {}
        window = profile.get("max_input_tokens") if isinstance(profile, dict) else None
    if not window and any(t.type == "fraction" for t in cfg.trigger):
        window = DEFAULT_CONTEXT_WINDOW
        logger.warning("model '%s' has no context_window; summarization fractions assume %d tokens", entry.name, window)
    triggers = []
    for t in cfg.trigger:
        if t.type == "fraction":
            triggers.append(("tokens", int(t.value * window)))
        else:
            triggers.append((t.type, int(t.value)))
    return DeerFlowSummarizationMiddleware(summarizer, trigger=triggers, keep=(cfg.keep.type, cfg.keep.value))


def _skills_middleware(options: LeadAgentOptions, app: AppConfig, allowed: tuple[str, ...] | None = None) -> SkillsMiddleware:
    """``allowed``: a subagent type's skills list, in place of the agent's own allowlist."""
    return SkillsMiddleware(skills_path=app.skills.path, container_path=app.skills.container_path,
                            deferred=app.skills.deferred_discovery, allowed=allowed if allowed is not None else options.skills)


def _model_overrides(options: LeadAgentOptions, entry: ModelConfig) -> dict[str, Any]:
    """A custom agent's model settings, as constructor keys. A reasoning effort only reaches
    a model whose config takes one (see ``describe_model``): other classes would reject it."""
    overrides: dict[str, Any] = {}
    if options.temperature is not None:
        overrides["temperature"] = options.temperature
    if options.max_tokens is not None:
        overrides["max_tokens"] = options.max_tokens
    if options.reasoning_effort:
        extra = entry.model_extra or {}
        if "reasoning_effort" in extra or "reasoning_effort" in entry.when_thinking_enabled:
            overrides["reasoning_effort"] = options.reasoning_effort
        else:
            logger.info("model '%s' takes no reasoning_effort; the agent's setting is ignored", entry.name)
    return overrides


def _safety(app: AppConfig) -> AgentMiddleware | None:
    """The content-filter guard with config.yaml's detectors (operator-trusted class paths)."""
    cfg = app.safety_finish_reason
    if not cfg.enabled:
        return None
    detectors = []
    for i, entry in enumerate(cfg.detectors or ()):
        where = f"safety_finish_reason.detectors[{i}] {entry.use!r}"
        try:
            detector = class_path.resolve(entry.use)(**entry.config)
        except Exception as exc:
            raise ExtensionMiddlewareError(f"{where} could not be created: {exc}") from exc
        if not (isinstance(getattr(detector, "name", None), str) and callable(getattr(detector, "detect", None))):
            raise ExtensionMiddlewareError(f"{where} is not a detector (it needs a name and detect(message))")
        detectors.append(detector)
    return SafetyFinishReasonMiddleware(detectors)


def _token_budget(options: LeadAgentOptions, app: AppConfig) -> TokenBudgetMiddleware:
    middleware = TokenBudgetMiddleware.from_config(app.token_budget)
    if options.token_budget is not None:  # the run's own cap replaces the file's total
        middleware.default_budget = options.token_budget
    return middleware


def _call_layers(options: LeadAgentOptions, app: AppConfig) -> list[AgentMiddleware | None]:
    """The layers between the output budget and the turn context, the same in the lead's chain
    and a subagent's (docs/agent.md rows 3-10b)."""
    return [
        RemoteContentSanitizationMiddleware(),
        DanglingToolCallMiddleware(),
        LLMErrorHandlingMiddleware(max_retries=options.llm_max_retries, initial_delay=options.llm_retry_initial_delay,
                                   jitter=options.llm_retry_initial_delay > 0),
        ReadBeforeWriteMiddleware() if app.read_before_write.enabled else None,
        # Outside the error layer, so the results it judges carry deerflow_tool_meta.
        ToolProgressMiddleware.from_config(app.tool_progress) if app.tool_progress.enabled else None,
        ToolErrorHandlingMiddleware(),
        # Inside error handling: a call that raised is recorded as an error before it becomes one.
        SandboxAuditMiddleware(),
    ]


def build_middlewares(options: LeadAgentOptions, *, app: AppConfig, entry: ModelConfig, model: BaseChatModel,
                      extra: Sequence[AgentMiddleware] = ()) -> list[AgentMiddleware]:
    """The chain, outermost first (``wrap_*`` hooks nest in this order; ``after_model``
    hooks run in reverse). docs/agent.md explains each position."""
    title_model = _optional_model(app.title.model_name, app, "title") if app.title.enabled else None
    summarizer = _summarization(app, entry, model)
    skills = _skills_middleware(options, app)
    chain: list[AgentMiddleware | None] = [
        # One graph step for the run's setup; the parts' order is the order of their hooks.
        RunSetupMiddleware([InputSanitizationMiddleware(), ThreadDataMiddleware(), UploadsMiddleware(), SandboxMiddleware(),
                            SkillSetSnapshot(skills)],
                           state_schema=thread_state_schema(app.checkpoints.mode, app.checkpoints.snapshot_frequency)),
        # Outermost tool wrapper: every call of a step passes it, so a call refused further in
        # still releases the file-touching calls after it in its message.
        ToolCallOrderMiddleware(),
        # Early in the chain: its after_model runs after every other one, on the final tool calls.
        approval_middleware(app.approvals, interactive=not options.non_interactive),
        # Every call that passed the approval rules, before anything else can run it; outside
        # error handling, so the provider's own failures follow guardrails.fail_closed instead.
        guardrail_middleware(app.guardrails),
        ToolOutputBudgetMiddleware(options.max_tool_output_chars, config=app.tool_output),
        *_call_layers(options, app),
        # Without summarization the turn context carries a manual compaction's summary.
        DynamicContextMiddleware() if summarizer else DynamicContextMiddleware([date_provider, memory_provider, summary_provider]),
        skills,
        summarizer,
        PlanTodoMiddleware() if options.is_plan_mode else None,
        TokenUsageMiddleware(entry.name),
        TitleMiddleware(enabled=app.title.enabled, max_words=app.title.max_words, max_chars=app.title.max_chars, model=title_model),
        ViewImageMiddleware(entry.supports_vision),
        SystemMessageCoalescingMiddleware(),
        LoopDetectionMiddleware.from_config(app.loop_detection, warn_threshold=options.loop_warn_after,
                                            hard_limit=options.loop_stop_after) if app.loop_detection.enabled else None,
        _token_budget(options, app),
        budget_middleware(app.budgets),  # the user's daily/monthly caps; absent unless budgets.enabled
        *extra,
        TerminalResponseMiddleware(),
        # Inside the empty-answer retry (a filtered reply gets its explanation, not a retry) and
        # outside the length layer (its safety_capped outlives that layer's stale-reason reset).
        _safety(app),
        LengthFinishReasonMiddleware(),
        ClarificationMiddleware(interactive=not options.non_interactive),
        # Innermost model-call wrapper: hands the model each tool's schema, built once.
        ToolSchemaCacheMiddleware(),
    ]
    return [m for m in chain if m is not None]


def build_subagent_middlewares(options: LeadAgentOptions, *, app: AppConfig, entry: ModelConfig, model: BaseChatModel,
                               stype: SubagentType, extensions: Sequence[str] = (), extra: Sequence[AgentMiddleware] = ()) -> list[AgentMiddleware]:
    """A subagent type's chain, outermost first, from the config sections the lead's chain is
    built from; the guards in it count per task (``SUBAGENT_TASK_KEY``). What differs from
    the lead, and why, is in docs/agent.md: no run setup (the sandbox and thread paths come
    from the lead's state), no title, plan mode or clarification (nobody answers a subagent),
    the date alone as turn context (memory is the lead's), ``subagents.token_budget`` instead of
    the run's, and approvals refused instead of asked."""
    token_budget = stype.token_budget
    chain: list[AgentMiddleware | None] = [
        ToolCallOrderMiddleware(),
        approval_middleware(app.approvals, subagent=True),  # a subagent cannot ask: covered calls are refused
        guardrail_middleware(app.guardrails, subagent=True),
        ToolOutputBudgetMiddleware(None, config=app.tool_output),
        *_call_layers(options, app),
        DynamicContextMiddleware([date_provider]),
        _skills_middleware(options, app, allowed=stype.skills),
        _summarization(app, entry, model),
        TokenUsageMiddleware(entry.name),
        ViewImageMiddleware(entry.supports_vision),
        SystemMessageCoalescingMiddleware(),
        LoopDetectionMiddleware.from_config(app.loop_detection) if app.loop_detection.enabled else None,
        TaskTokenBudgetMiddleware.from_config(token_budget) if token_budget is not None and token_budget.enabled else None,
        budget_middleware(app.budgets),  # a subagent's calls count toward the user's budget, and stop at it
        *load_extension_middlewares(extensions),
        *extra,  # the deferred-tools filter, as in the lead's chain
        _safety(app),
        LengthFinishReasonMiddleware(),
        ToolSchemaCacheMiddleware(),
    ]
    return [m for m in chain if m is not None]


def _delegation(options: LeadAgentOptions, app: AppConfig, entry: ModelConfig, model: BaseChatModel,
                tools: Sequence[BaseTool], extensions: Sequence[str]) -> tuple:
    """(task tool, its limit middleware) when both config.yaml and the run allow subagents.
    Nothing of a subagent's chain is built here: the task tool builds a type's chain the first
    time the run delegates to it."""
    if not options.subagent_enabled:
        return ()
    if not app.subagents.enabled:
        logger.info("Run option subagent_enabled is ignored: subagents.enabled is false in config.yaml")
        return ()
    from harness.mcp.deferred import apply_tool_search
    from harness.subagents import SubagentLimitMiddleware, build_task_tool

    def models(name: str | None) -> tuple[BaseChatModel, str]:
        if not name or name == entry.name:
            return model, entry.name
        return create_chat_model(name, config=app), name

    def chain(stype: SubagentType, chat_model: BaseChatModel, model_name: str, task_tools: list[BaseTool]) -> tuple[list[BaseTool], list]:
        sub_entry = entry if model_name == entry.name or not app.models else get_model_config(model_name, config=app)
        # promotions live in each task's state; the routing hints are in the lead's prompt only
        task_tools, deferred, _ = apply_tool_search(task_tools, app.tool_search.enabled,
                                                    auto_promote_top_k=app.tool_search.auto_promote_top_k)
        return task_tools, build_subagent_middlewares(options, app=app, entry=sub_entry, model=chat_model, stype=stype,
                                                      extensions=extensions, extra=deferred)

    cfg = app.subagents
    concurrent = options.max_concurrent_subagents or cfg.max_concurrent
    total = options.max_total_subagents or cfg.max_total_per_run
    return (build_task_tool(config=cfg, lead_tools=tools, model_factory=models, chain=chain, tracing=app.tracing,
                            summarization_enabled=app.summarization.enabled),
            SubagentLimitMiddleware(concurrent, total))


def make_lead_agent(config: RunnableConfig | None = None, *, model: BaseChatModel | None = None,
                    tools: Sequence[BaseTool] | None = None, extra_tools: Sequence[BaseTool] = (),
                    checkpointer: Any = None, app_config: AppConfig | None = None,
                    extra_middlewares: Sequence[AgentMiddleware] = ()) -> Any:
    """Build the lead agent graph for one run configuration.

    ``config["configurable"]`` carries the options (see :class:`LeadAgentOptions`);
    ``user_id``, ``thread_id`` and ``run_id`` are read per run by the middlewares, so one
    graph can serve many threads. ``model``/``tools`` replace the configured ones (tests,
    the embedded client with a custom model).
    """
    from harness.config import get_extensions_config
    from harness.tools.registry import get_available_tools

    install_inline_trace_setup()

    options = LeadAgentOptions.from_config(config)
    app = app_config or get_app_config()
    entry = get_model_config(options.model_name, config=app) if app.models else ModelConfig.model_construct(
        name=getattr(model, "model_name", "custom"), use="", supports_vision=False, supports_thinking=False, context_window=None)
    if model is None:
        model = create_chat_model(entry.name, thinking_enabled=options.thinking_enabled, config=app,
                                  **_model_overrides(options, entry))
    extra_tools = [*extra_tools, *custom_agent_tools(is_bootstrap=options.is_bootstrap, editable=options.agent_editable)]
    if options.knowledge:
        extra_tools += knowledge_tools()
    if tools is None:
        tools = get_available_tools(config=app, groups=options.tool_groups, include_view_image=entry.supports_vision,
                                    non_interactive=options.non_interactive, extra_tools=extra_tools)
    else:
        tools = [*tools, *extra_tools]
        if options.non_interactive:
            tools = [t for t in tools if t.name != "ask_clarification"]
    extension_paths = get_extensions_config().middlewares
    delegation = _delegation(options, app, entry, model, tools, extension_paths)
    if delegation:
        tools = [*tools, delegation[0]]
    from harness.mcp.deferred import apply_tool_search

    tools, deferred, mcp_sections = apply_tool_search(tools, app.tool_search.enabled,
                                                      auto_promote_top_k=app.tool_search.auto_promote_top_k)
    extensions = load_extension_middlewares(extension_paths)
    browser = [BrowserSessionMiddleware()] if uses_browser(t.name for t in tools) else []
    middleware = build_middlewares(options, app=app, entry=entry, model=model,
                                   extra=[*delegation[1:], *extra_middlewares, *extensions, *deferred, *browser])
    sections = [s for s, on in ((BOOTSTRAP_SECTION, options.is_bootstrap), (AGENT_SECTION, options.agent_editable)) if on]
    sections += mcp_sections
    if options.knowledge:
        sections.append(KNOWLEDGE_SECTION)
    prompt = build_system_prompt(agent_name=options.agent_title or options.agent_name, tool_names=[t.name for t in tools],
                                 subagent_enabled=bool(delegation),
                                 max_concurrent_subagents=delegation[1].max_concurrent if delegation else 3,
                                 soul=options.soul, extra_sections=sections)
    return create_agent(model, tools=list(tools), system_prompt=prompt, middleware=middleware,
                        state_schema=thread_state_schema(app.checkpoints.mode, app.checkpoints.snapshot_frequency),
                        checkpointer=checkpointer, name="lead_agent")
