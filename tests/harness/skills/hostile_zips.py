"""Hostile ZIPs for the tests of the bounded reader (issue 41, item 5), built in the test run:
sizes their deflate streams do not keep, two members of one name, a damaged CRC, a compression
method without an output bound; and a counter of the bytes zipfile's decompressors produce."""

from __future__ import annotations

import io
import struct
import warnings
import zipfile

from tests.support import skill_archives as sa

MiB = 1024 * 1024


def lying_zip(*, real_bytes: int, declared: int = 100, name: str = "liar") -> bytes:
    """A skill whose ``zeros.bin`` declares ``declared`` bytes in both headers but whose deflate
    stream inflates to ``real_bytes`` zeros."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(f"{name}/SKILL.md", sa.skill_md(name))
        zf.writestr(f"{name}/zeros.bin", b"\0" * real_bytes)
        info = zf.getinfo(f"{name}/zeros.bin")
    data = bytearray(buf.getvalue())
    # local header: signature, ..., crc (14), compressed size (18), uncompressed size (22)
    local = info.header_offset
    assert data[local:local + 4] == b"PK\x03\x04"
    struct.pack_into("<I", data, local + 22, declared)
    # central directory entry: ..., compressed size (20), uncompressed size (24), name at 46
    encoded = info.filename.encode()
    central = _central_entry(data, encoded)
    struct.pack_into("<I", data, central + 24, declared)
    patched = zipfile.ZipFile(io.BytesIO(bytes(data))).getinfo(info.filename)
    assert patched.file_size == declared and patched.compress_size == info.compress_size
    return bytes(data)


def _central_entry(data: bytearray, encoded_name: bytes) -> int:
    pos = 0
    while (pos := data.find(b"PK\x01\x02", pos)) != -1:
        name_len = struct.unpack_from("<H", data, pos + 28)[0]
        if bytes(data[pos + 46:pos + 46 + name_len]) == encoded_name:
            return pos
        pos += 4
    raise AssertionError("no central directory entry for " + encoded_name.decode())


def duplicate_zip(name: str = "dup") -> bytes:
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Duplicate name": the point of this archive
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr(f"{name}/SKILL.md", sa.skill_md(name))
            zf.writestr(f"{name}/run.py", "print('first')\n")
            zf.writestr(f"{name}/run.py", "print('second')\n")
    return buf.getvalue()


def crc_zip(name: str = "crc", member: str = "notes.txt") -> bytes:
    """A stored (uncompressed) member with one byte of its data flipped: the CRC no longer fits."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr(f"{name}/SKILL.md", sa.skill_md(name))
        zf.writestr(f"{name}/{member}", "some plain notes for the skill\n" * 4)
        info = zf.getinfo(f"{name}/{member}")
    data = bytearray(buf.getvalue())
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    data[start + 3] ^= 0xFF
    return bytes(data)


def bzip2_zip(name: str = "bz") -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_BZIP2) as zf:
        zf.writestr(f"{name}/SKILL.md", sa.skill_md(name))
    return buf.getvalue()


def count_inflated(monkeypatch) -> dict:
    """Counts every byte the deflate decompressors zipfile uses produce in this process."""
    real = zipfile._get_decompressor
    total = {"bytes": 0}

    class Counting:
        def __init__(self, inner):
            self._inner = inner

        def decompress(self, *args):
            out = self._inner.decompress(*args)
            total["bytes"] += len(out)
            return out

        def flush(self, *args):
            out = self._inner.flush(*args)
            total["bytes"] += len(out)
            return out

        def __getattr__(self, attr):
            return getattr(self._inner, attr)

    monkeypatch.setattr(zipfile, "_get_decompressor", lambda kind: Counting(real(kind)))
    return total
