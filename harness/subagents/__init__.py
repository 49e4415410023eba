"""Subagents: the ``task`` tool, its executor and its limits (docs/subagents.md)."""

from harness.subagents.executor import SubagentResult, run_subagent
from harness.subagents.limits import SubagentLimitMiddleware
from harness.subagents.tool import build_task_tool
from harness.subagents.types import SubagentType, available_types

__all__ = ["SubagentLimitMiddleware", "SubagentResult", "SubagentType", "available_types", "build_task_tool", "run_subagent"]
