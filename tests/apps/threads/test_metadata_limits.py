"""Thread metadata is bounded (issue 41, item 6): create, patch and branch refuse metadata over
``DEERFLOW_MAX_THREAD_METADATA`` bytes of JSON with a 413 naming the limit and write nothing; a
search page keeps large values out; a thread already over the limit (written before it) still
reads and takes patches that do not make it larger."""

from __future__ import annotations

import json

import pytest

from apps.threads.models import Thread

# db_tier: the search reads its page a few rows at a time (a server-side cursor on PostgreSQL).
pytestmark = [pytest.mark.django_db, pytest.mark.db_tier]

KiB = 1024


def metadata_size(metadata: dict) -> int:
    """The measure the limit uses: compact JSON, UTF-8."""
    return len(json.dumps(metadata, ensure_ascii=False, separators=(",", ":")).encode())


@pytest.fixture
def cap(settings):
    settings.DEERFLOW_MAX_THREAD_METADATA = 2 * KiB
    return 2 * KiB


def blob(n: int) -> str:
    return "x" * n


def sized(total: int, **small) -> dict:
    """Metadata of exactly ``total`` bytes of compact JSON (a ``pad`` key filling the rest)."""
    meta = {**small, "pad": ""}
    meta["pad"] = blob(total - metadata_size(meta))
    assert metadata_size(meta) == total
    return meta


def legacy(owner, thread_id: str, metadata: dict) -> Thread:
    """A row written before the limit: straight to the table, past the services."""
    return Thread.objects.create(id=thread_id, owner=owner, metadata=metadata)


def test_the_default_limit_is_64_kib(user_client):
    from django.conf import settings

    assert settings.DEERFLOW_MAX_THREAD_METADATA == 64 * KiB
    response = user_client.post("/api/threads", {"metadata": {"pad": blob(64 * KiB)}}, format="json")
    assert response.status_code == 413 and "65536" in response.json()["detail"]
    assert Thread.objects.count() == 0


def test_create_over_the_limit_is_a_413_naming_it_and_writes_nothing(user_client, cap):
    assert user_client.post("/api/threads", {"metadata": sized(cap)}, format="json").status_code == 200
    for body in ({"metadata": sized(cap + 1)}, {"thread_id": "t-big", "metadata": sized(cap + 1)}):
        response = user_client.post("/api/threads", body, format="json")
        assert response.status_code == 413, response.content
        detail = response.json()["detail"]
        assert "metadata" in detail and str(cap) in detail and "DEERFLOW_MAX_THREAD_METADATA" in detail
    assert Thread.objects.count() == 1 and not Thread.objects.filter(pk="t-big").exists()


def test_the_size_is_compact_utf8_json(cap):
    from apps.threads.metadata import metadata_size as measured

    assert measured({"a": 1}) == len('{"a":1}')
    assert measured({"t": "é"}) == len('{"t":"é"}'.encode()) == metadata_size({"t": "é"})


