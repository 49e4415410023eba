"""``DeerFlowClient``: the lead agent and what the server offers around it, in-process,
without the web server.

It builds the same graph as the server (``make_lead_agent``) from the same config files and
answers every method the way the matching HTTP route answers (same fields, same types;
``tests/harness/client/test_conformance.py`` holds the two together):

- conversation (``conversation.py``): ``stream``/``astream``/``astream_events``, ``chat``/``achat``,
  ``get_state``; events shaped like the server's (``values``, ``messages-tuple`` deltas, ``custom``
  including ``context:memory``, ``end`` with usage, interrupts, run id and trace id);
- settings (``settings.py``): models, MCP servers, skills (list, get, enable, install);
- memory (``memory.py``): the document, its facts, status and config;
- files (``files.py``): uploads (upload, list, delete) and artifacts (bytes + MIME);
- agents (``agents.py``): custom agents;
- thread actions (``thread_actions.py``): goals and follow-up suggestions.

Standalone it keeps checkpoints in memory (or any saver or ``sqlite:///``/``postgresql://``
URL), memory in files under ``DEER_FLOW_HOME``, skill choices in the process. Pointed at a
server's data (``deerflow_site.embedded.server_client``) it shares its checkpointer, data home
and, through the harness ports the server implements, its database.

    client = DeerFlowClient()
    print(client.chat("Write hello.txt in the outputs folder", thread_id="t1"))
"""

from harness.client.core import DeerFlowClient
from harness.client.events import STREAM_MODES, StreamEvent, serialize_message

__all__ = ["STREAM_MODES", "DeerFlowClient", "StreamEvent", "serialize_message"]
