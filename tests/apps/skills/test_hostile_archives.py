"""Archives that lie (issue 41, item 5): sizes their deflate streams do not keep, two members of
one name, a damaged CRC, a compression method without an output bound. Each goes through the
upload route a user uses and is answered 422 naming the reason, with nothing installed and no
more inflated than the limits allow."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from harness.config import thread_user_data_dir
from harness.skills.loader import custom_root, user_skills_home
from tests.harness.skills.hostile_zips import MiB, bzip2_zip, count_inflated, crc_zip, duplicate_zip, lying_zip
from tests.support import skill_archives as sa

pytestmark = pytest.mark.django_db

MiB = 1024 * 1024


@pytest.fixture
def inflated(monkeypatch):
    return count_inflated(monkeypatch)


def upload(client, data: bytes, name: str = "x.skill"):
    return client.post("/api/skills/install", {"file": SimpleUploadedFile(name, data)}, format="multipart")


def assert_nothing_installed(user):
    home = user_skills_home(str(user.pk))
    leftovers = list(home.rglob("*")) if home.exists() else []
    assert [p for p in leftovers if p != custom_root(str(user.pk))] == []


def refused_rules(response) -> set[str]:
    return {f["rule"] for f in response.json()["findings"]}


def test_a_member_inflating_past_its_declared_size_is_refused_without_inflating_it(user, user_client, public_skills, inflated):
    response = upload(user_client, lying_zip(real_bytes=48 * MiB))
    assert response.status_code == 422, response.content
    body = response.json()
    assert "liar/zeros.bin" in body["detail"] and "100 bytes" in body["detail"], body
    assert "archive.size_mismatch" in refused_rules(response)
    # The reader stops once the member passes what it declared: a chunk or two, not 48 MiB.
    assert 100 < inflated["bytes"] < 1 * MiB, inflated
    assert_nothing_installed(user)


def test_a_lying_member_too_large_to_be_content_scanned_is_refused_while_unpacking(user, user_client, public_skills, inflated):
    # Declared 3 MiB (above the content scan's reach, under the member limit), inflates to 40 MiB:
    # found by the extractor, which stops at the declared size plus one chunk.
    response = upload(user_client, lying_zip(real_bytes=40 * MiB, declared=3 * MiB))
    assert response.status_code == 422, response.content
    assert "liar/zeros.bin" in response.json()["detail"]
    assert "archive.size_mismatch" in refused_rules(response)
    assert 3 * MiB < inflated["bytes"] < 3 * MiB + 1 * MiB, inflated
    assert_nothing_installed(user)


def test_a_duplicate_member_name_is_refused(user, user_client, public_skills):
    response = upload(user_client, duplicate_zip())
    assert response.status_code == 422, response.content
    assert "dup/run.py" in response.json()["detail"] and "more than once" in response.json()["detail"]
    assert "archive.duplicate_name" in refused_rules(response)
    assert_nothing_installed(user)


@pytest.mark.parametrize("member", ["notes.txt", "big.txt"])
def test_a_crc_error_is_refused(member, user, user_client, public_skills, monkeypatch):
    if member == "big.txt":
        # A member the content scan does not read: the extractor checks its CRC.
        monkeypatch.setattr("harness.skills.archive.CONTENT_SCAN_BYTES", 8)
    response = upload(user_client, crc_zip(member=member))
    assert response.status_code == 422, response.content
    assert f"crc/{member}" in response.json()["detail"] and "CRC" in response.json()["detail"]
    assert "archive.crc" in refused_rules(response)
    assert_nothing_installed(user)


def test_a_compression_method_without_an_output_bound_is_refused(user, user_client, public_skills):
    response = upload(user_client, bzip2_zip())
    assert response.status_code == 422, response.content
    assert "archive.compression_method" in refused_rules(response)
    assert "bz/SKILL.md" in response.json()["detail"]
    assert_nothing_installed(user)


def test_the_same_bomb_from_a_thread_file_is_refused(user, user_client, public_skills, inflated):
    thread_id = user_client.post("/api/threads", {}, format="json").json()["thread_id"]
    outputs = thread_user_data_dir(user.pk, thread_id) / "outputs"
    outputs.mkdir(parents=True, exist_ok=True)
    (outputs / "liar.skill").write_bytes(lying_zip(real_bytes=48 * MiB))
    response = user_client.post("/api/skills/install", {"thread_id": thread_id, "path": "/mnt/user-data/outputs/liar.skill"},
                                format="json")
    assert response.status_code == 422, response.content
    assert "archive.size_mismatch" in refused_rules(response)
    assert inflated["bytes"] < 1 * MiB
    assert_nothing_installed(user)


def test_the_unpacked_total_is_counted_as_written(user, user_client, public_skills, monkeypatch):
    # Honest sizes, but more in all than the total limit allows once written: the extractor's
    # own count refuses it (the scan's limit is lowered past the check so the extractor is reached).
    monkeypatch.setattr("harness.skills.archive.MAX_UNCOMPRESSED_BYTES", 10 ** 9)
    monkeypatch.setattr("harness.skills.install.MAX_UNCOMPRESSED_BYTES", 64 * 1024)
    archive = sa.build({"SKILL.md": sa.skill_md("tot"), "a.txt": "a" * 40_000, "b.txt": "b" * 40_000}, top="tot")
    response = upload(user_client, archive)
    assert response.status_code == 422, response.content
    assert "archive.uncompressed_too_large" in refused_rules(response)
    assert_nothing_installed(user)


def test_an_honest_archive_still_installs(user, user_client, public_skills):
    response = upload(user_client, sa.good("honest"))
    assert response.status_code == 200, response.content
    assert (custom_root(str(user.pk)) / "honest" / "scripts" / "run.py").read_text() == "print('hello from the skill')\n"
