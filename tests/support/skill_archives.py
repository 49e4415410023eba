"""Building .skill archives for tests, the honest kind and every attack the scan refuses."""

from __future__ import annotations

import io
import stat
import zipfile


def skill_md(name: str, description: str = "A test skill.", extra: str = "", body: str = "Follow these steps.\n") -> str:
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\n{body}"


def build(members: dict[str, str | bytes], *, top: str | None = None) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(f"{top}/{name}" if top else name, data)
    return buf.getvalue()


def good(name: str = "my-skill", version: str = "1.0", script: str = "print('hello from the skill')\n") -> bytes:
    return build({"SKILL.md": skill_md(name, extra=f"version: '{version}'\n"), "scripts/run.py": script}, top=name)


def with_symlink(target: str = "/etc/passwd") -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("s/SKILL.md", skill_md("s"))
        info = zipfile.ZipInfo("s/link")
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(info, target)
    return buf.getvalue()


def with_device() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("s/SKILL.md", skill_md("s"))
        info = zipfile.ZipInfo("s/dev")
        info.external_attr = (stat.S_IFCHR | 0o644) << 16
        zf.writestr(info, b"")
    return buf.getvalue()


def bomb() -> bytes:
    return build({"SKILL.md": skill_md("b"), "zeros.bin": b"\0" * (30 * 1024 * 1024)}, top="b")


def many_files(n: int = 10_000) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("m/SKILL.md", skill_md("m"))
        for i in range(n):
            zf.writestr(f"m/f{i}.txt", "")
    return buf.getvalue()


ATTACKS = {
    "traversal": (lambda: build({"SKILL.md": skill_md("t"), "../../evil.sh": "x"}, top="t"), "path.traversal"),
    "absolute": (lambda: build({"t/SKILL.md": skill_md("t"), "/etc/cron.d/evil": "x"}), "path.absolute"),
    "symlink": (with_symlink, "path.symlink"),
    "device": (with_device, "path.device"),
    "bomb": (bomb, "archive.compression_ratio"),
    "many_files": (many_files, "archive.too_many_files"),
    "no_skill_md": (lambda: build({"README.md": "hi"}, top="x"), "skill_md.missing"),
    "malformed_front_matter": (lambda: build({"SKILL.md": "---\nname: [x\n---\n"}, top="x"), "skill_md.invalid"),
    "missing_name": (lambda: build({"SKILL.md": "---\ndescription: d\n---\n"}, top="x"), "skill_md.invalid"),
    "path_name": (lambda: build({"SKILL.md": skill_md("../x")}, top="x"), "skill_md.invalid"),
    "not_zip": (lambda: b"this is not a zip", "archive.not_zip"),
}
