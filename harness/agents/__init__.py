"""Agents. The package root stays light: importing the state schema does not build the
tool graph; ``make_lead_agent`` is imported on first use."""

from typing import Any

__all__ = ["make_lead_agent"]


def __getattr__(name: str) -> Any:
    if name == "make_lead_agent":
        from harness.agents.lead_agent import make_lead_agent

        return make_lead_agent
    raise AttributeError(name)
