"""ThreadState reducers do what each key means."""

from harness.agents.thread_state import (
    MAX_SKILL_CONTEXT,
    merge_artifacts,
    merge_delegations,
    merge_skill_context,
    merge_token_usage,
    merge_viewed_images,
)


def test_artifacts_append_in_order_without_duplicates():
    assert merge_artifacts(["/a", "/b"], ["/b", "/c", "/a"]) == ["/a", "/b", "/c"]
    assert merge_artifacts(None, ["/x"]) == ["/x"]


def test_viewed_images_merge_and_empty_dict_clears():
    img = {"base64": "AA==", "mime_type": "image/png"}
    merged = merge_viewed_images({"/a.png": img}, {"/b.png": img})
    assert set(merged) == {"/a.png", "/b.png"}
    assert merge_viewed_images(merged, {}) == {}
    assert merge_viewed_images(merged, None) == merged


def test_delegations_update_in_place_and_never_reopen_finished_tasks():
    cur = merge_delegations([], [{"id": "1", "status": "running"}, {"id": "2", "status": "running"}])
    cur = merge_delegations(cur, [{"id": "1", "status": "completed", "result": "ok"}])
    cur = merge_delegations(cur, [{"id": "1", "status": "running"}])
    assert [(d["id"], d["status"]) for d in cur] == [("1", "completed"), ("2", "running")]
    assert cur[0]["result"] == "ok"


def test_skill_context_dedupes_by_path_keeping_most_recent_last():
    cur = merge_skill_context([], [{"path": "/s/a", "name": "a"}, {"path": "/s/b", "name": "b"}])
    cur = merge_skill_context(cur, [{"path": "/s/a", "name": "a2"}])
    assert [d["name"] for d in cur] == ["b", "a2"]
    many = merge_skill_context([], [{"path": f"/s/{i}"} for i in range(20)])
    assert len(many) == MAX_SKILL_CONTEXT and many[-1]["path"] == "/s/19"


def test_token_usage_sums_per_model():
    cur = merge_token_usage({}, {"m": {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12, "cache_read": 4, "calls": 1}})
    cur = merge_token_usage(cur, {"m": {"input_tokens": 5, "output_tokens": 1, "total_tokens": 6, "calls": 1}, "n": {"calls": 1}})
    assert cur["m"] == {"input_tokens": 15, "output_tokens": 3, "total_tokens": 18, "cache_read": 4, "calls": 2}
    assert cur["n"]["calls"] == 1
