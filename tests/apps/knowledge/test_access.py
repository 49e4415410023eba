"""Who reaches a collection: the owner; users it is shared with, until the share is revoked;
a custom agent's runs for the collection bound to it, and nobody else. Checked on the store
the ``knowledge_search`` tool reads (a run's scope) and on the API."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from apps.agents.services import agent_create
from apps.knowledge.selectors import readable_collection_ids, run_reads_knowledge
from apps.knowledge.stores import DjangoKnowledgeStore
from harness.knowledge import SearchScope

# db_tier: full-text queries and index triggers differ between SQLite and PostgreSQL.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.db_tier]

STORE = DjangoKnowledgeStore()


def client_of(user):
    client = APIClient()
    client.force_authenticate(user)
    return client


def found(user, query, thread_id="", agent_id=""):
    return [p.text for p in STORE.search(SearchScope(user_id=str(user.pk), thread_id=thread_id, agent_id=agent_id), query, 5)]


def new_thread(client):
    return client.post("/api/threads", {}, format="json").json()["thread_id"]


def test_another_users_collection_never_reaches_a_search(user, other_user, user_client, kb):
    kb.upload(kb.collection(), ("secret.md", b"The launch code is tangerine."))
    bob = client_of(other_user)
    assert found(other_user, "launch code") == []
    assert kb.search("launch code", client=bob) == []
    assert found(user, "launch code") == ["The launch code is tangerine."]
    # Bob cannot attach it to his chat either, nor read it by id: it does not exist for him.
    cid = user_client.get("/api/knowledge/collections").json()["collections"][0]["id"]
    tid = new_thread(bob)
    assert bob.put(f"/api/threads/{tid}/knowledge", {"collection_ids": [cid]}, format="json").status_code == 404
    assert found(other_user, "launch code", thread_id=tid) == []
    assert bob.get(f"/api/knowledge/collections/{cid}").status_code == 404
    assert bob.get(f"/api/knowledge/collections/{cid}/documents").status_code == 404
    doc = user_client.get(f"/api/knowledge/collections/{cid}/documents").json()["documents"][0]
    assert bob.get(f"/api/knowledge/documents/{doc['id']}").status_code == 404
    assert bob.get(f"/api/knowledge/documents/{doc['id']}/file").status_code == 404
    assert bob.delete(f"/api/knowledge/documents/{doc['id']}").status_code == 404


def test_a_shared_collection_is_searched_where_attached_and_a_revoked_share_stops_the_next_call(user, other_user, user_client, kb):
    cid = kb.collection("Recipes")
    kb.upload(cid, ("soup.md", b"# Soup\n\nThe tomato soup simmers for forty minutes."))
    bob = client_of(other_user)
    assert user_client.patch(f"/api/knowledge/collections/{cid}", {"shared_with": ["bob"]}, format="json").json()["shared_with"] == ["bob"]
    tid = new_thread(bob)
    assert found(other_user, "tomato soup", thread_id=tid) == []  # shared, but not attached to this chat
    assert bob.put(f"/api/threads/{tid}/knowledge", {"collection_ids": [cid]}, format="json").status_code == 200
    assert found(other_user, "tomato soup", thread_id=tid) == ["The tomato soup simmers for forty minutes."]
    # Read only: Bob changes nothing of it.
    assert bob.patch(f"/api/knowledge/collections/{cid}", {"name": "Mine"}, format="json").status_code == 404
    assert bob.post(f"/api/knowledge/collections/{cid}/documents", {"url": "https://example.org/"}, format="json").status_code == 404

    user_client.patch(f"/api/knowledge/collections/{cid}", {"shared_with": []}, format="json")
    assert found(other_user, "tomato soup", thread_id=tid) == []  # the very next search
    assert bob.get(f"/api/knowledge/collections/{cid}").status_code == 404

    user_client.patch(f"/api/knowledge/collections/{cid}", {"shared_with_everyone": True}, format="json")
    assert found(other_user, "tomato soup", thread_id=tid) == ["The tomato soup simmers for forty minutes."]


def test_an_agents_collection_is_read_only_through_that_agent(user, other_user, user_client, kb):
    helper = agent_create(owner=user, data={"name": "helpdesk", "soul": "Answers IT questions."})
    other = agent_create(owner=user, data={"name": "writer", "soul": "Writes."})
    cid = kb.collection("IT answers", agent="helpdesk")
    kb.upload(cid, ("vpn.md", b"# VPN\n\nThe VPN password rotates every ninety days."))
    text = ["The VPN password rotates every ninety days."]
    assert found(user, "vpn password", agent_id=str(helper.pk)) == text
    assert found(user, "vpn password") == []  # the owner's plain chats do not read it
    assert found(user, "vpn password", agent_id=str(other.pk)) == []
    tid = new_thread(user_client)
    answer = user_client.put(f"/api/threads/{tid}/knowledge", {"collection_ids": [cid]}, format="json")
    assert answer.status_code == 422 and "agent" in answer.json()["detail"]
    # It cannot be shared past the agent, and readers never see it.
    refused = user_client.patch(f"/api/knowledge/collections/{cid}", {"shared_with_everyone": True}, format="json")
    assert refused.status_code == 422
    assert found(other_user, "vpn password") == []
    assert client_of(other_user).get(f"/api/knowledge/collections/{cid}").status_code == 404
    # Someone the agent is shared with reaches it through the agent (a run of it), and only there.
    from apps.agents.services import agent_update

    agent_update(agent=helper, data={"shared": True})
    assert found(other_user, "vpn password", agent_id=str(helper.pk)) == text
    assert found(other_user, "vpn password") == []


def test_a_run_is_told_it_reads_knowledge_exactly_when_a_collection_is_in_its_reach(user, other_user, user_client, kb):
    """The run start's one-query check (``run_reads_knowledge``) agrees with the list a search
    reads, case by case: nothing, shared but not attached, attached, revoked, shared with
    everyone, another user's thread, and an agent's collection."""
    def reads(who, thread_id="", agent_id=""):
        exists = run_reads_knowledge(user_id=who.pk, thread_id=thread_id, agent_id=agent_id)
        assert exists == bool(readable_collection_ids(user_id=who.pk, thread_id=thread_id, agent_id=agent_id))
        return exists

    bob = client_of(other_user)
    tid = new_thread(bob)
    assert not reads(user) and not reads(other_user, tid)
    cid = kb.collection("Recipes")
    assert reads(user) and not reads(other_user, tid)
    user_client.patch(f"/api/knowledge/collections/{cid}", {"shared_with": ["bob"]}, format="json")
    assert not reads(other_user, tid)  # shared, not attached
    assert bob.put(f"/api/threads/{tid}/knowledge", {"collection_ids": [cid]}, format="json").status_code == 200
    assert reads(other_user, tid)
    assert reads(user, tid)  # her own collections, whatever the thread
    user_client.patch(f"/api/knowledge/collections/{cid}", {"shared_with": []}, format="json")
    assert not reads(other_user, tid)
    user_client.patch(f"/api/knowledge/collections/{cid}", {"shared_with_everyone": True}, format="json")
    assert reads(other_user, tid) and not reads(other_user)

    helper = agent_create(owner=user, data={"name": "helpdesk", "soul": "Answers IT questions."})
    other = agent_create(owner=user, data={"name": "writer", "soul": "Writes."})
    kb.collection("IT answers", agent="helpdesk")
    assert reads(other_user, agent_id=str(helper.pk)) and not reads(other_user, agent_id=str(other.pk))
    assert not reads(other_user, agent_id="not-a-uuid")
