"""Wire shapes of runs (LangGraph Platform's Run plus DeerFlow's usage fields)."""

from __future__ import annotations

from apps.runs.models import Run


def run_json(run: Run) -> dict:
    usage = run.token_usage or {}
    return {
        "run_id": str(run.pk),
        "thread_id": run.thread_id,
        "assistant_id": run.assistant_id,
        "created_at": run.created_at.isoformat(),
        "updated_at": run.updated_at.isoformat(),
        # When the run settled (worker, cancel or recovery); null while it is active.
        "finished_at": run.finished_at.isoformat() if run.finished_at else None,
        "status": run.status,
        "metadata": run.metadata,
        # The agent snapshot a run carries is the server's, not part of the request.
        "kwargs": {k: v for k, v in run.kwargs.items() if k != "agent"} if "agent" in run.kwargs else run.kwargs,
        "multitask_strategy": run.multitask_strategy,
        "model_name": run.model_name or None,
        "total_input_tokens": run.input_tokens,
        "total_output_tokens": run.output_tokens,
        "total_tokens": run.input_tokens + run.output_tokens,
        "cache_read_tokens": run.cache_read_tokens,
        "llm_call_count": usage.get("llm_call_count", 0),
        "subagent_tokens": usage.get("subagent_tokens", 0),
        "lead_agent_tokens": run.input_tokens + run.output_tokens - usage.get("subagent_tokens", 0),
        "message_count": usage.get("message_count", 0),
        "token_usage": usage.get("by_model", {}),
        "stop_reason": run.stop_reason or None,
        "error": run.error or None,
    }
