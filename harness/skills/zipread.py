"""Reading members of an untrusted ZIP (a ``.skill`` archive) with bounded output.

A ZIP's headers say how big each member is; its deflate stream decides how big it really is.
``ZipFile.read`` trusts neither: it inflates the whole stream in one call (up to 1 GiB) and
only then cuts it to the declared size, so a 500 KB archive whose member declares 100 bytes
costs the process half a gigabyte before the CRC check fails. Everything that reads a skill
archive (the scan, the install's unpacking, the preview of a member) goes through
:func:`member_chunks` instead, which

- accepts only stored and deflated members (bzip2 and LZMA decompress a whole input chunk
  with no bound on the output) and no encrypted ones;
- reads in chunks of at most :data:`CHUNK` bytes of output, so no more than one chunk past the
  declared size is ever inflated;
- refuses a member that inflates past its declared size, ends short of it, or fails its
  CRC-32, and a declared size over the caller's limit before reading anything.

:func:`extract_members` writes members to a directory through it, counting the bytes
actually written against a total. Every refusal is a :class:`MemberRefused` naming the rule,
the member and the reason; a damaged archive (``zipfile.BadZipFile``, a broken deflate
stream) is one too, never an unexpected exception.
"""

from __future__ import annotations

import copy
import os
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path

CHUNK = 64 * 1024
READABLE_METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflate"}


class MemberRefused(ValueError):
    """A member that cannot be read within the bounds; ``rule`` is the scan's rule name."""

    def __init__(self, rule: str, file: str, message: str):
        super().__init__(f"{file}: {message}")
        self.rule = rule
        self.file = file
        self.message = message


def _mib(n: int) -> str:
    return f"{n // (1024 * 1024)} MB" if n >= 1024 * 1024 and n % (1024 * 1024) == 0 else f"{n} bytes"


def check_readable(info: zipfile.ZipInfo, *, max_bytes: int) -> None:
    """What can be refused from the directory alone, before any byte is inflated."""
    name = info.filename
    if info.flag_bits & 0x1:
        raise MemberRefused("archive.encrypted", name, "encrypted members cannot be scanned")
    if info.compress_type not in READABLE_METHODS:
        raise MemberRefused("archive.compression_method", name,
                            f"uses compression method {info.compress_type}; only stored and deflate members are accepted")
    if info.file_size > max_bytes:
        raise MemberRefused("archive.member_too_large", name, f"larger than {_mib(max_bytes)}")


def member_chunks(zf: zipfile.ZipFile, info: zipfile.ZipInfo, *, max_bytes: int) -> Iterator[bytes]:
    """The member's bytes, in chunks of at most :data:`CHUNK`, verified against its declared
    size and CRC-32 as they come. Raises :class:`MemberRefused` (from the generator: a
    consumer that stops early has read no further than it asked)."""
    check_readable(info, max_bytes=max_bytes)
    name, declared = info.filename, info.file_size
    # zipfile stops a member at its declared size and then checks the CRC, which would hide
    # the lie behind "Bad CRC-32". Let it run one byte further, without its CRC check (it
    # checks only when the ZipInfo has a CRC), and check both here.
    probe = copy.copy(info)
    probe.file_size = declared + 1
    if hasattr(probe, "CRC"):
        del probe.CRC
    produced = 0
    crc = 0
    try:
        with zf.open(probe) as fh:
            while chunk := fh.read(CHUNK):
                produced += len(chunk)
                if produced > declared:
                    raise MemberRefused("archive.size_mismatch", name,
                                        f"inflates to more than the {declared} bytes its header declares")
                crc = zlib.crc32(chunk, crc)
                yield chunk
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError) as exc:
        raise MemberRefused("archive.corrupt", name, f"cannot be read ({exc})") from None
    if produced < declared:
        raise MemberRefused("archive.size_mismatch", name, f"holds {produced} of the {declared} bytes its header declares")
    if crc != info.CRC:
        raise MemberRefused("archive.crc", name, "fails its CRC-32 check (Bad CRC-32): the archive is damaged")


def read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, *, max_bytes: int, keep: int | None = None) -> bytes:
    """The member's content (its first ``keep`` bytes if given), the whole member verified.
    Memory: at most ``min(keep, max_bytes)`` plus one chunk."""
    limit = max_bytes if keep is None else min(keep, max_bytes)
    out = bytearray()
    for chunk in member_chunks(zf, info, max_bytes=max_bytes):
        if len(out) < limit:
            out += chunk[: limit - len(out)]
    return bytes(out)


def extract_members(zf: zipfile.ZipFile, infos: Iterable[zipfile.ZipInfo], *, prefix: str, target: Path,
                    max_member_bytes: int, max_total_bytes: int) -> int:
    """Write the members (their names less ``prefix``) under ``target``, which the caller
    removes on a refusal. Returns the bytes written; stops at the first refusal."""
    written = 0
    root = target.resolve()
    for info in infos:
        rel = info.filename[len(prefix):]
        if not rel or info.is_dir():
            continue
        dest = target / rel
        # The scan refused '..' and absolute names; this is the belt to its braces.
        if not dest.resolve().is_relative_to(root):
            raise MemberRefused("path.traversal", info.filename, "would land outside the skill")
        executable = bool((info.external_attr >> 16) & 0o111)
        try:
            dest.parent.mkdir(parents=True, exist_ok=True)
            out = open(dest, "xb")
        except FileExistsError:
            raise MemberRefused("archive.duplicate_name", info.filename, "appears more than once in the archive") from None
        except (NotADirectoryError, IsADirectoryError):
            raise MemberRefused("archive.path_conflict", info.filename,
                                "is both a file and a folder in the archive") from None
        with out:
            for chunk in member_chunks(zf, info, max_bytes=max_member_bytes):
                written += len(chunk)
                if written > max_total_bytes:
                    raise MemberRefused("archive.uncompressed_too_large", info.filename,
                                        f"the archive unpacks to more than {_mib(max_total_bytes)}")
                out.write(chunk)
        os.chmod(dest, 0o755 if executable else 0o644)
    return written
