"""The run request: the subset of LangGraph Platform's RunCreate that we honour.

Unknown keys and options we cannot honour are a 422 naming the field, never silently
dropped. A value we honour anyway is accepted: every stream here is resumable, so
``stream_resumable`` may be true or false; a resume for a thread that is not waiting is always
refused, which is what ``strict_resume: true`` asks for; ``checkpoint_during`` is the SDK's
older spelling of ``durability``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from apps.errors import InvalidRequest

SUPPORTED_STREAM_MODES = ("values", "messages-tuple", "updates", "custom", "debug", "tasks", "checkpoints")
DEFAULT_RECURSION_LIMIT = 100
MAX_RECURSION_LIMIT = 1000


class RunCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    assistant_id: str | None = None
    input: dict[str, Any] | None = None
    command: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    config: dict[str, Any] | None = None
    context: dict[str, Any] | None = None
    checkpoint_id: str | None = None
    checkpoint: dict[str, Any] | None = None
    interrupt_before: list[str] | Literal["*"] | None = None
    interrupt_after: list[str] | Literal["*"] | None = None
    stream_mode: str | list[str] = Field(default_factory=lambda: ["values"])
    stream_subgraphs: bool = False
    stream_resumable: bool | None = None
    on_disconnect: Literal["cancel", "continue"] = "cancel"
    multitask_strategy: Literal["reject", "interrupt", "rollback"] = "reject"
    if_not_exists: Literal["create", "reject"] | None = None
    durability: Literal["sync", "async", "exit"] | None = None
    checkpoint_during: bool | None = None
    strict_resume: bool | None = None
    langsmith_tracer: dict[str, Any] | None = None
    # Accepted only empty: we do not call webhooks, delay runs or collect feedback keys.
    webhook: None = None
    on_completion: Literal["keep"] | None = None
    after_seconds: Literal[0] | None = None
    feedback_keys: list[str] | None = None
    version: str | None = None

    @field_validator("stream_mode")
    @classmethod
    def _modes(cls, value: str | list[str]) -> list[str]:
        modes = [value] if isinstance(value, str) else list(value)
        for mode in modes:
            if mode not in SUPPORTED_STREAM_MODES:
                raise ValueError(f"unsupported stream mode '{mode}'; use one of {', '.join(SUPPORTED_STREAM_MODES)}")
        return list(dict.fromkeys(modes))

    @field_validator("langsmith_tracer")
    @classmethod
    def _tracer(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value:
            raise ValueError("per-run tracing options are not supported")
        return value

    @field_validator("feedback_keys")
    @classmethod
    def _feedback_keys(cls, value: list[str] | None) -> list[str] | None:
        if value:
            raise ValueError("feedback keys are not supported; use the feedback API")
        return value

    @model_validator(mode="after")
    def _shape(self) -> RunCreate:
        if self.checkpoint_during is not None:
            # The SDK documents checkpoint_during=True as "async" and False as "sync".
            implied = "async" if self.checkpoint_during else "sync"
            if self.durability not in (None, implied):
                raise ValueError(f"checkpoint_during={str(self.checkpoint_during).lower()} contradicts durability={self.durability}")
            self.durability = implied
        if self.strict_resume is False and self.command is not None:
            raise ValueError("strict_resume: false is not supported: a resume for a thread that is not waiting for input is always refused")
        if self.command is not None:
            unknown = set(self.command) - {"resume"}
            if unknown:
                raise ValueError(f"command: only 'resume' is supported, not {', '.join(sorted(unknown))}")
            if "resume" not in self.command:
                raise ValueError("command: 'resume' is required")
        if self.input is not None and self.command is not None:
            raise ValueError("send either input or command, not both")
        config = self.config or {}
        limit = config.get("recursion_limit")
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_RECURSION_LIMIT):
            raise ValueError(f"config.recursion_limit must be an integer from 1 to {MAX_RECURSION_LIMIT}")
        configurable = config.get("configurable") or {}
        if not isinstance(configurable, dict):
            raise ValueError("config.configurable must be an object")
        if self.input is not None:
            messages = self.input.get("messages")
            if messages is not None and not isinstance(messages, list):
                raise ValueError("input.messages must be a list")
            for i, msg in enumerate(messages or []):
                if not isinstance(msg, dict) or not (msg.get("role") or msg.get("type")) or "content" not in msg:
                    raise ValueError(f"input.messages[{i}] needs 'role' (or 'type') and 'content'")
        return self

    @property
    def checkpoint_selector(self) -> str | None:
        if self.checkpoint_id:
            return self.checkpoint_id
        if self.checkpoint:
            return self.checkpoint.get("checkpoint_id")
        return None

    @property
    def recursion_limit(self) -> int:
        return (self.config or {}).get("recursion_limit") or DEFAULT_RECURSION_LIMIT


def parse_run_request(data: Any) -> RunCreate:
    if not isinstance(data, dict):
        raise InvalidRequest("the run request must be a JSON object")
    try:
        return RunCreate.model_validate(data)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        field = ".".join(str(p) for p in err["loc"]) or "request"
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown or unsupported run option"
        elif field in {"webhook", "after_seconds", "on_completion"}:
            msg = "unsupported run option: only an empty value is accepted"
        raise InvalidRequest(f"{field}: {msg}") from None
