"""The lead agent: ``make_lead_agent(config)`` and the middleware chain it uses."""

from harness.agents.lead_agent.agent import build_middlewares, load_extension_middlewares, make_lead_agent
from harness.agents.lead_agent.options import LeadAgentOptions
from harness.agents.lead_agent.prompt import build_system_prompt

__all__ = ["LeadAgentOptions", "build_middlewares", "build_system_prompt", "load_extension_middlewares", "make_lead_agent"]
