"""The API's routes, mounted twice by deerflow_site/urls.py: under ``/api/`` and, as the
``langgraph`` namespace, under ``/api/langgraph/``.

DeerFlow's frontend and SDK settings use ``<origin>/api/langgraph`` as the LangGraph base URL
(its nginx rewrote ``/api/langgraph/<x>`` to ``/api/<x>``); we have no nginx in front, so the
server itself answers both with the same views, the same auth and the same token scopes.
``reverse("thread-detail")`` still gives the ``/api/`` path; ``reverse("langgraph:…")`` the other.

Threads and runs first: every run makes two requests there, and Django tries the patterns in
order (about 45 per request when these came fourth and fifth). Chat's thread routes come before
the runs app's: its ``runs/regenerate`` would otherwise be taken for a run id. The apps behind
have no pattern starting with threads/ or runs (schedules' one under threads/ matches no earlier
pattern; the workspace app's one is a run's sub-route, which no runs pattern takes), so every
path still reaches its own view (tests/site/test_urls.py checks each route).
"""

from django.urls import include, path

API_MODULES = (
    "apps.chat.api_urls",
    "apps.threads.api_urls",
    "apps.runs.api_urls",
    "apps.workspace.api_urls",
    "apps.schedules.api_urls",
    "apps.console.api_urls",
    "apps.accounts.api_urls",
    "apps.agents.api_urls",
    "apps.mcp.api_urls",
    "apps.channels.api_urls",
    "apps.skills.api_urls",
    "apps.memory.api_urls",
    "apps.knowledge.api_urls",
    "apps.governance.api_urls",
    "apps.shares.api_urls",
)

urlpatterns = [path("", include(module)) for module in API_MODULES]

# The second mount's prefix (below /api/), for the tests and tools that treat it as an alias.
LANGGRAPH_PREFIX = "/api/langgraph/"


def canonical_path(path_text: str) -> str:
    """``/api/langgraph/<x>`` → ``/api/<x>``; any other path unchanged."""
    if path_text.startswith(LANGGRAPH_PREFIX):
        return "/api/" + path_text[len(LANGGRAPH_PREFIX):]
    return path_text


def schema_without_aliases(endpoints):
    """drf-spectacular preprocessing hook: the schema lists each route once, under /api/."""
    return [endpoint for endpoint in endpoints if not endpoint[0].startswith(LANGGRAPH_PREFIX)]
