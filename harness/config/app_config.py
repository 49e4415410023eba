"""Pydantic models for ``config.yaml``.

Sections forbid unknown keys so a typo is an error that names the field instead of a
setting silently ignored. Later features add their fields here.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt, PositiveInt, PrivateAttr, field_validator, model_validator

from harness.config import class_path
from harness.config.browser import BrowserConfig
from harness.net.guard import check_networks
from harness.config.guards import (LoopDetectionConfig, ReadBeforeWriteConfig, SafetyFinishReasonConfig, TokenBudgetConfig,
                                   ToolOutputConfig, ToolProgressConfig)
from harness.governance.config import ApprovalsConfig, BudgetsConfig
from harness.observability.tracing import TracingConfig


_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PricingConfig(_Section):
    """Price per million tokens, used by usage and cost reporting."""

    currency: str = "USD"
    input_per_million: float = Field(0.0, ge=0)
    output_per_million: float = Field(0.0, ge=0)
    # Price of input tokens served from the provider's prompt cache; the input price when unset.
    input_cache_hit_per_million: float | None = Field(None, ge=0)


# Keys the harness reads itself; everything else on a model entry goes to the class.
MODEL_META_FIELDS = frozenset(
    {"name", "display_name", "description", "use", "supports_thinking", "supports_vision",
     "when_thinking_enabled", "context_window", "pricing", "unavailable_reason"}
)


class ModelConfig(BaseModel):
    """One chat model. Extra keys (``model``, ``base_url``, ``api_key``, ``temperature`` …)
    are passed to the ``use:`` class as keyword arguments."""

    model_config = ConfigDict(extra="allow")

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,127}$")
    display_name: str | None = None
    description: str | None = None
    use: str
    supports_thinking: bool = False
    supports_vision: bool = False
    when_thinking_enabled: dict[str, Any] = Field(default_factory=dict)
    max_tokens: PositiveInt | None = None
    context_window: PositiveInt | None = None
    pricing: PricingConfig | None = None
    # Set by the loader when a ``$VAR`` this entry needs is missing: the server still
    # starts, and using the model raises this reason.
    unavailable_reason: str | None = None

    @field_validator("use")
    @classmethod
    def _use_is_a_chat_model(cls, value: str) -> str:
        obj = class_path.resolve(value)
        from langchain_core.language_models import BaseChatModel

        if not (isinstance(obj, type) and issubclass(obj, BaseChatModel)):
            raise ValueError(f"'{value}' is not a LangChain chat model class")
        return value

    @property
    def label(self) -> str:
        return self.display_name or self.name

    def constructor_kwargs(self) -> dict[str, Any]:
        kwargs = dict(self.model_extra or {})
        if self.max_tokens is not None:
            kwargs["max_tokens"] = self.max_tokens
        return kwargs


class ToolGroupConfig(_Section):
    name: str


class ToolConfig(BaseModel):
    """A tool from a class or variable path; extra keys configure the tool."""

    model_config = ConfigDict(extra="allow")

    name: str
    group: str = "default"
    use: str

    @field_validator("use")
    @classmethod
    def _format(cls, value: str) -> str:
        return class_path.check_format(value)


class SandboxMount(BaseModel):
    """An extra host directory in every sandbox container (DeerFlow's ``sandbox.mounts``)."""

    model_config = ConfigDict(extra="forbid")

    host_path: str
    container_path: str
    read_only: bool = False

    @field_validator("host_path", "container_path")
    @classmethod
    def _absolute(cls, value: str) -> str:
        if not value.startswith("/") or "\x00" in value or ":" in value:
            raise ValueError(f"mount paths must be absolute, without ':', got {value!r}")
        return value

    @field_validator("container_path")
    @classmethod
    def _not_ours(cls, value: str) -> str:
        for reserved in ("/mnt/user-data", "/mnt/skills", "/opt/deerflow-toolbox", "/tmp", "/proc", "/sys", "/dev"):
            if value == reserved or value.startswith(reserved + "/") or reserved.startswith(value.rstrip("/") + "/"):
                raise ValueError(f"container_path {value!r} overlaps {reserved}, which the sandbox provides")
        return value


class SandboxConfig(BaseModel):
    """``use: null`` picks the isolated provider when it works here, else the local one."""

    model_config = ConfigDict(extra="allow")

    use: str | None = None
    bash_command_timeout: PositiveInt = 600
    allow_network: bool = False
    max_output_chars: PositiveInt = 20000
    read_file_max_chars: PositiveInt = 50000
    cache_size: PositiveInt = 256  # per-thread sandboxes kept in memory per process
    # Isolated provider only: extra host directories mounted read-only at the same path
    # (e.g. /opt/toolchain). The system runtime under /usr is always mounted.
    isolated_ro_paths: list[str] = Field(default_factory=list)
    # The toolbox virtualenv skills' scripts use (scripts/bootstrap.sh builds .toolbox/ from
    # skills/toolbox-requirements.txt); first on the sandbox's PATH, read-only. null: .toolbox/.
    toolbox_path: str | None = None
    # Commands see an allow-listed environment (docs/sandbox.md); these add to it: fixed
    # values, and names copied from the server's environment (secret-looking ones still dropped).
    env: dict[str, str] = Field(default_factory=dict)
    env_passthrough: list[str] = Field(default_factory=list)
    # Per-command resource limits; 0 turns one off.
    max_memory_mb: NonNegativeInt = 2048
    max_processes: NonNegativeInt = 512
    max_open_files: NonNegativeInt = 1024
    # Disk quota on the writable user-data folders, per thread and summed over a user's threads.
    thread_quota_mb: NonNegativeInt = 1024
    user_quota_mb: NonNegativeInt = 10240
    # The container provider (use: container; docs/sandbox.md). DeerFlow's keys first.
    image: str = "deerflow-sandbox:latest"  # built by scripts/build_sandbox_image.sh
    replicas: NonNegativeInt = 3  # warm containers started ahead, handed to threads on first use
    idle_timeout: NonNegativeInt = 600  # seconds unused before a thread's container is removed; 0 keeps it
    mounts: list[SandboxMount] = Field(default_factory=list)
    container_prefix: str = "deer-flow-sandbox"
    engine_url: str | None = None  # Docker Engine API socket; null: $DOCKER_HOST, Podman's, then Docker's
    cpus: float = Field(default=0.0, ge=0)  # CPU cores per container (0 = no limit)
    tmp_mb: NonNegativeInt = 256  # the container's /tmp, in memory and counted in max_memory_mb
    lease_seconds: PositiveInt = 60  # how long a container stays ours after our last renewal
    # Where a container thread's files live: "image" (an ext4 image of thread_quota_mb, a hard
    # limit; root), "watcher" (host folders and the quota watcher), "auto" (image where it can).
    thread_disk: Literal["auto", "image", "watcher"] = "auto"
    # allow_network with the container provider: out only through the SSRF guard, which refuses
    # private, loopback and link-local addresses unless listed here (metadata ones always).
    allowed_private_networks: list[str] = Field(default_factory=list)

    @field_validator("env_passthrough")
    @classmethod
    def _env_names(cls, value: list[str]) -> list[str]:
        for name in value:
            if not _ENV_NAME.match(name):
                raise ValueError(f"env_passthrough entries must be environment variable names, got {name!r}")
        return value

    @field_validator("env")
    @classmethod
    def _env_values(cls, value: dict[str, str]) -> dict[str, str]:
        for name, item in value.items():
            if not _ENV_NAME.match(name) or "\x00" in item:
                raise ValueError(f"sandbox.env: {name!r} must be a variable name with a value without NUL bytes")
        return value

    @field_validator("allowed_private_networks")
    @classmethod
    def _networks(cls, value: list[str]) -> list[str]:
        return check_networks(value)

    @field_validator("isolated_ro_paths")
    @classmethod
    def _absolute(cls, value: list[str]) -> list[str]:
        for item in value:
            if not item.startswith("/") or "\x00" in item:
                raise ValueError(f"isolated_ro_paths entries must be absolute paths, got {item!r}")
        return value

    @field_validator("container_prefix")
    @classmethod
    def _prefix(cls, value: str) -> str:
        if not re.match(r"^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,40}$", value):
            raise ValueError("container_prefix must be letters, digits, '_', '.' or '-' (at most 41)")
        return value

    @field_validator("use")
    @classmethod
    def _format(cls, value: str | None) -> str | None:
        if value is None or value in {"local", "bwrap", "container"}:
            return value
        return class_path.check_format(value)


class SkillsConfig(_Section):
    path: str | None = None  # host directory; default: skills/ in the repo root
    container_path: str = "/mnt/skills"
    deferred_discovery: bool = False  # list names only; the agent looks skills up with describe_skill


class SkillScanConfig(_Section):
    # DeerFlow's switch for its deterministic analysers. Off: an install checks only the
    # archive's structure (paths, sizes, SKILL.md), which keeps the unpack safe and cannot be
    # turned off; the content and Python rules, and with them the hold on a skill the agent
    # wrote, are skipped. review_skill_package always runs them: it is a review.
    enabled: bool = True


class SkillEvolutionConfig(_Section):
    # DeerFlow's switch for the agent writing its own skills (the skill_manage tool). Off by
    # default: on, a run can change the user's custom skills, which later runs follow.
    enabled: bool = False
    # A model from models: that reads each write before it lands; none: the static scan alone.
    moderation_model_name: str | None = None
    # When that model cannot answer: true refuses the write; false lets a SKILL.md or reference
    # through on the static scan alone (a script is refused either way).
    security_fail_closed: bool = True


class MemoryConfig(_Section):
    # Off unless config.yaml turns it on: learning costs a model call per quiet conversation.
    enabled: bool = False
    debounce_seconds: float = Field(30, ge=0)
    # A server being stopped applies its pending updates for at most this long, then saves the
    # rest for its next start (under `make run` the launcher kills a server 15 s after SIGTERM,
    # hence a default below DeerFlow's 30). ``shutdown_flush_seconds`` is this key's older name.
    shutdown_flush_timeout_seconds: float = Field(10, ge=0, le=300)
    model_name: str | None = None
    max_facts: PositiveInt = 100
    fact_confidence_threshold: float = Field(0.7, ge=0, le=1)
    injection_enabled: bool = True
    max_injection_tokens: PositiveInt = 2000
    # How the injection budget is counted: "tiktoken" (cl100k_base, offline: the encoding ships
    # in the bpe-openai package) or "char" (an estimate: 4 characters a token, 2 for CJK).
    token_counting: Literal["tiktoken", "char"] = "tiktoken"
    # Full-text retrieval of the facts a turn needs: "fts5" (words; SQLite FTS5 or PostgreSQL
    # to_tsvector), "fts5_cjk" (also CJK text, by character bigrams, so Chinese or Japanese
    # facts are found by a word inside a sentence), "" (no index: substring match).
    retrieval_adapter: Literal["fts5", "fts5_cjk", ""] = "fts5"
    # Staleness review (DeerFlow's keys and defaults): facts past their review date are shown to
    # the updater model in its usual call, which keeps, extends or removes them.
    staleness_review_enabled: bool = True
    staleness_age_days: int = Field(90, ge=30, le=365)
    staleness_min_candidates: int = Field(3, ge=1, le=50)
    staleness_max_removals_per_cycle: int = Field(10, ge=1, le=50)
    staleness_protected_categories: list[str] = Field(default_factory=lambda: ["correction"])
    staleness_max_lifetime_multiplier: float = Field(20.0, ge=1, le=100)
    staleness_max_extension_days: int = Field(3650, ge=90, le=36500)
    # Consolidation: categories holding many facts are shown to the updater model, which may
    # merge related ones into one richer fact. Lossy, so off unless turned on (as DeerFlow).
    consolidation_enabled: bool = False
    consolidation_min_facts: int = Field(8, ge=3, le=30)
    consolidation_max_groups_per_cycle: int = Field(3, ge=1, le=10)
    consolidation_max_sources: int = Field(8, ge=2, le=20)
    # The agent manages memory with memory_* tools instead of the passive updater.
    tool_mode: bool = False

    @model_validator(mode="before")
    @classmethod
    def _older_names(cls, data: Any) -> Any:
        if isinstance(data, dict) and "shutdown_flush_seconds" in data:
            data = dict(data)
            data.setdefault("shutdown_flush_timeout_seconds", data.pop("shutdown_flush_seconds"))
        return data


class SummarizationTrigger(_Section):
    type: Literal["tokens", "messages", "fraction"]
    value: float = Field(gt=0)


class SummarizationKeep(_Section):
    type: Literal["messages", "tokens"] = "messages"
    value: PositiveInt = 20


class SummarizationConfig(_Section):
    enabled: bool = False
    model_name: str | None = None
    trigger: list[SummarizationTrigger] = Field(default_factory=lambda: [SummarizationTrigger(type="fraction", value=0.8)])
    keep: SummarizationKeep = Field(default_factory=SummarizationKeep)


class SuggestionsConfig(_Section):
    """Follow-up questions after an answer (docs/thread-actions.md): one short model call."""

    enabled: bool = False
    model_name: str | None = None  # null: the thread's model
    max_suggestions: int = Field(3, ge=1, le=3)


class GoalsConfig(_Section):
    """Thread goals (docs/thread-actions.md#goals): the evaluator that judges each turn, and
    the continuation cap a goal gets when its request names none."""

    model_name: str | None = None  # the evaluator's model; null: the default (first) model
    max_continuations: int = Field(8, ge=0, le=8)


class InputPolishConfig(_Section):
    """The composer's Polish button (docs/thread-actions.md): one model call rewrites a draft
    before it is sent; nothing is stored and no run starts."""

    enabled: bool = True
    max_chars: PositiveInt = 4000  # of the draft, after trimming
    model_name: str | None = None  # null: the default model


class TitleConfig(_Section):
    enabled: bool = True
    max_words: PositiveInt = 8
    max_chars: PositiveInt = 80
    model_name: str | None = None  # null: fast local title, no model call


# What a subagent never gets unless its type says otherwise (DeerFlow's default
# ``disallowed_tools``): no nesting, and no waiting on a user nobody is watching.
DEFAULT_DISALLOWED_TOOLS = ("task", "ask_clarification", "present_files")


class SubagentTypeConfig(_Section):
    """A custom subagent type (``subagents.types.<name>``); unset limits fall back to the
    section's defaults, an unset model to the lead's."""

    description: str = ""
    prompt: str
    tools: list[str] | None = None  # names from the lead's tool set; null: all of them but the disallowed ones
    # null: task, ask_clarification, present_files. `task` is withheld whatever this says.
    disallowed_tools: list[str] | None = None
    skills: list[str] | None = None  # skills it may see and start; null: the lead's, []: none
    model: str | None = None
    timeout_seconds: PositiveInt | None = None
    max_turns: PositiveInt | None = None
    max_tokens: PositiveInt | None = None


class SubagentOverrideConfig(_Section):
    """``subagents.agents.<name>``: per-type overrides, for built-in and custom types alike."""

    timeout_seconds: PositiveInt | None = None
    max_turns: PositiveInt | None = None
    model: str | None = None
    skills: list[str] | None = None
    token_budget: TokenBudgetConfig | None = None


def default_subagent_token_budget(summarization_enabled: bool) -> TokenBudgetConfig:
    """DeerFlow's backstop for a subagent that burns tokens: on by default, 1M tokens per task
    when summarization keeps its context small, 2M when nothing does."""
    return TokenBudgetConfig(enabled=True, max_tokens=1_000_000 if summarization_enabled else 2_000_000, warn_threshold=0.7)


class SubagentsConfig(_Section):
    """The ``task`` tool (harness/subagents); docs/subagents.md."""

    enabled: bool = False
    max_concurrent: int = Field(3, ge=1, le=8)
    max_total_per_run: int = Field(6, ge=1, le=50)
    timeout_seconds: PositiveInt = 1800
    max_turns: PositiveInt | None = None  # null: each type's own (general-purpose 150, bash 60, custom 50)
    max_tokens: PositiveInt | None = None
    # Per task. Unset, its ceiling follows summarization.enabled (see default_subagent_token_budget).
    token_budget: TokenBudgetConfig = Field(default_factory=lambda: default_subagent_token_budget(False))
    agents: dict[str, SubagentOverrideConfig] = Field(default_factory=dict)
    types: dict[str, SubagentTypeConfig] = Field(default_factory=dict)

    def token_budget_for(self, name: str, *, summarization_enabled: bool) -> TokenBudgetConfig:
        """A type's override, else the section's value as written, else the default for the
        summarization switch: a budget someone set is never moved by that switch."""
        override = self.agents.get(name)
        if override is not None and override.token_budget is not None:
            return override.token_budget
        if "token_budget" in self.model_fields_set:
            return self.token_budget
        return default_subagent_token_budget(summarization_enabled)


class ChannelSessionConfig(BaseModel):
    """``channels.session`` (DeerFlow's run defaults for channel runs) and our ``group_chats``;
    a provider's own ``session:`` (with ``users``) has the same shape and overrides it."""

    model_config = ConfigDict(extra="allow")

    assistant_id: str | None = None
    context: dict[str, Any] = Field(default_factory=dict)
    config: dict[str, Any] = Field(default_factory=dict)
    # per_user: each member of a group chat talks to their own thread; shared: one per group.
    group_chats: Literal["per_user", "shared"] | None = None
    users: dict[str, dict[str, Any]] = Field(default_factory=dict)


class ChannelsConfig(BaseModel):
    """IM channel settings; each provider reads its own keys."""

    model_config = ConfigDict(extra="allow")

    enabled: bool = False
    session: ChannelSessionConfig = Field(default_factory=ChannelSessionConfig)

    @model_validator(mode="after")
    def _provider_sessions(self) -> ChannelsConfig:
        for name, section in (self.model_extra or {}).items():
            if isinstance(section, dict) and section.get("session") is not None:
                try:
                    ChannelSessionConfig.model_validate(section["session"])
                except ValueError as exc:
                    raise ValueError(f"channels.{name}.session: {exc}") from None
        return self


class SchedulerConfig(_Section):
    enabled: bool = True  # false: beat's firings are recorded as skipped; "Run now" still works
    default_timezone: str = "UTC"  # for tasks created without a time zone
    min_interval_minutes: PositiveInt = 1  # a cron that fires more often is refused

    @field_validator("default_timezone")
    @classmethod
    def _zone(cls, value: str) -> str:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown time zone {value!r}; use an IANA name such as 'Europe/Berlin' or 'UTC'") from None
        return value


class UploadsConfig(_Section):
    """File uploads, artifact edits and run archives (API limits; 413 beyond them)."""

    max_files: int = Field(20, ge=1, le=100)  # files per request (Django refuses more than 100 parts)
    max_file_size: PositiveInt = 100 * 1024 * 1024  # bytes, per file
    max_total_size: PositiveInt = 200 * 1024 * 1024  # bytes, per request
    convert_documents: bool = True  # PDF/Word/Excel/PowerPoint get a Markdown companion
    artifact_edit_max_bytes: PositiveInt = 2 * 1024 * 1024  # PUT on an artifact
    archive_max_files: PositiveInt = 200  # files in a run's artifact ZIP
    archive_max_bytes: PositiveInt = 500 * 1024 * 1024  # uncompressed bytes in that ZIP


class KnowledgeEmbeddingsConfig(_Section):
    """An OpenAI-compatible ``/v1/embeddings`` endpoint the operator runs or pays for; unset
    ``model`` means no embeddings (full-text search only)."""

    model: str | None = None
    base_url: str | None = None  # null: the OpenAI SDK's default (api.openai.com)
    api_key: str | None = None  # "$VAR" reads the environment
    dimensions: PositiveInt | None = None  # asked of models that can shorten their vectors
    batch_size: int = Field(64, ge=1, le=2048)
    timeout_seconds: float = Field(60, gt=0, le=600)


class KnowledgeConfig(_Section):
    """Knowledge bases (docs/knowledge.md): collections of documents the agent searches with
    ``knowledge_search`` and cites."""

    enabled: bool = True
    chunk_size: int = Field(1200, ge=200, le=20000)  # characters per passage, at most
    chunk_overlap: int = Field(150, ge=0, le=2000)  # characters repeated when a long paragraph is cut
    max_document_size: PositiveInt = 50 * 1024 * 1024  # bytes, per uploaded or fetched document
    max_documents_per_collection: PositiveInt = 1000
    search_results: int = Field(5, ge=1, le=50)  # passages a search returns unless it asks for fewer
    retrieval_adapter: Literal["fts5", "fts5_cjk"] = "fts5"
    embeddings: KnowledgeEmbeddingsConfig = Field(default_factory=KnowledgeEmbeddingsConfig)

    @model_validator(mode="after")
    def _overlap(self) -> KnowledgeConfig:
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError("knowledge.chunk_overlap must be smaller than knowledge.chunk_size")
        return self


WEB_PROVIDERS = ("ddgs", "tavily", "searxng", "brave", "jina", "firecrawl")


class ToolSearchConfig(_Section):
    """``enabled``: MCP tools are shown by name only until the model loads them with
    ``tool_search`` (docs/mcp.md). ``auto_promote_top_k``: at most this many deferred tools
    whose ``routing`` (mode ``prefer``) keywords the user's message mentions are promoted
    before a model call, highest priority first (DeerFlow's key; 1 to 5)."""

    enabled: bool = False
    auto_promote_top_k: int = Field(3, ge=1, le=5)


class WebConfig(_Section):
    """Settings shared by the web tools and the SSRF guard (``harness.net.guard``).

    ``providers`` holds each provider's keys (``api_key``, ``base_url``, ``timeout`` …);
    the tools' ``tools:`` entries pick which provider they use."""

    allowed_private_networks: list[str] = Field(default_factory=list)
    timeout_seconds: float = Field(20, gt=0, le=300)
    max_response_bytes: PositiveInt = 10 * 1024 * 1024
    user_agent: str = "Mozilla/5.0 (compatible; DeerFlow/1.0; +https://github.com/bytedance/deer-flow)"
    providers: dict[str, dict[str, Any]] = Field(default_factory=dict)

    @field_validator("allowed_private_networks")
    @classmethod
    def _networks(cls, value: list[str]) -> list[str]:
        return check_networks(value)

    @field_validator("providers")
    @classmethod
    def _known_providers(cls, value: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        unknown = sorted(set(value) - set(WEB_PROVIDERS))
        if unknown:
            raise ValueError(f"unknown web provider(s) {', '.join(unknown)}; known: {', '.join(WEB_PROVIDERS)}")
        return value


class CheckpointsConfig(_Section):
    """How LangGraph checkpoints store a thread's messages (docs/runs.md, "Checkpoint storage").

    ``delta`` stores each step's new messages once (storage linear in a thread's length);
    ``full`` stores the whole list in every checkpoint (LangGraph's default, quadratic).
    A delta thread cannot be read in full mode: that is refused with an error, not misread."""

    mode: Literal["delta", "full"] = "delta"
    # A full copy of the list every N message updates bounds the writes a read replays.
    snapshot_frequency: PositiveInt = Field(50, le=10_000)
    # When a run writes its checkpoints, unless the request says (``durability``): ``exit``
    # once at the end (or at an interrupt), ``async``/``sync`` after every step.
    durability: Literal["exit", "async", "sync"] = "exit"


class SandboxAuditConfig(_Section):
    """The audit trail of shell and file tool calls (docs/governance.md#sandbox-audit)."""

    enabled: bool = True
    retention_days: PositiveInt = 90


class GuardrailProviderConfig(_Section):
    use: str
    config: dict[str, Any] = Field(default_factory=dict)  # keyword arguments for the class

    @field_validator("use")
    @classmethod
    def _format(cls, value: str) -> str:
        return class_path.check_format(value)


class GuardrailsConfig(_Section):
    """A provider that vets every tool call (harness/governance/guardrails.py). It is loaded and
    created once per config load, so a path that does not import or a ``config`` the class
    refuses stops the load naming ``guardrails.provider``, and runs share the instance."""

    enabled: bool = False
    fail_closed: bool = True  # a provider that raises denies the call; false lets it run
    passport: str | None = None  # handed to the provider as agent_id
    provider: GuardrailProviderConfig | None = None
    _instance: Any = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _load(self) -> GuardrailsConfig:
        if not self.enabled:
            return self
        if self.provider is None:
            raise ValueError("guardrails.enabled is true but no provider is set (provider.use: package.module:ClassName)")
        use = self.provider.use
        try:
            cls = class_path.resolve(use)
        except class_path.ClassPathError as exc:
            raise ValueError(f"provider.use {use!r}: {exc}") from None
        try:
            instance = cls(**self.provider.config)
        except Exception as exc:
            raise ValueError(f"provider.use {use!r} could not be created with provider.config: {type(exc).__name__}: {exc}") from None
        if not callable(getattr(instance, "evaluate", None)):
            raise ValueError(f"provider.use {use!r} has no evaluate(request) method")
        self._instance = instance
        return self

    @property
    def provider_instance(self) -> Any:
        return self._instance


class AppConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    config_version: int = 0
    models: list[ModelConfig] = Field(default_factory=list)
    tool_groups: list[ToolGroupConfig] = Field(default_factory=list)
    tools: list[ToolConfig] = Field(default_factory=list)
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
    skills: SkillsConfig = Field(default_factory=SkillsConfig)
    skill_scan: SkillScanConfig = Field(default_factory=SkillScanConfig)
    skill_evolution: SkillEvolutionConfig = Field(default_factory=SkillEvolutionConfig)
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    summarization: SummarizationConfig = Field(default_factory=SummarizationConfig)
    title: TitleConfig = Field(default_factory=TitleConfig)
    subagents: SubagentsConfig = Field(default_factory=SubagentsConfig)
    channels: ChannelsConfig = Field(default_factory=ChannelsConfig)
    scheduler: SchedulerConfig = Field(default_factory=SchedulerConfig)
    uploads: UploadsConfig = Field(default_factory=UploadsConfig)
    knowledge: KnowledgeConfig = Field(default_factory=KnowledgeConfig)
    web: WebConfig = Field(default_factory=WebConfig)
    browser: BrowserConfig = Field(default_factory=BrowserConfig)
    tool_search: ToolSearchConfig = Field(default_factory=ToolSearchConfig)
    checkpoints: CheckpointsConfig = Field(default_factory=CheckpointsConfig)
    approvals: ApprovalsConfig = Field(default_factory=ApprovalsConfig)
    budgets: BudgetsConfig = Field(default_factory=BudgetsConfig)
    tracing: TracingConfig = Field(default_factory=TracingConfig)
    suggestions: SuggestionsConfig = Field(default_factory=SuggestionsConfig)
    goals: GoalsConfig = Field(default_factory=GoalsConfig)
    input_polish: InputPolishConfig = Field(default_factory=InputPolishConfig)
    # Run guards, DeerFlow's sections (harness/config/guards.py, docs/agent.md).
    loop_detection: LoopDetectionConfig = Field(default_factory=LoopDetectionConfig)
    tool_progress: ToolProgressConfig = Field(default_factory=ToolProgressConfig)
    read_before_write: ReadBeforeWriteConfig = Field(default_factory=ReadBeforeWriteConfig)
    safety_finish_reason: SafetyFinishReasonConfig = Field(default_factory=SafetyFinishReasonConfig)
    token_budget: TokenBudgetConfig = Field(default_factory=TokenBudgetConfig)
    tool_output: ToolOutputConfig = Field(default_factory=ToolOutputConfig)
    guardrails: GuardrailsConfig = Field(default_factory=GuardrailsConfig)
    sandbox_audit: SandboxAuditConfig = Field(default_factory=SandboxAuditConfig)
    # What the loader did with DeerFlow's keys (harness.config.deerflow_compat): mapped ones and
    # ones accepted without effect, each with its reason; set by parse_config.
    _compat_notes: list[Any] = PrivateAttr(default_factory=list)

    @property
    def compat_notes(self) -> list[Any]:
        return list(self._compat_notes)

    @model_validator(mode="after")
    def _cross_references(self) -> AppConfig:
        names = [m.name for m in self.models]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"model names must be unique; repeated: {', '.join(dupes)}")
        groups = {g.name for g in self.tool_groups}
        for tool in self.tools:
            if groups and tool.group not in groups:
                raise ValueError(f"tool '{tool.name}' uses group '{tool.group}', which tool_groups does not define")
        for section in ("memory", "summarization", "title", "suggestions", "goals", "input_polish"):
            ref = getattr(self, section).model_name
            if ref is not None and ref not in names:
                raise ValueError(f"{section}.model_name '{ref}' is not one of the configured models ({', '.join(names) or 'none'})")
        ref = self.skill_evolution.moderation_model_name
        if ref is not None and ref not in names:
            raise ValueError(f"skill_evolution.moderation_model_name '{ref}' is not one of the configured models ({', '.join(names) or 'none'})")
        return self

    def get_model(self, name: str | None = None) -> ModelConfig | None:
        if name is None:
            return self.models[0] if self.models else None
        return next((m for m in self.models if m.name == name), None)
