"""``config.yaml`` sections of the guards that keep a run from going in circles.

Key names, defaults and limits are DeerFlow's (its ``loop_detection``, ``tool_progress``,
``read_before_write``, ``safety_finish_reason``, ``token_budget`` and ``tool_output``
sections), so a DeerFlow file means the same here. ``token_budget`` is a per-run cap and has
nothing to do with ``budgets:``, the per-user daily/monthly spending limits of governance.
docs/agent.md says what each guard does and where it sits in the chain.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from harness.config import class_path


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolFreqOverride(_Section):
    warn: int = Field(ge=1)
    hard_limit: int = Field(ge=1)

    @model_validator(mode="after")
    def _order(self) -> ToolFreqOverride:
        if self.hard_limit < self.warn:
            raise ValueError("hard_limit must be >= warn")
        return self


class LoopDetectionConfig(_Section):
    enabled: bool = True
    warn_threshold: int = Field(3, ge=1)  # identical tool-call sets before a warning
    hard_limit: int = Field(5, ge=1)  # identical tool-call sets before the forced stop
    window_size: int = Field(20, ge=1)  # recent tool-call sets counted
    max_tracked_threads: int = Field(100, ge=1)  # runs whose history is kept in memory
    tool_freq_warn: int = Field(30, ge=1)  # calls of one tool (any arguments) before a warning
    tool_freq_hard_limit: int = Field(50, ge=1)
    tool_freq_overrides: dict[str, ToolFreqOverride] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _order(self) -> LoopDetectionConfig:
        if self.hard_limit < self.warn_threshold:
            raise ValueError("hard_limit must be greater than or equal to warn_threshold")
        if self.tool_freq_hard_limit < self.tool_freq_warn:
            raise ValueError("tool_freq_hard_limit must be greater than or equal to tool_freq_warn")
        return self


class ToolProgressConfig(_Section):
    enabled: bool = False
    stagnation_threshold: int = Field(3, ge=1)  # consecutive problem results before WARNED
    warn_escalation_count: int = Field(2, ge=1)  # more problems after WARNED before BLOCKED
    inject_assessment: bool = True  # hand the model the hint; false: only block
    jaccard_similarity_threshold: float = Field(0.8, ge=0.0, le=1.0)
    min_word_count_for_similarity: int = 10
    exempt_tools: set[str] = Field(default_factory=lambda: {"ask_clarification", "write_todos", "present_files", "task"})
    max_tracked_threads: int = Field(100, ge=1)


class ReadBeforeWriteConfig(_Section):
    enabled: bool = True


class SafetyDetectorConfig(_Section):
    use: str  # class path of a detector: a ``name`` and ``detect(message)``
    config: dict = Field(default_factory=dict)  # its constructor's keyword arguments

    @field_validator("use")
    @classmethod
    def _format(cls, value: str) -> str:
        return class_path.check_format(value)


class SafetyFinishReasonConfig(_Section):
    enabled: bool = True
    # None: the built-in detectors (OpenAI-compatible content_filter, Anthropic refusal,
    # Gemini SAFETY & co). A list replaces them; an empty list is refused (use enabled: false).
    detectors: list[SafetyDetectorConfig] | None = None

    @field_validator("detectors")
    @classmethod
    def _not_empty(cls, value: list[SafetyDetectorConfig] | None) -> list[SafetyDetectorConfig] | None:
        if value is not None and not value:
            raise ValueError("leave detectors unset for the built-in ones, or list at least one; use enabled: false to turn the guard off")
        return value


class TokenBudgetConfig(_Section):
    enabled: bool = False
    max_tokens: int = Field(200000, ge=1000)  # input + output tokens per run
    max_input_tokens: int | None = Field(None, ge=1)
    max_output_tokens: int | None = Field(None, ge=1)
    warn_threshold: float = Field(0.8, ge=0.0, le=1.0)  # fraction of a limit that earns a warning
    hard_stop_threshold: float = Field(1.0, ge=0.0, le=1.0)  # fraction that ends the run

    @model_validator(mode="after")
    def _order(self) -> TokenBudgetConfig:
        if self.hard_stop_threshold < self.warn_threshold:
            raise ValueError("hard_stop_threshold must be >= warn_threshold")
        return self


TOOL_RESULTS_DIRNAME = ".tool-results"


class ToolOutputConfig(_Section):
    enabled: bool = True
    externalize_min_chars: int = Field(12000, ge=0)  # longer results go to a file; 0: never
    preview_head_chars: int = Field(2000, ge=0)  # of an externalized result, shown inline
    preview_tail_chars: int = Field(1000, ge=0)
    fallback_max_chars: int = Field(30000, ge=0)  # cap when no file can be written; 0: none
    fallback_head_chars: int = Field(8000, ge=0)
    fallback_tail_chars: int = Field(3000, ge=0)
    storage_subdir: str = TOOL_RESULTS_DIRNAME  # under the thread's outputs folder
    exempt_tools: list[str] = Field(default_factory=lambda: ["read_file", "read_file_tool"])
    tool_overrides: dict[str, int] = Field(default_factory=dict)  # per-tool externalize_min_chars

    @field_validator("storage_subdir")
    @classmethod
    def _single_segment(cls, value: str) -> str:
        if value in {"", ".", ".."} or "/" in value or "\\" in value or "\x00" in value:
            raise ValueError(f"storage_subdir must be a single directory name without path separators (got {value!r})")
        return value

    @field_validator("tool_overrides")
    @classmethod
    def _thresholds(cls, value: dict[str, int]) -> dict[str, int]:
        for name, chars in value.items():
            if chars < 0:
                raise ValueError(f"tool_overrides.{name} must be 0 or more characters, got {chars}")
        return value
