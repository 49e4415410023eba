"""Graph factories for benchmarks: the real lead agent with an instant scripted model."""

from harness.agents import make_lead_agent
from harness.testing import ScriptedChatModel


def make_instant_lead_agent(config):
    """The full lead agent (every middleware) whose model answers at once, in a few chunks."""
    return make_lead_agent(config, model=ScriptedChatModel(script=["Instant answer from the benchmark model."], loop=True))
