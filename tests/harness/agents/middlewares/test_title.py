"""The thread gets a title after its first complete exchange."""

from langchain_core.tools import tool

from harness.agents.middlewares.title import local_title
from harness.testing import LoopbackOpenAIServer, call, tool_reply

from ..conftest import app_config


@tool
def noop() -> str:
    """Do nothing."""
    return "ok"


async def test_local_title_after_first_complete_exchange_only(agent_factory):
    h = agent_factory([tool_reply(call("noop")), "Here is the plan.", "second"], tools=[noop])
    await h.send("Plan a   three day trip to Lisbon with a focus on food and museums")
    assert h.state()["title"] == "Plan a three day trip to Lisbon with…"
    await h.send("change it")
    assert h.state()["title"] == "Plan a three day trip to Lisbon with…"  # never retitled


async def test_llm_title_when_configured_with_local_fallback_on_failure(agent_factory):
    with LoopbackOpenAIServer(['"Lisbon Food Trip."']) as server:
        extra = f"""  - name: titler
    use: langchain_openai:ChatOpenAI
    model: t
    base_url: {server.base_url}
    api_key: k
    max_retries: 0
title:
  model_name: titler
"""
        h = agent_factory(["Sure."], app=app_config(extra))
        await h.send("plan lisbon")
        assert h.state()["title"] == "Lisbon Food Trip"
        assert "plan lisbon" in server.requests[0]["messages"][0]["content"]
        # the script is now empty: the server errors, and the local title is used
        h2 = agent_factory(["Sure."], app=app_config(extra))
        await h2.send("another thread here")
        assert h2.state()["title"] == "another thread here"


def test_local_title_strips_context_blocks():
    assert local_title('<deerflow-context kind="x">\nignore\n</deerflow-context>\nHello world') == "Hello world"
    assert local_title("") == "New conversation"


def test_local_title_drops_directives_and_markdown():
    # a skill command, mentions and markdown markers are how the user steers, not the topic
    assert local_title("/deep-research compare SQLite and PostgreSQL") == "compare SQLite and PostgreSQL"
    assert local_title("@data-analysis please **summarise** `sales.csv`") == "please summarise sales.csv"
    assert local_title("# Trip plan\n- [Lisbon](https://example.com) for *three* days") == "Trip plan Lisbon for three days"
    assert local_title("> quoted\n1. first step\n```python\nprint(1)\n```") == "quoted first step print(1)"
    # what only looks like syntax stays: an e-mail address, a path mid-sentence, snake_case
    assert local_title("mail bob@example.com about /etc/hosts and my_var") == "mail bob@example.com about /etc/hosts and my_var"
    assert local_title("/plan") == "New conversation"