def test_patch_that_would_pass_the_limit_is_a_413_and_changes_nothing(user_client, cap):
    tid = user_client.post("/api/threads", {"metadata": {"title": "kept"}}, format="json").json()["thread_id"]
    response = user_client.patch(f"/api/threads/{tid}", {"metadata": {"pad": blob(cap)}}, format="json")
    assert response.status_code == 413 and str(cap) in response.json()["detail"]
    assert Thread.objects.get(pk=tid).metadata == {"title": "kept"}
    # Within the limit it merges as before; removing keys (null) always works.
    ok = user_client.patch(f"/api/threads/{tid}", {"metadata": {"pad": blob(cap // 2)}}, format="json")
    assert ok.status_code == 200 and ok.json()["metadata"]["title"] == "kept"
    assert user_client.patch(f"/api/threads/{tid}", {"metadata": {"pad": None}}, format="json").json()["metadata"] == {"title": "kept"}


def test_a_thread_already_over_the_limit_reads_and_takes_patches_that_do_not_grow_it(user, user_client, cap):
    big = {"title": "old", "mode": "fast", "log": blob(cap * 3)}
    legacy(user, "t-legacy", big)
    assert user_client.get("/api/threads/t-legacy").json()["metadata"] == big  # the whole of it
    # still over the limit but smaller: accepted
    smaller = user_client.patch("/api/threads/t-legacy", {"metadata": {"log": blob(cap * 2)}}, format="json")
    assert smaller.status_code == 200, smaller.content
    # same size (a mode switch): accepted
    assert user_client.patch("/api/threads/t-legacy", {"metadata": {"mode": "plan"}}, format="json").status_code == 200
    # larger: refused, saying how to get under the limit
    grow = user_client.patch("/api/threads/t-legacy", {"metadata": {"title": "a longer title"}}, format="json")
    assert grow.status_code == 413 and "null" in grow.json()["detail"]
    assert Thread.objects.get(pk="t-legacy").metadata["title"] == "old"
    # dropping the large key brings it under the limit, after which the limit applies as usual
    assert user_client.patch("/api/threads/t-legacy", {"metadata": {"log": None}}, format="json").json()["metadata"] == {
        "title": "old", "mode": "plan"}
    assert user_client.patch("/api/threads/t-legacy", {"metadata": {"title": "a longer title"}}, format="json").status_code == 200


def test_search_returns_metadata_whole_within_the_limit_and_trims_rows_over_it(user, user_client, cap):
    fits = user_client.post("/api/threads", {"metadata": sized(cap, title="fits")}, format="json").json()["thread_id"]
    legacy(user, "t-legacy", {"title": "legacy title", "log": blob(cap * 50), "mode": "plan"})
    found = {t["thread_id"]: t for t in user_client.post("/api/threads/search", {"limit": 10}, format="json").json()}
    assert found[fits]["metadata"] == sized(cap, title="fits") and "metadata_truncated" not in found[fits]
    # The large value is left out of the list (the small keys stay, e.g. the sidebar's title),
    # and named; GET /threads/{id} still returns all of it.
    assert found["t-legacy"]["metadata"] == {"title": "legacy title", "mode": "plan"}
    assert found["t-legacy"]["metadata_truncated"] is True
    assert len(user_client.post("/api/threads/search", {"limit": 10}, format="json").content) < 3 * cap + 2 * KiB


def test_a_search_page_carries_at_most_a_hundred_threads_worth_of_metadata(user, user_client, cap):
    Thread.objects.bulk_create([Thread(id=f"t{i:03d}", owner=user, metadata=sized(cap, title=f"n{i}")) for i in range(130)])
    page = user_client.post("/api/threads/search", {"limit": 1000, "sort_by": "thread_id", "sort_order": "asc"}, format="json")
    assert page.status_code == 200
    threads = page.json()
    assert len(threads) == 130
    total = sum(metadata_size(t["metadata"]) for t in threads)
    assert total <= 100 * cap + 30 * len("{}")
    whole = [t for t in threads if "metadata_truncated" not in t]
    assert len(whole) == 100 and [t["thread_id"] for t in whole] == [f"t{i:03d}" for i in range(100)]
    assert all(t["metadata_truncated"] is True and t["metadata"] == {} for t in threads[100:])
    assert len(page.content) < 100 * cap + 130 * 600


def test_search_by_a_metadata_key_still_matches_rows_over_the_limit(user, user_client, cap):
    legacy(user, "t-legacy", {"purpose": "x", "log": blob(cap * 2)})
    found = user_client.post("/api/threads/search", {"metadata": {"purpose": "x"}}, format="json").json()
    assert [t["thread_id"] for t in found] == ["t-legacy"] and found[0]["metadata"] == {"purpose": "x"}
    assert found[0]["metadata_truncated"] is True


def test_branching_a_thread_over_the_limit_is_a_413_and_makes_no_thread(user, user_client, cap):
    legacy(user, "t-legacy", {"log": blob(cap * 2)})
    response = user_client.post("/api/threads/t-legacy/branches", {"run_id": "00000000-0000-0000-0000-000000000000"},
                                format="json")
    assert response.status_code == 413, response.content
    assert str(cap) in response.json()["detail"]
    assert list(Thread.objects.values_list("pk", flat=True)) == ["t-legacy"]


def test_the_wire_size_is_what_is_measured(user_client, cap):
    meta = sized(cap, title="ü")
    response = user_client.post("/api/threads", {"metadata": meta}, format="json")
    assert response.status_code == 200
    assert len(json.dumps(response.json()["metadata"], ensure_ascii=False, separators=(",", ":")).encode()) == cap


def test_a_trimmed_search_result_never_writes_the_trimmed_copy_back(user, cap):
    from apps.threads.selectors import thread_search

    big = {"title": "t", "log": blob(cap * 2)}
    legacy(user, "t-legacy", big)
    [found] = thread_search(user=user)
    assert found.list_metadata == {"title": "t"} and found.metadata_truncated
    found.title = "renamed"
    found.save()
    assert found.metadata == big  # read again from the row, whole
    assert Thread.objects.get(pk="t-legacy").metadata == big
