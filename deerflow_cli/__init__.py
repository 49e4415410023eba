"""``deerflow``: a terminal console for DeerFlow, on Textual.

It talks to a server with a personal access token (``--server URL``, ``DEERFLOW_TOKEN``) or
runs the agent in this process through the embedded ``DeerFlowClient`` (no ``--server``).
It lives outside ``harness/`` because it is a user interface, not part of the agent
framework, and outside ``apps/`` because it must run where no Django is set up: it imports
``harness`` only in embedded mode, and never ``django`` or ``apps``. docs/terminal.md.
"""
