"""Which graph a run executes, and reading/writing thread state through it.

The graph factory is ``settings.DEERFLOW_AGENT_FACTORY`` (default the harness's
``make_lead_agent``): called with the run's RunnableConfig, it returns a compiled graph to
which the process's checkpointer is attached.
"""

from __future__ import annotations

import inspect
from typing import Any

from django.conf import settings

from harness.config import class_path
from harness.config.loader import get_app_config

LEAD_AGENT = "lead_agent"


def known_assistant(assistant_id: str | None) -> bool:
    return assistant_id in (None, "", LEAD_AGENT)


def _factory():
    return class_path.resolve(settings.DEERFLOW_AGENT_FACTORY)


async def build_graph(config: dict, checkpointer: Any) -> Any:
    factory = _factory()
    graph = factory(config)
    if inspect.isawaitable(graph):
        graph = await graph
    return graph.copy(update={"checkpointer": checkpointer})


def thread_config(thread_id: str, checkpoint_id: str | None = None, **configurable: Any) -> dict:
    conf = {"thread_id": thread_id, "checkpoint_ns": "", **configurable}
    if checkpoint_id:
        conf["checkpoint_id"] = checkpoint_id
    return {"configurable": conf}


def model_names() -> list[str]:
    return [m.name for m in get_app_config().models]
