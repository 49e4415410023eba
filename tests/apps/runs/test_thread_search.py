"""Thread search over message text (indexed from the run journal, nothing extra per run), pins, the
`started` filter that keeps upload-only drafts out of the sidebar, and the title a cancelled
first run leaves. Database-sensitive: FTS5 on SQLite, tsvector on PostgreSQL (db_tier)."""

import pytest

from apps.runs.models import Run
from apps.threads.models import Thread
from harness.testing import call, tool_reply
from tests.apps.runs.test_runs_api import new_thread, wait_for_model_calls, wait_for_status

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.db_tier]


@pytest.fixture(autouse=True)
def _default_script_after():
    """Leave the shared scripted model as found: later modules rely on its looping default."""
    yield
    from tests.support import agents

    agents.set_script("hello", loop=True)


@pytest.fixture
def other_client(other_user):
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_authenticate(other_user)
    return client


def ask(client, tid, text):
    response = client.post(f"/api/threads/{tid}/runs", {"input": {"messages": [{"role": "user", "content": text}]}}, format="json")
    assert response.status_code == 200, response.content
    wait_for_status(response.json()["run_id"], {"success"})


def search(client, **body):
    response = client.post("/api/threads/search", {"limit": 50, **body}, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def test_search_finds_words_from_message_bodies_not_only_titles(user_client, scripted_agent):
    scripted_agent("The quokka lives on Rottnest Island.", "Sourdough needs a starter.")
    quokka = new_thread(user_client)
    ask(user_client, quokka, "Tell me about marsupials")
    bread = new_thread(user_client)
    ask(user_client, bread, "Baking question")
    found = search(user_client, query="rottnest")  # a word of the answer, any case
    assert [t["thread_id"] for t in found] == [quokka]
    assert "Rottnest Island" in found[0]["search_snippet"]
    assert [t["thread_id"] for t in search(user_client, query="marsup")] == [quokka]  # a prefix, as typed
    assert [t["thread_id"] for t in search(user_client, query="sourdough starter")] == [bread]  # every word
    assert search(user_client, query="sourdough quokka") == []
    # titles still match (a substring of the title), without a snippet
    Thread.objects.filter(pk=bread).update(title="Weekend baking")
    by_title = search(user_client, query="weekend")
    assert [t["thread_id"] for t in by_title] == [bread] and "search_snippet" not in by_title[0]
    # runs after a search are found by the next one (the index catches up with the journal)
    scripted_agent("Axolotls regrow their limbs.")
    ask(user_client, bread, "And amphibians?")
    assert [t["thread_id"] for t in search(user_client, query="axolotls")] == [bread]
    assert [t["thread_id"] for t in search(user_client, query="rottnest")] == [quokka]
    # punctuation and FTS syntax are words, not operators
    assert search(user_client, query='"NEAR(*') == []
    assert search(user_client, query="  ") != []  # no words: no filter


def test_search_is_scoped_to_the_caller_and_forgets_a_deleted_thread(user_client, other_client, scripted_agent):
    scripted_agent("The axolotl regrows limbs.")
    tid = new_thread(user_client)
    ask(user_client, tid, "amphibians")
    assert search(other_client, query="axolotl") == []
    assert [t["thread_id"] for t in search(user_client, query="axolotl")] == [tid]
    assert user_client.delete(f"/api/threads/{tid}").status_code == 204
    assert search(user_client, query="axolotl") == []  # gone with the thread's journal


def test_bad_search_input_is_a_422_naming_the_field(user_client):
    for body, field in (({"query": 5}, "query"), ({"query": "x" * 201}, "query"), ({"pinned": "yes"}, "pinned"), ({"started": 1}, "started")):
        response = user_client.post("/api/threads/search", body, format="json")
        assert response.status_code == 422 and field in response.json()["detail"]


def test_pins_are_stored_on_the_thread_and_filter_the_search(user_client, other_client, scripted_agent):
    a, b = new_thread(user_client), new_thread(user_client)
    before = Thread.objects.get(pk=a).updated_at
    pinned = user_client.put(f"/api/threads/{a}/pin")
    assert pinned.status_code == 200 and pinned.json()["pinned_at"]
    assert Thread.objects.get(pk=a).updated_at == before  # pinning is not activity
    assert [t["thread_id"] for t in search(user_client, pinned=True)] == [a]
    assert [t["thread_id"] for t in search(user_client, pinned=False)] == [b]
    assert user_client.get(f"/api/threads/{a}").json()["pinned_at"] == pinned.json()["pinned_at"]
    assert user_client.put(f"/api/threads/{a}/pin").json()["pinned_at"] == pinned.json()["pinned_at"]  # idempotent
    assert other_client.put(f"/api/threads/{a}/pin").status_code == 404
    assert user_client.delete(f"/api/threads/{a}/pin").json()["pinned_at"] is None
    assert search(user_client, pinned=True) == []


def test_started_leaves_out_threads_that_never_had_a_run(user_client, scripted_agent):
    scripted_agent("ok")
    draft, chat = new_thread(user_client), new_thread(user_client)
    ask(user_client, chat, "hello")
    assert [t["thread_id"] for t in search(user_client, started=True)] == [chat]
    assert [t["thread_id"] for t in search(user_client, started=False)] == [draft]
    assert {t["thread_id"] for t in search(user_client)} == {draft, chat}  # the LangGraph search is unchanged


def test_a_cancelled_first_run_titles_the_thread_from_its_message(user_client, scripted_agent):
    model = scripted_agent(tool_reply(call("slow", seconds=30)))
    tid = new_thread(user_client)
    run = user_client.post(f"/api/threads/{tid}/runs", {"input": {"messages": [{"role": "user", "content": "/deep-research Compare **Rust** and Go"}]}}, format="json").json()
    wait_for_model_calls(model, 1)
    assert user_client.post(f"/api/threads/{tid}/runs/{run['run_id']}/cancel?wait=true").status_code == 204
    wait_for_status(run["run_id"], {"interrupted"})
    assert Thread.objects.get(pk=tid).title == "Compare Rust and Go"
    # and its words are searchable, although the run never answered
    assert [t["thread_id"] for t in search(user_client, query="rust")] == [tid]


def test_a_titled_thread_keeps_its_title_when_a_later_run_is_cancelled(user_client, scripted_agent):
    model = scripted_agent(tool_reply(call("slow", seconds=30)))
    tid = new_thread(user_client)
    Thread.objects.filter(pk=tid).update(title="My trip")
    run = user_client.post(f"/api/threads/{tid}/runs", {"input": {"messages": [{"role": "user", "content": "something else"}]}}, format="json").json()
    wait_for_model_calls(model, 1)
    user_client.post(f"/api/threads/{tid}/runs/{run['run_id']}/cancel?wait=true")
    wait_for_status(run["run_id"], {"interrupted"})
    assert Run.objects.get(pk=run["run_id"]).status == "interrupted"
    assert Thread.objects.get(pk=tid).title == "My trip"


def test_an_answer_replaced_by_regenerate_no_longer_matches(user_client, scripted_agent):
    scripted_agent("The capybara is the largest rodent.", "Wombats dig burrows.")
    tid = new_thread(user_client)
    ask(user_client, tid, "Tell me an animal fact")
    assert [t["thread_id"] for t in search(user_client, query="capybara")] == [tid]
    response = user_client.post(f"/api/threads/{tid}/runs/regenerate", {}, format="json")
    assert response.status_code == 201, response.content
    wait_for_status(response.json()["run_id"], {"success"})
    assert search(user_client, query="capybara") == []  # only the replaced answer said it
    assert [t["thread_id"] for t in search(user_client, query="wombats")] == [tid]
    assert [t["thread_id"] for t in search(user_client, query="animal fact")] == [tid]  # the question is still there
