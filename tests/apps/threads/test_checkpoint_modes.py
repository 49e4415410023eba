"""Thread state in both checkpoint storage modes (checkpoints.mode): what users read back
after turns, a cancel with rollback, a run from an older checkpoint, and a thread written in
the other mode. On SQLite here and on PostgreSQL in the second tier."""

from pathlib import Path

import pytest

from apps.runs.graphs import clear_graph_cache
from apps.runs.models import Run
from harness.config.loader import reset_config_cache
from harness.testing import call, tool_reply
from tests.apps.runs.test_runs_api import new_thread, wait_for_status
from tests.support import agents

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.db_tier]

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "config.yaml"


@pytest.fixture
def storage(settings, tmp_path, monkeypatch):
    """use(mode): the lead agent with the test tools, on a config.yaml in that mode."""
    settings.DEERFLOW_AGENT_FACTORY = "tests.support.agents:make_scripted_lead_agent_with_tools"
    path = tmp_path / "config.yaml"
    monkeypatch.setenv("DEER_FLOW_CONFIG_PATH", str(path))

    def use(mode: str, *script, loop: bool = False, durability: str = "exit"):
        path.write_text(FIXTURE.read_text() + f"\ncheckpoints:\n  mode: {mode}\n  snapshot_frequency: 3\n  durability: {durability}\n")
        reset_config_cache()
        clear_graph_cache()
        return agents.set_script(*script, loop=loop)

    yield use
    reset_config_cache()
    clear_graph_cache()


def turn(client, tid, text, **extra):
    response = client.post(f"/api/threads/{tid}/runs/wait", {"input": {"messages": [{"role": "user", "content": text}]}, **extra},
                           format="json")
    assert response.status_code == 200, response.content
    run = Run.objects.filter(thread_id=tid).order_by("-created_at").first()
    assert wait_for_status(run.pk, {"success", "error"}).status == "success", run.error


def contents(messages):
    return [m["content"] for m in messages]


def state(client, tid, checkpoint_id=None):
    path = f"/api/threads/{tid}/state" + (f"/{checkpoint_id}" if checkpoint_id else "")
    response = client.get(path)
    assert response.status_code == 200, response.content
    return response.json()


@pytest.mark.parametrize("mode", ["delta", "full"])
def test_turns_read_back_whole_with_stable_ids_and_history(user_client, storage, mode):
    # snapshot_frequency 3: the delta thread has snapshots and replayed writes between them.
    storage(mode, *[f"answer {i}" for i in range(1, 6)])
    tid = new_thread(user_client)
    for i in range(1, 6):
        turn(user_client, tid, f"question {i}")

    first, second = state(user_client, tid), state(user_client, tid)
    expected = [text for i in range(1, 6) for text in (f"question {i}", f"answer {i}")]
    assert contents(first["values"]["messages"]) == expected
    assert [m["id"] for m in first["values"]["messages"]] == [m["id"] for m in second["values"]["messages"]]
    assert len({m["id"] for m in first["values"]["messages"]}) == 10

    history = user_client.post(f"/api/threads/{tid}/history", {"limit": 10}, format="json").json()
    assert [len(h["values"].get("messages", [])) for h in history][:5] == [10, 8, 6, 4, 2]
    older = state(user_client, tid, history[3]["checkpoint_id"])
    assert contents(older["values"]["messages"]) == expected[:4]
    # The journal (what the chat shows) has every message once.
    page = user_client.get(f"/api/threads/{tid}/messages/page?limit=50").json()["data"]
    assert [e["content"]["content"] for e in page] == expected
    # ... with the ids the state has, so a client can match one to the other.
    assert [e["content"]["id"] for e in page] == [m["id"] for m in first["values"]["messages"]]


@pytest.mark.parametrize("mode", ["delta", "full"])
def test_cancel_with_rollback_restores_the_state_before_the_run(user_client, storage, mode):
    storage(mode, "kept answer", tool_reply(call("slow", seconds=30)))
    tid = new_thread(user_client)
    turn(user_client, tid, "keep me")
    run = user_client.post(f"/api/threads/{tid}/runs", {"input": {"messages": [{"role": "user", "content": "drop me"}]}},
                           format="json").json()
    agents.wait_for_slow_tool()
    assert user_client.post(f"/api/threads/{tid}/runs/{run['run_id']}/cancel?action=rollback&wait=1").status_code == 204
    assert contents(state(user_client, tid)["values"]["messages"]) == ["keep me", "kept answer"]

    agents.set_script("next answer")
    clear_graph_cache()
    turn(user_client, tid, "next")
    assert contents(state(user_client, tid)["values"]["messages"]) == ["keep me", "kept answer", "next", "next answer"]


@pytest.mark.parametrize("durability", ["exit", "async"])
@pytest.mark.parametrize("mode", ["delta", "full"])
def test_runs_from_an_older_checkpoint_replace_what_came_after(user_client, storage, mode, durability):
    # Two runs from the same checkpoint: that checkpoint then carries the writes of three
    # children, and a delta replay must take only its own line's (DeerFlow's #4458).
    storage(mode, "answer 1", "answer 2", "answer 2b", "answer 2c", "answer 3", durability=durability)
    tid = new_thread(user_client)
    turn(user_client, tid, "question 1")
    after_first = state(user_client, tid)["checkpoint_id"]
    turn(user_client, tid, "question 2")

    turn(user_client, tid, "question 2b", checkpoint_id=after_first)
    assert contents(state(user_client, tid)["values"]["messages"]) == ["question 1", "answer 1", "question 2b", "answer 2b"]
    turn(user_client, tid, "question 2c", checkpoint_id=after_first)
    expected = ["question 1", "answer 1", "question 2c", "answer 2c"]
    assert contents(state(user_client, tid)["values"]["messages"]) == expected
    turn(user_client, tid, "question 3")
    assert contents(state(user_client, tid)["values"]["messages"]) == [*expected, "question 3", "answer 3"]
    assert contents(state(user_client, tid)["values"]["messages"]) == [*expected, "question 3", "answer 3"]


def test_a_full_mode_thread_is_read_and_continued_in_delta_mode(user_client, storage):
    storage("full", "old answer")
    tid = new_thread(user_client)
    turn(user_client, tid, "old question")

    storage("delta", "new answer")
    assert contents(state(user_client, tid)["values"]["messages"]) == ["old question", "old answer"]
    turn(user_client, tid, "new question")
    assert contents(state(user_client, tid)["values"]["messages"]) == ["old question", "old answer", "new question", "new answer"]


def test_a_delta_thread_is_refused_in_full_mode_not_misread(user_client, storage):
    storage("delta", "answer")
    tid = new_thread(user_client)
    turn(user_client, tid, "question")

    storage("full", "never")
    response = user_client.get(f"/api/threads/{tid}/state")
    assert response.status_code == 409
    assert "delta checkpoint mode" in response.json()["detail"] and "checkpoints.mode: delta" in response.json()["detail"]
    history = user_client.post(f"/api/threads/{tid}/history", {"limit": 5}, format="json")
    assert history.status_code == 409

    user_client.post(f"/api/threads/{tid}/runs/wait", {"input": {"messages": [{"role": "user", "content": "more"}]}}, format="json")
    run = Run.objects.filter(thread_id=tid).order_by("-created_at").first()
    run = wait_for_status(run.pk, {"success", "error"})
    assert run.status == "error" and "delta checkpoint mode" in run.error

    storage("delta")
    assert contents(state(user_client, tid)["values"]["messages"]) == ["question", "answer"]
