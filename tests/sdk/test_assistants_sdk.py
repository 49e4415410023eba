"""Custom agents as the official langgraph-sdk sees them: assistants.create/search/get/
get_graph/get_schemas/update/get_versions/delete, and a run with the agent's assistant_id
whose request to the loopback model carries the agent's soul."""

import httpx
import pytest
from langgraph_sdk.errors import ConflictError, NotFoundError, UnprocessableEntityError

pytestmark = [pytest.mark.slow]


def test_assistants_calls_map_onto_custom_agents(sdk, script, model_server, live):
    created = sdk.assistants.create(graph_id="lead_agent", name="sdk-analyst", description="Answers like an analyst",
                                    context={"soul": "Sign every answer with -- the analyst.", "model": "loopback"},
                                    metadata={"team": "research"})
    aid = created["assistant_id"]
    assert created["graph_id"] == "lead_agent" and created["version"] == 1 and created["name"] == "sdk-analyst"
    assert created["context"]["soul"] == "Sign every answer with -- the analyst."

    found = sdk.assistants.search(metadata={"team": "research"})
    assert [a["assistant_id"] for a in found] == [aid]
    assert {a["assistant_id"] for a in sdk.assistants.search(limit=50)} >= {"lead_agent", aid}
    assert sdk.assistants.get(aid)["description"] == "Answers like an analyst"
    assert sdk.assistants.get_graph(aid)["graph_id"] == "lead_agent"
    assert "input_schema" in sdk.assistants.get_schemas(aid)

    with pytest.raises(ConflictError):
        sdk.assistants.create(graph_id="lead_agent", name="sdk-analyst")
    assert sdk.assistants.create(graph_id="lead_agent", name="sdk-analyst", if_exists="do_nothing")["assistant_id"] == aid
    with pytest.raises(UnprocessableEntityError):
        sdk.assistants.create(graph_id="lead_agent", name="x", context={"tool_groups": ["lasers"]})
    with pytest.raises(UnprocessableEntityError):
        sdk.assistants.create(graph_id="another_graph", name="y")

    script("Here it is. -- the analyst.")
    thread = sdk.threads.create()
    result = sdk.runs.wait(thread["thread_id"], aid, input={"messages": [{"role": "user", "content": "hello"}]})
    assert result["messages"][-1]["content"] == "Here it is. -- the analyst."
    system = [m["content"] for m in model_server.requests[0]["messages"] if m["role"] == "system"]
    assert "Sign every answer with -- the analyst." in "\n".join(system)
    assert sdk.runs.list(thread["thread_id"])[0]["assistant_id"] == aid

    updated = sdk.assistants.update(aid, context={"soul": "Be brief."}, description="Brief analyst")
    assert updated["version"] == 2 and updated["context"]["soul"] == "Be brief."
    versions = sdk.assistants.get_versions(aid)
    assert [v["version"] for v in versions] == [2, 1]
    assert versions[1]["context"]["soul"] == "Sign every answer with -- the analyst."

    sdk.assistants.delete(aid)
    with pytest.raises(NotFoundError):
        sdk.assistants.get(aid)
    assert sdk.threads.get(thread["thread_id"])["thread_id"] == thread["thread_id"]  # still readable
    with pytest.raises((NotFoundError, httpx.HTTPStatusError)) as refused:  # runs.wait raises httpx's error
        sdk.runs.wait(thread["thread_id"], aid, input={"messages": [{"role": "user", "content": "again"}]})
    assert "404" in str(refused.value)


def test_another_users_assistant_is_not_found(sdk, live):
    from langgraph_sdk import get_sync_client

    mine = sdk.assistants.create(graph_id="lead_agent", name="sdk-private", context={"soul": "secret persona"})
    other = get_sync_client(url=f"{live.url}/api", headers={"Authorization": f"Bearer {live.create_user_token('sdk-other')}"})
    with pytest.raises(NotFoundError):
        other.assistants.get(mine["assistant_id"])
    with pytest.raises(NotFoundError):
        other.assistants.update(mine["assistant_id"], context={"soul": "hijacked"})
    assert mine["assistant_id"] not in {a["assistant_id"] for a in other.assistants.search(limit=50)}
    sdk.assistants.delete(mine["assistant_id"])
