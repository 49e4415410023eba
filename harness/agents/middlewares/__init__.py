"""The lead agent's middlewares, one module each; ``lead_agent.agent.build_middlewares``
puts them in order."""
