"""The static scan of a ``.skill`` archive (a ZIP) before anything is written.

Every member is checked from the archive's own directory, never by extracting first:
``..`` or absolute names, symlinks, device files, too many members, too many bytes, a
compression ratio only a bomb has, two members of one name, a compression method other than
stored or deflate, and a missing or invalid ``SKILL.md`` are *critical* and refuse the
install. Suspicious content (a download piped into a shell, reads of credential files, an
obfuscated payload fed to ``eval``) is reported with the file and line so a person can judge
it; it does not block. Python files are also read as syntax trees (``harness.skills.pyscan``:
network, subprocess, environment reads, obfuscation); their *high* findings keep a skill the
agent wrote switched off until a person enables it (``blocks_enable``).

The members the scan reads (``SKILL.md``, the content of small files) go through
``harness.skills.zipread``, which inflates in bounded chunks and refuses a member that
inflates past its declared size or fails its CRC; extraction afterwards goes through it too
and counts the bytes it really writes, so a header that lies about sizes gains nothing.
"""

from __future__ import annotations

import re
import stat
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import PurePosixPath

from harness.skills.parser import SkillMeta, SkillParseError, parse_skill_md
from harness.skills.pyscan import MAX_SOURCE_BYTES, is_python, scan_python
from harness.skills.zipread import MemberRefused, check_readable, read_member

MAX_ARCHIVE_BYTES = 20 * 1024 * 1024
MAX_MEMBERS = 500
MAX_UNCOMPRESSED_BYTES = 50 * 1024 * 1024
MAX_MEMBER_BYTES = 20 * 1024 * 1024
MAX_RATIO = 100  # a bomb compresses by thousands; real text rarely by more than 20
RATIO_FLOOR = 1024 * 1024  # small members may compress well without being a bomb
CONTENT_SCAN_BYTES = 512 * 1024

CRITICAL, HIGH, WARNING = "critical", "high", "warning"


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: str
    file: str
    line: int | None
    message: str

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class ScanResult:
    findings: list[Finding] = field(default_factory=list)
    meta: SkillMeta | None = None
    prefix: str = ""  # the folder inside the archive that holds SKILL.md ("" at the top)
    files: list[zipfile.ZipInfo] = field(default_factory=list)

    @property
    def blocked(self) -> bool:
        return any(f.severity == CRITICAL for f in self.findings)

    @property
    def holds(self) -> list[Finding]:
        """The findings that keep a skill the agent wrote from being enabled by itself."""
        return holding_findings(self.findings)

    def add(self, rule: str, severity: str, file: str, message: str, line: int | None = None) -> None:
        self.findings.append(Finding(rule, severity, file, line, message))

    def refuse(self, exc: MemberRefused) -> None:
        self.add(exc.rule, CRITICAL, exc.file, exc.message)

    def reason(self, limit: int = 3) -> str:
        """The critical findings in one line, for an error's detail."""
        critical = [f"{f.file}: {f.message}" for f in self.findings if f.severity == CRITICAL]
        more = f" (and {len(critical) - limit} more)" if len(critical) > limit else ""
        return "; ".join(critical[:limit]) + more


_CONTENT_RULES = (
    ("content.curl_pipe_shell", HIGH, re.compile(r"\b(curl|wget)\b[^\n|]*\|\s*(sudo\s+)?(ba|z|da)?sh\b"),
     "downloads code and pipes it straight into a shell"),
    ("content.credential_read", HIGH,
     re.compile(r"(~|\$HOME|/root|/home/[^/\s]+)/\.(ssh|aws|gnupg|netrc|docker/config)|/etc/shadow|id_rsa\b|\.aws/credentials"),
     "reads a credential file"),
    ("content.obfuscated_exec", HIGH,
     re.compile(r"(eval|exec)\s*\(\s*(base64\.b64decode|codecs\.decode|bytes\.fromhex|__import__\(['\"]base64)|base64\s+(-d|--decode)[^\n|]*\|\s*(ba)?sh"),
     "runs an obfuscated payload"),
    ("content.env_dump", WARNING, re.compile(r"\b(printenv|env)\s*(\||>)|os\.environ\.copy\(\)\s*\)|json\.dumps\(\s*dict\(\s*os\.environ"),
     "collects the whole environment"),
)


def _mode(info: zipfile.ZipInfo) -> int:
    return (info.external_attr >> 16) & 0xFFFF


def _name_problem(name: str) -> tuple[str, str] | None:
    if "\x00" in name:
        return "path.nul", "the name contains a NUL byte"
    if name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name):
        return "path.absolute", "absolute path"
    parts = name.replace("\\", "/").split("/")
    if ".." in parts:
        return "path.traversal", "'..' in the path would write outside the skill"
    return None


def holding_findings(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity in (CRITICAL, HIGH)]


def content_findings(name: str, data: bytes) -> list[Finding]:
    """The line rules over a file's text, and the syntax-tree rules when it is Python."""
    out: list[Finding] = []
    text = data[:CONTENT_SCAN_BYTES].decode("utf-8", errors="ignore")
    for lineno, line in enumerate(text.splitlines(), 1):
        for rule, severity, pattern, message in _CONTENT_RULES:
            if pattern.search(line):
                out.append(Finding(rule, severity, name, lineno, message))
    if is_python(name, data):
        code = [Finding(f.rule, f.severity, name, f.line, f.message) for f in scan_python(data)]
        # The tree's reading of a line replaces the pattern's guess at the same thing.
        same = {(f.rule.split(".", 1)[1], f.line) for f in code}
        out = [f for f in out if (f.rule.split(".", 1)[1], f.line) not in same] + code
    return out


