"""Knowledge in real runs: the lead agent (every middleware) with a scripted model searches
with ``knowledge_search`` and cites the passage it used; the worker's hook gives the tool only
to runs that have a collection to read."""

from __future__ import annotations

import json
import re

import pytest
from rest_framework.test import APIClient

from apps.agents.services import agent_create
from harness.testing import call, tool_reply
from tests.apps.runs.test_runs_api import body_of, new_thread

pytestmark = [pytest.mark.django_db(transaction=True)]


def run(client, tid, text, assistant_id="lead_agent"):
    body = {"assistant_id": assistant_id, "input": {"messages": [{"role": "user", "content": text}]}}
    response = client.post(f"/api/threads/{tid}/runs/wait", body, format="json")
    assert response.status_code == 200, response.content
    return json.loads(body_of(response))


def cite_passage_about(words: str):
    """The model's second turn: answer with the citation of the passage holding *words*."""
    def answer(messages):
        result = str(messages[-1].content)
        for block in result.split("\n\n"):
            if words in block:
                cid = re.match(r"\[(kb-[0-9a-f]{12}-\d+)\]", block).group(1)
                return f"Refunds are paid within fourteen days [{cid}]."
        return "I found nothing."
    return answer


def test_a_run_searches_the_knowledge_base_and_cites_the_right_passage(user_client, user, kb, scripted_lead_agent):
    cid = kb.collection("Policies")
    kb.upload(cid, ("refunds.md", b"# Refunds\n\n## Timing\n\nRefunds are paid within fourteen days.\n\n"
                                  b"## Shipping\n\nParcels leave the warehouse every Monday."),
              ("other.md", b"# Holidays\n\nThe office closes on public holidays."))
    model = scripted_lead_agent(tool_reply(call("knowledge_search", query="how long do refunds take")),
                       cite_passage_about("fourteen days"))
    tid = new_thread(user_client)
    values = run(user_client, tid, "How long do refunds take?")
    assert "knowledge_search" in model.requests[0].tools
    assert "[kb-0123456789ab-4]" in model.requests[0].system_text  # how to cite
    tool_result = str(model.requests[1].messages[-1].content)
    assert '"Refunds" (refunds.md)' in tool_result and "section Refunds > Timing" in tool_result

    answer = values["messages"][-1]["content"]
    cited = re.search(r"\[(kb-[0-9a-f]{12}-\d+)\]", answer).group(1)
    passage = user_client.get(f"/api/knowledge/citations/{cited}").json()
    assert passage["text"] == "Refunds are paid within fourteen days." and passage["section"] == "Refunds > Timing"
    assert passage["url"].endswith(f"#{cited}")


def test_a_run_without_collections_has_no_knowledge_tool(user_client, scripted_lead_agent):
    model = scripted_lead_agent("Hello.")
    run(user_client, new_thread(user_client), "Hi")
    assert "knowledge_search" not in model.requests[0].tools


def test_an_agents_collection_reaches_its_runs_and_no_other(user_client, user, other_user, kb, scripted_lead_agent):
    helper = agent_create(owner=user, data={"name": "helpdesk", "soul": "Answers IT questions.", "shared": True})
    kb.upload(kb.collection("IT", agent="helpdesk"), ("vpn.md", b"# VPN\n\nThe VPN password rotates every ninety days."))
    bob = APIClient()
    bob.force_authenticate(other_user)

    model = scripted_lead_agent(tool_reply(call("knowledge_search", query="vpn password")), "Done.")
    run(bob, new_thread(bob), "When does the VPN password change?", assistant_id=str(helper.pk))
    assert "ninety days" in str(model.requests[1].messages[-1].content)

    model = scripted_lead_agent("Plain chat.")
    run(bob, new_thread(bob), "When does the VPN password change?")
    assert "knowledge_search" not in model.requests[0].tools
    kb.upload(kb.collection("Mine"), ("notes.md", b"# Notes\n\nNothing about networks."))
    model = scripted_lead_agent(tool_reply(call("knowledge_search", query="vpn password")), "Done.")
    run(user_client, new_thread(user_client), "When does the VPN password change?")
    assert "ninety days" not in str(model.requests[1].messages[-1].content)  # the owner's plain chat
