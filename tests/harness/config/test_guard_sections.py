"""The guard sections take DeerFlow's keys and defaults, and a bad value names its key."""

import pytest

from harness.config import ConfigError, parse_config


def test_defaults_are_deerflows():
    c = parse_config("")
    assert (c.loop_detection.enabled, c.loop_detection.warn_threshold, c.loop_detection.hard_limit, c.loop_detection.window_size,
            c.loop_detection.tool_freq_warn, c.loop_detection.tool_freq_hard_limit) == (True, 3, 5, 20, 30, 50)
    assert (c.tool_progress.enabled, c.tool_progress.stagnation_threshold, c.tool_progress.warn_escalation_count) == (False, 3, 2)
    assert c.tool_progress.exempt_tools == {"ask_clarification", "write_todos", "present_files", "task"}
    assert c.read_before_write.enabled and c.safety_finish_reason.enabled and c.safety_finish_reason.detectors is None
    assert (c.token_budget.enabled, c.token_budget.max_tokens, c.token_budget.warn_threshold) == (False, 200000, 0.8)
    assert (c.tool_output.externalize_min_chars, c.tool_output.fallback_max_chars, c.tool_output.storage_subdir) == (12000, 30000, ".tool-results")
    assert c.tool_output.exempt_tools == ["read_file", "read_file_tool"]


@pytest.mark.parametrize("text, field", [
    ("loop_detection:\n  warn_threshold: 0\n", "loop_detection.warn_threshold"),
    ("loop_detection:\n  warn_threshold: 6\n  hard_limit: 5\n", "loop_detection"),
    ("loop_detection:\n  tool_freq_overrides:\n    bash:\n      warn: 9\n      hard_limit: 3\n", "loop_detection.tool_freq_overrides.bash"),
    ("loop_detection:\n  tool_freq_overrides:\n    bash: {warn: 3}\n", "loop_detection.tool_freq_overrides.bash.hard_limit"),
    ("tool_progress:\n  jaccard_similarity_threshold: 1.5\n", "tool_progress.jaccard_similarity_threshold"),
    ("tool_progress:\n  stagnation_threshold: 0\n", "tool_progress.stagnation_threshold"),
    ("read_before_write:\n  enabled: maybe\n", "read_before_write.enabled"),
    ("token_budget:\n  max_tokens: 10\n", "token_budget.max_tokens"),
    ("token_budget:\n  warn_threshold: 0.9\n  hard_stop_threshold: 0.5\n", "token_budget"),
    ("tool_output:\n  storage_subdir: a/b\n", "tool_output.storage_subdir"),
    ("tool_output:\n  storage_subdir: ..\n", "tool_output.storage_subdir"),
    ("tool_output:\n  externalize_min_chars: -1\n", "tool_output.externalize_min_chars"),
    ("tool_output:\n  tool_overrides:\n    bash: -5\n", "tool_output.tool_overrides"),
    ("tool_output:\n  externalise_min_chars: 5\n", "tool_output.externalise_min_chars"),
])
def test_a_bad_value_is_an_error_naming_the_key(text, field):
    with pytest.raises(ConfigError) as err:
        parse_config(text, "cfg.yaml")
    assert err.value.field == field, str(err.value)