def _scan_content(result: ScanResult, name: str, data: bytes) -> None:
    result.findings.extend(content_findings(name, data))


def scan_archive(path, *, public_names: frozenset[str] | set[str] = frozenset(), archive_size: int | None = None,
                 content: bool = True) -> ScanResult:
    """Scan the archive at ``path`` (blocking: call it off the event loop). ``content``
    False (``skill_scan.enabled: false``) skips the content and code rules; the archive's
    structure is checked whatever the setting, because that is what keeps the unpack safe."""
    result = ScanResult()
    label = PurePosixPath(str(path)).name
    if archive_size is not None and archive_size > MAX_ARCHIVE_BYTES:
        result.add("archive.too_large", CRITICAL, label, f"the archive is larger than {MAX_ARCHIVE_BYTES // (1024 * 1024)} MB")
        return result
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError):
        result.add("archive.not_zip", CRITICAL, label, "not a ZIP archive (a .skill file is a ZIP of the skill's folder)")
        return result
    with zf:
        infos = zf.infolist()
        if len(infos) > MAX_MEMBERS:
            result.add("archive.too_many_files", CRITICAL, label, f"{len(infos)} members; at most {MAX_MEMBERS} are allowed")
            return result
        total = 0
        seen: set[str] = set()
        for info in infos:
            name = info.filename
            key = _path_key(name)
            if key in seen:
                result.add("archive.duplicate_name", CRITICAL, name, "appears more than once in the archive")
                continue
            seen.add(key)
            problem = _name_problem(name)
            if problem:
                result.add(problem[0], CRITICAL, name, problem[1])
                continue
            mode = _mode(info)
            if stat.S_ISLNK(mode):
                result.add("path.symlink", CRITICAL, name, "symbolic links are not allowed in a skill")
                continue
            if mode and (stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
                result.add("path.device", CRITICAL, name, "device files, pipes and sockets are not allowed in a skill")
                continue
            if info.is_dir():
                continue
            try:
                check_readable(info, max_bytes=info.file_size)  # encryption, compression method
            except MemberRefused as exc:
                result.refuse(exc)
                continue
            total += info.file_size
            if info.file_size > RATIO_FLOOR and info.file_size > MAX_RATIO * max(info.compress_size, 1):
                result.add("archive.compression_ratio", CRITICAL, name,
                           f"compresses {info.file_size // max(info.compress_size, 1)}:1, like a zip bomb")
            elif info.file_size > MAX_MEMBER_BYTES:
                result.add("archive.member_too_large", CRITICAL, name, f"larger than {MAX_MEMBER_BYTES // (1024 * 1024)} MB")
            result.files.append(info)
        if total > MAX_UNCOMPRESSED_BYTES:
            result.add("archive.uncompressed_too_large", CRITICAL, label,
                       f"unpacks to {total} bytes; at most {MAX_UNCOMPRESSED_BYTES} are allowed")
        if result.blocked:
            return result
        _find_skill_md(result, zf, public_names)
        if result.blocked or not content:
            return result
        for info in result.files:
            if info.file_size <= CONTENT_SCAN_BYTES * 4:
                # A Python file is parsed whole (up to the parser's cap), other text by its head.
                keep = MAX_SOURCE_BYTES + 1 if info.filename.lower().endswith(".py") else CONTENT_SCAN_BYTES
                try:
                    head = read_member(zf, info, max_bytes=MAX_MEMBER_BYTES, keep=keep)
                except MemberRefused as exc:
                    result.refuse(exc)
                    return result
                _scan_content(result, info.filename, head)
    return result


def _path_key(name: str) -> str:
    """Names that unpack to the same path are the same name (``a/b``, ``a//b``, ``a/./b``, ``a/b/``)."""
    return "/".join(part for part in name.split("/") if part not in ("", "."))


def _find_skill_md(result: ScanResult, zf: zipfile.ZipFile, public_names) -> None:
    names = {i.filename: i for i in result.files}
    if "SKILL.md" in names:
        prefix = ""
    else:
        tops = {n.split("/", 1)[0] for n in names if "/" in n}
        candidates = [t for t in tops if f"{t}/SKILL.md" in names]
        if len(candidates) != 1 or any("/" not in n for n in names):
            result.add("skill_md.missing", CRITICAL, "SKILL.md",
                       "no SKILL.md at the top of the archive (or in its single top-level folder)")
            return
        prefix = candidates[0] + "/"
    result.prefix = prefix
    skill_md = f"{prefix}SKILL.md"
    try:
        meta = parse_skill_md(read_member(zf, names[skill_md], max_bytes=MAX_MEMBER_BYTES).decode("utf-8"), strict=True)
    except MemberRefused as exc:
        result.refuse(exc)
        return
    except UnicodeDecodeError:
        result.add("skill_md.invalid", CRITICAL, skill_md, "SKILL.md is not UTF-8 text")
        return
    except SkillParseError as exc:
        result.add("skill_md.invalid", CRITICAL, skill_md, exc.message, exc.line)
        return
    if meta.name in public_names:
        result.add("name.clash_public", CRITICAL, skill_md, f"'{meta.name}' is the name of a public skill; choose another name", 2)
        return
    result.meta = meta
    result.files = [i for i in result.files if i.filename.startswith(prefix)]
