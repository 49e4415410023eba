"""The bounded reader every skill-archive read goes through (harness/skills/zipread.py):
output counted as it is inflated, declared sizes and CRCs held to, limits per member and in
total, and every refusal a MemberRefused naming its rule (never a zipfile exception)."""

from __future__ import annotations

import io
import zipfile

import pytest

from harness.skills import zipread
from harness.skills.archive import scan_archive
from harness.skills.zipread import CHUNK, MemberRefused, extract_members, member_chunks, read_member
from tests.harness.skills.hostile_zips import MiB, bzip2_zip, count_inflated, crc_zip, duplicate_zip, lying_zip
from tests.support import skill_archives as sa


def open_zip(data: bytes) -> zipfile.ZipFile:
    return zipfile.ZipFile(io.BytesIO(data))


def refusal(fn) -> MemberRefused:
    with pytest.raises(MemberRefused) as caught:
        fn()
    return caught.value


def test_an_honest_member_reads_whole_in_bounded_chunks():
    payload = bytes(range(256)) * 1024  # 256 KiB
    zf = open_zip(sa.build({"data.bin": payload}))
    chunks = list(member_chunks(zf, zf.getinfo("data.bin"), max_bytes=MiB))
    assert b"".join(chunks) == payload and max(map(len, chunks)) <= CHUNK
    assert read_member(zf, zf.getinfo("data.bin"), max_bytes=MiB, keep=10) == payload[:10]


def test_a_member_inflating_past_its_declared_size_stops_after_a_chunk(monkeypatch):
    inflated = count_inflated(monkeypatch)
    zf = open_zip(lying_zip(real_bytes=64 * MiB))
    exc = refusal(lambda: read_member(zf, zf.getinfo("liar/zeros.bin"), max_bytes=20 * MiB))
    assert exc.rule == "archive.size_mismatch" and exc.file == "liar/zeros.bin"
    assert "more than the 100 bytes its header declares" in exc.message
    assert inflated["bytes"] <= CHUNK + 4096


def test_a_member_shorter_than_declared_is_refused():
    zf = open_zip(lying_zip(real_bytes=50, declared=100))
    exc = refusal(lambda: read_member(zf, zf.getinfo("liar/zeros.bin"), max_bytes=MiB))
    assert exc.rule == "archive.size_mismatch" and "holds 50 of the 100 bytes" in exc.message


def test_a_crc_error_is_a_refusal_not_bad_zip_file():
    zf = open_zip(crc_zip())
    exc = refusal(lambda: read_member(zf, zf.getinfo("crc/notes.txt"), max_bytes=MiB))
    assert exc.rule == "archive.crc" and "CRC-32" in exc.message


def test_limits_and_methods_are_refused_before_anything_is_inflated(monkeypatch):
    inflated = count_inflated(monkeypatch)
    zf = open_zip(sa.build({"big.bin": b"x" * 4096}))
    assert refusal(lambda: read_member(zf, zf.getinfo("big.bin"), max_bytes=1000)).rule == "archive.member_too_large"
    bz = open_zip(bzip2_zip())
    assert refusal(lambda: read_member(bz, bz.getinfo("bz/SKILL.md"), max_bytes=MiB)).rule == "archive.compression_method"
    assert inflated["bytes"] == 0


def test_extract_counts_the_bytes_written_against_the_total(tmp_path):
    zf = open_zip(sa.build({"a.txt": "a" * 3000, "b.txt": "b" * 3000}))
    exc = refusal(lambda: extract_members(zf, zf.infolist(), prefix="", target=tmp_path,
                                          max_member_bytes=MiB, max_total_bytes=5000))
    assert exc.rule == "archive.uncompressed_too_large" and exc.file == "b.txt"
    assert (tmp_path / "b.txt").stat().st_size == 0  # nothing past the limit was written
    assert extract_members(zf, zf.infolist(), prefix="", target=tmp_path / "ok",
                           max_member_bytes=MiB, max_total_bytes=6000) == 6000


def test_extract_refuses_a_second_member_of_the_same_name(tmp_path):
    zf = open_zip(duplicate_zip())
    exc = refusal(lambda: extract_members(zf, zf.infolist(), prefix="dup/", target=tmp_path,
                                          max_member_bytes=MiB, max_total_bytes=MiB))
    assert exc.rule == "archive.duplicate_name" and exc.file == "dup/run.py"


@pytest.mark.parametrize(("make", "rule"), [
    (lambda: lying_zip(real_bytes=8 * MiB), "archive.size_mismatch"),
    (duplicate_zip, "archive.duplicate_name"),
    (crc_zip, "archive.crc"),
    (bzip2_zip, "archive.compression_method"),
])
def test_the_scan_reports_each_as_a_critical_finding(tmp_path, make, rule):
    path = tmp_path / "x.skill"
    path.write_bytes(make())
    result = scan_archive(path)
    assert result.blocked and rule in {f.rule for f in result.findings}
    assert result.reason()


def test_the_chunk_bound_holds_for_zipfiles_own_reads():
    # The reader relies on ZipExtFile.read(n) inflating at most max(n, MIN_READ_SIZE) per call.
    assert zipfile.ZipExtFile.MIN_READ_SIZE <= CHUNK
    assert zipread.READABLE_METHODS.keys() == {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED}
