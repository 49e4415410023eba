"""A member of a ``.skill`` file in a thread's outputs, previewed through the artifacts route,
is read through the same bounded reader as an install (issue 41, item 5): a member that lies
about its size, a damaged CRC or an unbounded compression method answer 422 naming the
reason, and the lying member is not inflated past its declared size."""

from __future__ import annotations

import pytest

from harness.config import thread_user_data_dir
from tests.harness.skills.hostile_zips import MiB, bzip2_zip, count_inflated, crc_zip, lying_zip

pytestmark = pytest.mark.django_db


def put(user, tid, name: str, data: bytes) -> str:
    path = thread_user_data_dir(user.pk, tid) / "outputs" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return f"/api/threads/{tid}/artifacts/mnt/user-data/outputs/{name}"


def test_a_lying_member_is_refused_without_inflating_it(user_client, user, thread_of, monkeypatch):
    inflated = count_inflated(monkeypatch)
    base = put(user, thread_of(), "liar.skill", lying_zip(real_bytes=48 * MiB))
    response = user_client.get(f"{base}/liar/zeros.bin")
    assert response.status_code == 422, response.content
    assert "liar/zeros.bin" in response.json()["detail"] and "100 bytes its header declares" in response.json()["detail"]
    assert inflated["bytes"] < MiB
    # The honest member beside it still reads.
    assert user_client.get(f"{base}/liar/SKILL.md").status_code == 200


@pytest.mark.parametrize(("make", "member", "words"), [
    (crc_zip, "crc/notes.txt", "CRC-32"),
    (bzip2_zip, "bz/SKILL.md", "compression method"),
])
def test_a_damaged_or_unbounded_member_is_a_422(user_client, user, thread_of, make, member, words):
    base = put(user, thread_of(), "x.skill", make())
    response = user_client.get(f"{base}/{member}")
    assert response.status_code == 422, response.content
    assert words in response.json()["detail"] and member in response.json()["detail"]
