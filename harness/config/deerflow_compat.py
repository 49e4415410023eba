"""DeerFlow's own ``config.yaml`` and ``extensions_config.json``, loaded unchanged.

Every key of DeerFlow's schema (as of its ``config_version`` :data:`DEERFLOW_SCHEMA_VERSION`) is
one of three things here:

* **honoured**: both schemas have it with the same meaning; nothing to say;
* **mapped**: DeerFlow spells it differently (``memory.backend_config.max_facts``,
  ``sandbox.bash_output_max_chars``, ``deerflow.community.tavily.tools:web_search_tool`` …);
  :func:`translate_config` rewrites it to our key and records a note saying where it went;
* **accepted, no effect**: the feature is DeerFlow's alone or done another way here
  (``database``: Django's ``DATABASE_URL``); the key is removed before validation and
  recorded with the reason from the tables below.

A key neither schema defines is left in place, so validation still refuses it naming it.
A ``deerflow.*`` class path we have no implementation for is a :class:`ConfigError` naming the
path and what to use instead. Nothing in this module imports DeerFlow or Django.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from harness.config.errors import ConfigError

# The DeerFlow config.example.yaml version these tables were written against. A file at an
# older version lacks keys DeerFlow added since (``manage.py config_check`` lists them); a
# newer one may hold keys this loader does not know yet (they are refused by name).
DEERFLOW_SCHEMA_VERSION = 34

ACCEPTED = "accepted"
MAPPED = "mapped"


@dataclass(frozen=True)
class CompatNote:
    """One DeerFlow key: ``kind`` is ``accepted`` (``detail`` = why it has no effect) or
    ``mapped`` (``detail`` = what it became here)."""

    key: str
    kind: str
    detail: str

    def line(self) -> str:
        if self.kind == MAPPED:
            return f"{self.key}: mapped to {self.detail}"
        return f"{self.key}: accepted, has no effect here because {self.detail}"


# --------------------------------------------------------------------------------------------
# Top-level sections only DeerFlow has: (reason, the keys its schema defines inside, or None
# for a list/scalar/free mapping). A key inside one of them that DeerFlow's schema does not
# define either is still an error. Where DeerFlow's schema nests fixed models, the keys are a
# KeySpec: key -> the keys inside it (again a KeySpec), or None where anything goes below; the
# key "*" stands for names the user chooses (OIDC provider ids).
KeySpec = dict[str, "KeySpec | None"]


def _fixed(*keys: str) -> KeySpec:
    return {k: None for k in keys}


_BINDING = _fixed("enabled")
_OIDC_PROVIDER = _fixed("display_name", "issuer", "client_id", "client_secret", "redirect_uri", "scopes", "token_endpoint_auth_method",
                        "auto_create_users", "require_verified_email", "allowed_email_domains", "admin_emails", "pkce_enabled",
                        "nonce_enabled", "authorization_endpoint", "token_endpoint", "userinfo_endpoint", "jwks_uri")
_ACP = "ACP agents are external coding agents DeerFlow launches over the Agent Client Protocol; this server has no ACP client"
_DB = "storage is Django's database (DATABASE_URL, default .deer-flow/deerflow.sqlite3) and checkpoints live beside it (docs/deployment.md)"
TOP_LEVEL_ACCEPTED: dict[str, tuple[str, frozenset[str] | KeySpec | None]] = {
    "log_level": ("logging is configured by Django settings (DJANGO_LOG_LEVEL), not config.yaml", None),
    "logging": ("request ids and log format come from Django's LOGGING settings (deerflow_site/settings)", frozenset({"enhance"})),
    "token_usage": ("token usage is always recorded per run (the Usage page and console read it)", frozenset({"enabled"})),
    "plugins": ("DeerFlow's extension packages hook its FastAPI gateway; here features are Django apps", None),
    "max_recursion_limit": ("a run's step limit is fixed by the engine (docs/runs.md) and not raised by clients", None),
    "extensions": ("MCP servers, skill toggles and middlewares are read from extensions_config.json only",
                   frozenset({"middlewares", "mcp_servers", "mcpServers", "skills"})),
    "agents_api": ("custom agents are always managed through the API and the Agents page, per user", frozenset({"enabled"})),
    "acp_agents": (_ACP, None),
    "authorization": ("access is Django accounts: owners, staff and superusers (docs/api.md); there is no pluggable RBAC provider",
                      frozenset({"enabled", "fail_closed", "default_role", "provider"})),
    "circuit_breaker": ("a failing provider fails the run with its error; model probes (`manage.py probe_models`) take a broken model out of admission",
                        frozenset({"failure_threshold", "recovery_timeout_sec"})),
    "llm_call": ("model calls are retried by the LangChain client (its max_retries option on the model entry)",
                 frozenset({"max_concurrent_calls", "retry_max_attempts", "retry_base_delay_ms", "retry_cap_delay_ms", "burst_retry_base_delay_ms"})),
    "channel_connections": ("users link IM accounts with a connect code on the Channels page (`channels.connect_code_ttl`)",
                            {"enabled": None, "require_bound_identity": None, "slack": _BINDING, "telegram": _fixed("enabled", "bot_username"),
                             "discord": _BINDING, "feishu": _BINDING, "dingtalk": _BINDING, "wechat": _BINDING, "wecom": _BINDING, "buzz": _BINDING}),
    "auth": ("sign-in is django-allauth (local accounts, social/OIDC providers configured in admin, docs/accounts.md)",
             {"oidc": {"enabled": None, "frontend_base_url": None, "providers": {"*": _OIDC_PROVIDER}}, "local": _fixed("allow_registration")}),
    "database": (_DB, frozenset({"backend", "checkpoint_channel_mode", "checkpoint_delta", "checkpoint_graph_cache", "checkpoint_cache", "sqlite_dir",
                                 "postgres_url", "echo_sql", "pool_size", "pool_recycle", "command_timeout", "postgres_schema"})),
    "run_events": ("run events are always rows in the database (apps.runs), read by the API and the console",
                   frozenset({"backend", "max_trace_content", "track_token_usage"})),
    "agent_storage": ("custom agents are rows in the database, shared by every process", frozenset({"backend"})),
    "mcp_tasks": ("long-running MCP tasks are not polled in the background; a tool call waits for its result (tool_call_timeout)",
                  frozenset({"enabled", "poll_interval_seconds", "lease_seconds", "max_concurrent_polls", "max_poll_backoff_seconds",
                             "input_required_poll_interval_seconds", "tracking_degraded_after_errors", "max_result_bytes", "result_preview_max_chars"})),
    "checkpointer": (_DB, frozenset({"type", "connection_string", "postgres_schema"})),
    "stream_bridge": ("live streams go through the runs app's stream bridge: in-process, or Redis when REDIS_URL is set",
                      frozenset({"type", "redis_url", "queue_maxsize", "max_connections", "stream_ttl_seconds", "recovered_stream_cleanup_delay_seconds"})),
    "run_ownership": ("run leases are the runs worker's heartbeats, always on (docs/runs.md)", frozenset({"lease_seconds", "grace_seconds", "heartbeat_enabled"})),
    "dedupe_storage": ("inbound webhook deliveries are deduplicated in the database", frozenset({"backend"})),
}

# Keys inside sections both schemas have, that only DeerFlow defines: "section.key" -> reason.
SECTION_ACCEPTED: dict[str, str] = {
    "title.prompt_template": "the title prompt is fixed (harness/agents); only max_words/max_chars/model_name shape it",
    "summarization.trim_tokens_to_summarize": "the summarizer sends the messages it replaces whole, bounded by the model's context_window",
    "summarization.summary_prompt": "the summary prompt is fixed (harness/agents)",
    "summarization.skill_file_read_tool_names": "skill files read during a thread are kept by the skills middleware, not by tool name",
    "scheduler.multi_instance": "scheduled tasks are fired by Celery beat, one per deployment",
    "scheduler.poll_interval_seconds": "Celery beat fires tasks at their time; nothing polls",
    "scheduler.lease_seconds": "a fired task is a run, leased by the runs worker",
    "scheduler.max_concurrent_runs": "scheduled runs are admitted like any other run (budgets, worker concurrency)",
    "scheduler.min_once_delay_seconds": "a one-time task may be due at any future time; scheduler.min_interval_minutes bounds cron tasks",
    "uploads.pdf_converter": "documents are converted by the built-in converter (uploads.convert_documents)",
    "sandbox.allow_host_bash": "bash is always available; it runs isolated under bwrap, or on the host with sandbox.use: local",
    "sandbox.ls_output_max_chars": "ls lists at most 500 entries",
    "sandbox.port": "commands run through the engine's exec API, so containers serve no port (docs/sandbox.md)",
    "sandbox.overflow_policy": "a thread with no warm container gets a fresh one at once; nothing waits for a replica (docs/sandbox.md)",
    "sandbox.acquire_timeout": "a thread with no warm container gets a fresh one at once; nothing waits for a replica (docs/sandbox.md)",
    "sandbox.burst_limit": "a thread with no warm container gets a fresh one at once; nothing waits for a replica (docs/sandbox.md)",
    "sandbox.health_check_skip_seconds": "a thread with no warm container gets a fresh one at once; nothing waits for a replica (docs/sandbox.md)",
    "sandbox.ownership": "container ownership is leases in the database, shared by every server process (docs/sandbox.md)",
    "sandbox.thread_data_mounts": "a thread's user-data folders are always mounted at /mnt/user-data",
    "sandbox.provisioner_api_key": "there is no sandbox provisioner here (docs/sandbox.md)",
    "memory.backend_config": "DeerMem's storage and retrieval options do not apply: memory is rows in the database (docs/memory.md)",
    "skills.use": "skills are loaded by the built-in skills loader (docs/skills.md)",
    "tracing.monocle": "only LangSmith and Langfuse tracing are supported (docs/observability.md)",
}
# Legacy top-level memory keys DeerFlow moves into backend_config and we have no equivalent
# of (the knobs we honour are fields of our MemoryConfig, read as they are).
_MEMORY_LEGACY_ACCEPTED = (
    "storage_path", "storage_class", "guaranteed_categories", "guaranteed_token_budget", "queue_max_depth",
    "fact_eviction_policy",
)
for _key in _MEMORY_LEGACY_ACCEPTED:
    SECTION_ACCEPTED[f"memory.{_key}"] = "DeerMem's storage, eviction and guaranteed-injection options do not apply: memory is rows in the database (docs/memory.md)"

# Renames inside sections both schemas have: "section.key" -> "section.our_key".
SECTION_RENAMED: dict[str, str] = {
    "sandbox.bash_output_max_chars": "sandbox.max_output_chars",
    "sandbox.read_file_output_max_chars": "sandbox.read_file_max_chars",
    "sandbox.environment": "sandbox.env",
    "uploads.auto_convert_documents": "uploads.convert_documents",
}
# memory.backend_config keys that are keys of our memory section (DeerMem reads them there).
_MEMORY_BACKEND_RENAMED = (
    "debounce_seconds", "max_facts", "fact_confidence_threshold", "max_injection_tokens", "token_counting",
    "retrieval_adapter", "staleness_review_enabled", "staleness_age_days", "staleness_min_candidates",
    "staleness_max_removals_per_cycle", "staleness_protected_categories", "staleness_max_lifetime_multiplier",
    "staleness_max_extension_days", "consolidation_enabled", "consolidation_min_facts",
    "consolidation_max_groups_per_cycle", "consolidation_max_sources",
)

# Model entry keys only DeerFlow reads (the rest go to the class as keyword arguments).
MODEL_ACCEPTED: dict[str, str] = {
    "supports_reasoning_effort": "reasoning effort is passed with the model's own options (e.g. reasoning_effort) in when_thinking_enabled",
    "when_thinking_disabled": "a run without thinking uses the entry's plain options",
    "stream_chunk_timeout": "a stalled stream is bounded by the client's timeout option on the model entry",
}

# Channels: shared keys and per-provider keys only DeerFlow reads. Honoured, so not listed:
# ``session`` (top and per provider), ``allowed_users``, ``telegram.rich_messages``,
# ``dingtalk.card_template_id`` and the whole ``wechat`` section.
CHANNELS_ACCEPTED: dict[str, str] = {
    "langgraph_url": "the channels worker starts runs in-process through the engine, not over HTTP",
    "gateway_url": "the channels worker starts runs in-process through the engine, not over HTTP",
    "inbound_queue_maxsize": "inbound messages are queued per conversation (channels.queue_size)",
    "max_concurrency": "channel runs are admitted like any other run (worker concurrency, budgets)",
    "shutdown_grace_period_seconds": "the channels worker finishes its current delivery on SIGTERM",
    "buzz": "there is no Buzz adapter here (supported: telegram, slack, feishu, dingtalk, wecom, discord, wechat)",
}
CHANNEL_PROVIDER_ACCEPTED: dict[str, str] = {
    "allowed_guilds": "who may talk to the bot is decided by account binding (connect code on the Channels page)",
    "allowed_channels": "who may talk to the bot is decided by account binding (connect code on the Channels page)",
    "mention_only": "the Discord adapter answers direct messages and mentions",
    "thread_mode": "Discord replies go to the channel the message came from",
    "bot_id": "the WeCom adapter here is a self-built app (corp_id, agent_id, secret, token, encoding_aes_key), not DeerFlow's AI bot",
    "bot_secret": "the WeCom adapter here is a self-built app (corp_id, agent_id, secret, token, encoding_aes_key), not DeerFlow's AI bot",
}

# MCP server keys (extensions_config.json) only DeerFlow reads.
MCP_SERVER_ACCEPTED: dict[str, str] = {
    "tool_name_prefix": "MCP tools keep their server's names; a clash between servers is reported at load",
    "task_toolsets": "long-running MCP tasks are not polled in the background; a tool call waits for its result",
}
MCP_ROUTING_ACCEPTED: dict[str, str] = {
    "hint": "the prompt's routing line is written from routing.keywords (docs/mcp.md#routing-hints)",
}
EXTENSIONS_TOP_ACCEPTED: dict[str, str] = {
    "mcpInterceptors": "MCP requests are not intercepted; headers and oauth on the server entry set credentials",
    "tool_search": "deferred MCP tools are switched on with `tool_search.enabled` in config.yaml",
}

# --------------------------------------------------------------------------------------------
# deerflow.* class paths.
_WEB = "harness.tools.web:"
# DeerFlow tool path -> (our class path, provider) ; provider None = keep the class default.
TOOL_PATHS: dict[str, tuple[str, str | None]] = {
    "deerflow.community.ddg_search.tools:web_search_tool": (_WEB + "WebSearchTool", "ddgs"),
    "deerflow.community.tavily.tools:web_search_tool": (_WEB + "WebSearchTool", "tavily"),
    "deerflow.community.searxng.tools:web_search_tool": (_WEB + "WebSearchTool", "searxng"),
    "deerflow.community.brave.tools:web_search_tool": (_WEB + "WebSearchTool", "brave"),
    "deerflow.community.firecrawl.tools:web_search_tool": (_WEB + "WebSearchTool", "firecrawl"),
    "deerflow.community.jina_ai.tools:web_fetch_tool": (_WEB + "WebFetchTool", "jina"),
    "deerflow.community.firecrawl.tools:web_fetch_tool": (_WEB + "WebFetchTool", "firecrawl"),
    "deerflow.community.image_search.tools:image_search_tool": (_WEB + "ImageSearchTool", "ddgs"),
    "deerflow.community.brave.tools:image_search_tool": (_WEB + "ImageSearchTool", "brave"),
    # The live browser (harness/tools/browser): DeerFlow's Playwright tools, and Browserless's
    # capture done by the same local Chromium.
    **{f"deerflow.community.browser_automation.tools:browser_{n}_tool": (f"harness.tools.browser:Browser{n.title().replace('_', '')}Tool", None)
       for n in ("navigate", "snapshot", "click", "type", "get_text", "back", "screenshot", "close")},
    "deerflow.community.browserless.tools:web_capture_tool": ("harness.tools.browser:WebCaptureTool", None),
}
# The sandbox tools are built in here: an entry naming one is dropped.
SANDBOX_TOOL_PATHS = {f"deerflow.sandbox.tools:{n}_tool": n for n in ("ls", "read_file", "glob", "grep", "write_file", "str_replace", "bash")}
_TOOL_OPTIONS = {"WebSearchTool": {"max_results", "provider", "fallback"}, "ImageSearchTool": {"max_results", "provider", "fallback"},
                 "WebFetchTool": {"max_chars", "provider", "fallback"},
                 # DeerFlow sets the browser's launch options on browser_navigate; they are read there.
                 "BrowserNavigateTool": {"timeout_ms", "viewport_width", "viewport_height", "allow_private_addresses"}}
_BROWSER_ACCEPTED = ("the browser here is always headless Chromium behind the SSRF guard; attaching to another Chrome "
                     "(cdp_url) is not offered, and its other limits are in the browser: section (docs/tools.md)")
_PROVIDER_KEYS = ("api_key", "base_url")
_NO_TOOL = ("use harness.tools.web:WebSearchTool / WebFetchTool / ImageSearchTool with a provider of "
            "ddgs, tavily, searxng, brave, jina or firecrawl (docs/tools.md)")

MODEL_PATHS: dict[str, str] = {
    "deerflow.models.patched_openai:PatchedChatOpenAI": "langchain_openai:ChatOpenAI",
    "deerflow.models.patched_deepseek:PatchedChatDeepSeek": "harness.models.reasoning:ReasoningChatOpenAI",
    "deerflow.models.vllm_provider:VllmChatModel": "harness.models.reasoning:ReasoningChatOpenAI",
    "deerflow.models.patched_stepfun:PatchedChatStepFun": "harness.models.reasoning:ReasoningChatOpenAI",
    "deerflow.models.patched_minimax:PatchedChatMiniMax": "harness.models.reasoning:ReasoningChatOpenAI",
    "deerflow.models.patched_mimo:PatchedChatMiMo": "harness.models.reasoning:ReasoningChatOpenAI",
    "deerflow.models.mindie_provider:MindIEChatModel": "harness.models.reasoning:ReasoningChatOpenAI",
}
_NO_MODEL = "use langchain_openai:ChatOpenAI (or harness.models.reasoning:ReasoningChatOpenAI for a server that returns reasoning) with base_url"

SANDBOX_PATHS: dict[str, str] = {
    "deerflow.sandbox.local:LocalSandboxProvider": "local",
    "deerflow.sandbox.local.local_sandbox_provider:LocalSandboxProvider": "local",
    "deerflow.community.aio_sandbox:AioSandboxProvider": "container",
}
_NO_SANDBOX = "use sandbox.use: null (bubblewrap when it works, else local), bwrap, local or container (docs/sandbox.md)"

_DETECTORS = "deerflow.agents.middlewares.safety_termination_detectors:"
SAFETY_DETECTOR_PATHS: dict[str, str] = {
    f"{_DETECTORS}{name}": f"harness.agents.middlewares.safety_finish:{name}"
    for name in ("OpenAICompatibleContentFilterDetector", "AnthropicRefusalDetector", "GeminiSafetyDetector")
}
_NO_DETECTOR = "use one of harness.agents.middlewares.safety_finish's detectors or a class of your own with name and detect(message)"

MEMORY_MANAGERS = {"deermem": "the built-in memory (harness.memory, stored by apps.memory)"}
_NO_MEMORY = "remove memory.manager_class (the built-in memory is used) or set it to deermem"

# ``guardrails`` is a section of ours (a provider hook, harness/governance/guardrails.py) with
# DeerFlow's keys. DeerFlow's built-in AllowlistProvider becomes approval rules; any other
# deerflow.* provider has no implementation here. Other class paths are loaded as they are.
ALLOWLIST_PROVIDER = "deerflow.guardrails.builtin:AllowlistProvider"
GUARDRAILS_KEYS = frozenset({"enabled", "fail_closed", "passport", "provider"})
_NO_GUARDRAIL = ("use approvals.rules (action ask/deny/allow per tool, docs/governance.md), or a provider class of your own "
                 "in guardrails.provider.use (docs/governance.md)")
# Providers of sections accepted without effect: a path is refused only when the section is on.
PROVIDER_SECTIONS: dict[str, str] = {
    "authorization": "use Django accounts and staff roles instead (owners, staff, superusers: docs/api.md) and set authorization.enabled: false",
}


def _note(notes: list[CompatNote], key: str, kind: str, detail: str) -> None:
    notes.append(CompatNote(key, kind, detail))


def _unknown(field: str, display: str) -> ConfigError:
    return ConfigError("unknown key (neither this loader nor DeerFlow's schema defines it)", path=display, field=field)


def _check_nested(value: Any, spec: KeySpec | None, where: str, display: str) -> None:
    if spec is None or not isinstance(value, dict):
        return
    for key, inner in value.items():
        if key not in spec and "*" not in spec:
            raise _unknown(f"{where}.{key}", display)
        _check_nested(inner, spec.get(key, spec.get("*")), f"{where}.{key}", display)


def _class_error(field: str, path: str, instead: str, display: str) -> ConfigError:
    whose = "is DeerFlow's and has" if path.startswith("deerflow") else "(a DeerFlow extension point) has"
    return ConfigError(f"'{path}' {whose} no implementation here; {instead}", path=display, field=field)


def translate_config(data: dict[str, Any], display: str = "config.yaml") -> tuple[dict[str, Any], list[CompatNote]]:
    """DeerFlow's shape rewritten to ours, and a note per mapped or accepted key.

    Runs on the raw mapping before ``$VAR`` resolution, so an accepted key's variable need
    not be set."""
    data = copy.deepcopy(data)
    notes: list[CompatNote] = []
    # DeerFlow treats a present-but-null section (every entry commented out) as absent.
    data = {k: v for k, v in data.items() if v is not None}

    for key in list(data):
        if key not in TOP_LEVEL_ACCEPTED:
            continue
        reason, subkeys = TOP_LEVEL_ACCEPTED[key]
        value = data.pop(key)
        if key in PROVIDER_SECTIONS and isinstance(value, dict) and value.get("enabled") and isinstance(value.get("provider"), dict):
            use = value["provider"].get("use")
            raise _class_error(f"{key}.provider.use", str(use), PROVIDER_SECTIONS[key], display)
        if key == "plugins" and isinstance(value, list):
            for i, spec in enumerate(value):
                if isinstance(spec, dict) and spec.get("enabled", True) and spec.get("use"):
                    raise _class_error(f"plugins[{i}].use", str(spec["use"]), "DeerFlow plugins cannot be loaded here; remove the entry or set enabled: false", display)
        if key == "database" and isinstance(value, dict):
            _database_to_checkpoints(data, value, notes)
        if subkeys is not None and isinstance(value, dict):
            for sub in value:
                if sub in ("checkpoint_channel_mode", "checkpoint_delta") and key == "database":
                    continue
                if sub not in subkeys:
                    raise _unknown(f"{key}.{sub}", display)
                if isinstance(subkeys, dict):
                    _check_nested(value[sub], subkeys[sub], f"{key}.{sub}", display)
                _note(notes, f"{key}.{sub}", ACCEPTED, reason)
        else:
            _note(notes, key, ACCEPTED, reason)

    _guardrails(data, notes, display)
    for path, reason in SECTION_ACCEPTED.items():
        section, _, sub = path.partition(".")
        block = data.get(section)
        if isinstance(block, dict) and sub in block:
            if path == "memory.backend_config":
                _memory_backend(block, notes)
                if sub not in block:
                    continue
            block.pop(sub)
            _note(notes, path, ACCEPTED, reason)
    for path, target in SECTION_RENAMED.items():
        section, _, sub = path.partition(".")
        block = data.get(section)
        if isinstance(block, dict) and sub in block:
            value = block.pop(sub)
            ours = target.partition(".")[2]
            block.setdefault(ours, value)
            _note(notes, path, MAPPED, target)

    _memory(data, notes, display)
    _sandbox(data, notes, display)
    _summarization(data, notes)
    _subagents(data, notes)
    _models(data, notes, display)
    _tools(data, notes, display)
    _channels(data, notes)
    _safety_detectors(data, notes, display)
    return data, notes


def _safety_detectors(data: dict[str, Any], notes: list[CompatNote], display: str) -> None:
    block = data.get("safety_finish_reason")
    detectors = block.get("detectors") if isinstance(block, dict) else None
    if not isinstance(detectors, list):
        return
    for i, entry in enumerate(detectors):
        use = entry.get("use") if isinstance(entry, dict) else None
        if isinstance(use, str) and use.startswith("deerflow."):
            if use not in SAFETY_DETECTOR_PATHS:
                raise _class_error(f"safety_finish_reason.detectors[{i}].use", use, _NO_DETECTOR, display)
            entry["use"] = SAFETY_DETECTOR_PATHS[use]
            _note(notes, f"safety_finish_reason.detectors[{i}].use", MAPPED, SAFETY_DETECTOR_PATHS[use])


def _guardrails(data: dict[str, Any], notes: list[CompatNote], display: str) -> None:
    value = data.get("guardrails")
    if not (isinstance(value, dict) and value.get("enabled") and isinstance(value.get("provider"), dict)):
        return
    use = str(value["provider"].get("use") or "")
    if use == ALLOWLIST_PROVIDER:
        data.pop("guardrails")
        _allowlist_to_approvals(data, value, notes, display)
    elif use.startswith("deerflow."):
        raise _class_error("guardrails.provider.use", use, _NO_GUARDRAIL, display)


def _allowlist_to_approvals(data: dict[str, Any], guardrails: dict[str, Any], notes: list[CompatNote], display: str) -> None:
    """DeerFlow's built-in AllowlistProvider as approval rules: ``denied_tools`` denied before
    the file's own rules; with ``allowed_tools`` given, after them those tools are allowed and
    every other tool denied (so an ``ask`` rule of the file's still asks for an allowed tool)."""
    options = guardrails["provider"].get("config") or {}
    if not isinstance(options, dict) or set(options) - {"allowed_tools", "denied_tools"}:
        raise ConfigError("the AllowlistProvider takes allowed_tools and denied_tools only", path=display, field="guardrails.provider.config")
    before: list[dict[str, Any]] = []
    after: list[dict[str, Any]] = []
    denied = options.get("denied_tools") or []
    if denied:
        before.append({"name": "guardrails: denied_tools", "tool": list(denied), "action": "deny"})
    allowed = options.get("allowed_tools")
    if allowed is not None:
        if allowed:
            after.append({"name": "guardrails: allowed_tools", "tool": list(allowed), "action": "allow"})
        after.append({"name": "guardrails: not in allowed_tools", "tool": "*", "action": "deny"})
    approvals = data.setdefault("approvals", {})
    if not isinstance(approvals, dict):
        return
    approvals["rules"] = before + list(approvals.get("rules") or []) + after
    _note(notes, "guardrails.provider", MAPPED,
          f"approvals.rules: {len(before)} deny rule(s) before the file's own, {len(after)} after ({ALLOWLIST_PROVIDER})")
    for sub in guardrails:
        if sub not in ("provider", "enabled"):
            if sub not in GUARDRAILS_KEYS:
                raise ConfigError("unknown key (neither this loader nor DeerFlow's schema defines it)", path=display, field=f"guardrails.{sub}")
            _note(notes, f"guardrails.{sub}", ACCEPTED, "the approval rules decide each call themselves (a rule's action is final)")


def _database_to_checkpoints(data: dict[str, Any], db: dict[str, Any], notes: list[CompatNote]) -> None:
    checkpoints = data.setdefault("checkpoints", {})
    if not isinstance(checkpoints, dict):
        return
    if "checkpoint_channel_mode" in db:
        checkpoints.setdefault("mode", db["checkpoint_channel_mode"])
        _note(notes, "database.checkpoint_channel_mode", MAPPED, "checkpoints.mode")
    delta = db.get("checkpoint_delta")
    if isinstance(delta, dict):
        for sub in delta:
            if sub == "snapshot_frequency":
                checkpoints.setdefault("snapshot_frequency", delta[sub])
                _note(notes, "database.checkpoint_delta.snapshot_frequency", MAPPED, "checkpoints.snapshot_frequency")
            else:
                raise ConfigError("unknown key (neither this loader nor DeerFlow's schema defines it)", field=f"database.checkpoint_delta.{sub}")


def _memory_backend(memory: dict[str, Any], notes: list[CompatNote]) -> None:
    backend = memory.get("backend_config")
    if not isinstance(backend, dict):
        return
    for sub in _MEMORY_BACKEND_RENAMED:
        if sub in backend:
            memory.setdefault(sub, backend.pop(sub))
            _note(notes, f"memory.backend_config.{sub}", MAPPED, f"memory.{sub}")


def _memory(data: dict[str, Any], notes: list[CompatNote], display: str) -> None:
    memory = data.get("memory")
    if not isinstance(memory, dict):
        return
    if "mode" in memory:
        mode = memory.pop("mode")
        if mode not in ("middleware", "tool"):
            raise ConfigError(f"memory.mode must be 'middleware' or 'tool', not {mode!r}", path=display, field="memory.mode")
        memory.setdefault("tool_mode", mode == "tool")
        _note(notes, "memory.mode", MAPPED, f"memory.tool_mode: {str(mode == 'tool').lower()}")
    if "manager_class" in memory:
        manager = memory.pop("manager_class")
        if manager not in MEMORY_MANAGERS:
            raise _class_error("memory.manager_class", str(manager), _NO_MEMORY, display)
        _note(notes, "memory.manager_class", MAPPED, MEMORY_MANAGERS[manager])


def _sandbox(data: dict[str, Any], notes: list[CompatNote], display: str) -> None:
    sandbox = data.get("sandbox")
    if not isinstance(sandbox, dict):
        return
    use = sandbox.get("use")
    if isinstance(use, str) and use.startswith("deerflow."):
        if use not in SANDBOX_PATHS:
            raise _class_error("sandbox.use", use, _NO_SANDBOX, display)
        sandbox["use"] = SANDBOX_PATHS[use]
        _note(notes, "sandbox.use", MAPPED, f"sandbox.use: {SANDBOX_PATHS[use]} ({use})")


def _summarization(data: dict[str, Any], notes: list[CompatNote]) -> None:
    block = data.get("summarization")
    if not isinstance(block, dict):
        return
    if isinstance(block.get("trigger"), dict):
        block["trigger"] = [block["trigger"]]  # DeerFlow allows one trigger or a list
    if "trigger" in block and block["trigger"] is None:
        block.pop("trigger")
    keep = block.get("keep")
    if isinstance(keep, dict) and keep.get("type") == "fraction":
        block.pop("keep")
        _note(notes, "summarization.keep.type", ACCEPTED, "keep counts messages or tokens here, not a fraction; the default (20 messages) applies")


def _subagents(data: dict[str, Any], notes: list[CompatNote]) -> None:
    block = data.get("subagents")
    if isinstance(block, dict) and "max_turns" in block and block["max_turns"] is None:
        block.pop("max_turns")  # DeerFlow's "no override"; ours then applies its default
    if not isinstance(block, dict) or "custom_agents" not in block:
        return
    if not isinstance(block.get("custom_agents"), dict):
        block.pop("custom_agents")
        return
    types = block.setdefault("types", {})
    for name, spec in block.pop("custom_agents").items():
        if not isinstance(spec, dict):
            continue
        ours = {k: v for k, v in spec.items() if k in ("description", "tools", "disallowed_tools", "skills", "model", "max_turns", "timeout_seconds")}
        if "system_prompt" in spec:
            ours["prompt"] = spec["system_prompt"]
        if ours.get("model") == "inherit":
            ours.pop("model")  # DeerFlow's word for the lead's model; ours leaves it unset
        # A DeerFlow custom agent has its own limits (50 turns, 900 s), not the section's.
        ours.setdefault("max_turns", 50)
        ours.setdefault("timeout_seconds", 900)
        types.setdefault(name, ours)
        _note(notes, f"subagents.custom_agents.{name}", MAPPED, f"subagents.types.{name}")


def _models(data: dict[str, Any], notes: list[CompatNote], display: str) -> None:
    models = data.get("models")
    if isinstance(models, dict):  # a mapping name -> entry
        data["models"] = models = [{"name": name, **(entry or {})} for name, entry in models.items()]
    if not isinstance(models, list):
        return
    for i, entry in enumerate(models):
        if not isinstance(entry, dict):
            continue
        use = entry.get("use")
        if isinstance(use, str) and use.startswith("deerflow."):
            if use not in MODEL_PATHS:
                raise _class_error(f"models[{i}].use", use, _NO_MODEL, display)
            entry["use"] = MODEL_PATHS[use]
            _note(notes, f"models[{i}].use", MAPPED, f"{MODEL_PATHS[use]} ({use})")
        for key, reason in MODEL_ACCEPTED.items():
            if key in entry:
                entry.pop(key)
                _note(notes, f"models[{i}].{key}", ACCEPTED, reason)
        if "when_thinking_enabled" in entry and entry["when_thinking_enabled"] is None:
            entry.pop("when_thinking_enabled")
        if isinstance(entry.get("thinking"), dict):
            thinking = entry.pop("thinking")
            entry.setdefault("when_thinking_enabled", {}).setdefault("thinking", thinking)
            _note(notes, f"models[{i}].thinking", MAPPED, f"models[{i}].when_thinking_enabled.thinking")


def _tools(data: dict[str, Any], notes: list[CompatNote], display: str) -> None:
    tools = data.get("tools")
    if not isinstance(tools, list):
        return
    kept = []
    for i, entry in enumerate(tools):
        use = entry.get("use") if isinstance(entry, dict) else None
        if not (isinstance(use, str) and use.startswith("deerflow.")):
            kept.append(entry)
            continue
        if use in SANDBOX_TOOL_PATHS:
            _note(notes, f"tools[{i}] ({entry.get('name')})", MAPPED, f"the built-in sandbox tool {SANDBOX_TOOL_PATHS[use]} (entry dropped)")
            for key in entry:
                if key not in ("name", "group", "use"):
                    _note(notes, f"tools[{i}].{key}", ACCEPTED, "the built-in sandbox tools take their limits from the sandbox section")
            continue
        if use not in TOOL_PATHS:
            raise _class_error(f"tools[{i}].use", use, _NO_TOOL, display)
        target, provider = TOOL_PATHS[use]
        allowed = _TOOL_OPTIONS.get(target.rpartition(":")[2], set())
        ours = {"name": entry.get("name"), "group": entry.get("group", "default"), "use": target}
        if provider:
            ours["provider"] = provider
        for key, value in entry.items():
            if key in ("name", "group", "use"):
                continue
            if key in allowed:
                ours[key] = value
            elif key in _PROVIDER_KEYS and provider:
                web = data.setdefault("web", {})
                web.setdefault("providers", {}).setdefault(provider, {}).setdefault(key, value)
                _note(notes, f"tools[{i}].{key}", MAPPED, f"web.providers.{provider}.{key}")
            elif target.startswith("harness.tools.browser:"):
                _note(notes, f"tools[{i}].{key}", ACCEPTED, _BROWSER_ACCEPTED)
            else:
                _note(notes, f"tools[{i}].{key}", ACCEPTED, f"the {provider or 'web'} provider here has no such option (docs/tools.md)")
        _note(notes, f"tools[{i}].use", MAPPED, f"{target}" + (f" with provider {provider}" if provider else "") + f" ({use})")
        kept.append(ours)
    data["tools"] = kept


def _channels(data: dict[str, Any], notes: list[CompatNote]) -> None:
    channels = data.get("channels")
    if not isinstance(channels, dict):
        return
    for key, reason in CHANNELS_ACCEPTED.items():
        if key in channels:
            channels.pop(key)
            _note(notes, f"channels.{key}", ACCEPTED, reason)
    for name, block in channels.items():
        if not isinstance(block, dict):
            continue
        for key, reason in CHANNEL_PROVIDER_ACCEPTED.items():
            if key in block:
                block.pop(key)
                _note(notes, f"channels.{name}.{key}", ACCEPTED, reason)
    # DeerFlow's operator-wide mention handle for GitHub is our channels.github.mention_login.
    github = channels.get("github")
    if isinstance(github, dict) and "default_mention_login" in github:
        value = github.pop("default_mention_login")
        github.setdefault("mention_login", value)
        _note(notes, "channels.github.default_mention_login", MAPPED, "channels.github.mention_login")


def translate_extensions(data: dict[str, Any]) -> tuple[dict[str, Any], list[CompatNote]]:
    """``extensions_config.json`` in DeerFlow's shape rewritten to ours, with notes."""
    data = copy.deepcopy(data)
    notes: list[CompatNote] = []
    for key, reason in EXTENSIONS_TOP_ACCEPTED.items():
        if key in data:
            data.pop(key)
            _note(notes, key, ACCEPTED, reason)
    servers = data.get("mcpServers")
    if isinstance(servers, dict):
        for name, server in servers.items():
            if not isinstance(server, dict):
                continue
            where = f"mcpServers.{name}"
            for key, reason in MCP_SERVER_ACCEPTED.items():
                if key in server:
                    server.pop(key)
                    _note(notes, f"{where}.{key}", ACCEPTED, reason)
            if "session_init_timeout" in server:
                value = server.pop("session_init_timeout")
                if value is not None:
                    server.setdefault("connect_timeout", value)
                _note(notes, f"{where}.session_init_timeout", MAPPED, f"{where}.connect_timeout")
            _routing(server.get("routing"), f"{where}.routing", notes)
            tools = server.get("tools")
            if isinstance(tools, dict):
                for tool, settings in tools.items():
                    if isinstance(settings, dict):
                        _routing(settings.get("routing"), f"{where}.tools.{tool}.routing", notes)
    return data, notes


def _routing(routing: Any, where: str, notes: list[CompatNote]) -> None:
    if not isinstance(routing, dict):
        return
    for key, reason in MCP_ROUTING_ACCEPTED.items():
        if key in routing:
            routing.pop(key)
            _note(notes, f"{where}.{key}", ACCEPTED, reason)
