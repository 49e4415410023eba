"""Virtual paths: what the model sees, what the host holds, and the rules between them.

The model works with ``/mnt/user-data/{workspace,uploads,outputs}`` and ``/mnt/skills``. Each
thread's virtual paths map to its own directories under ``DEER_FLOW_HOME``. Every path a
tool receives goes through :meth:`VirtualFS.resolve`, which normalises it lexically, maps
follows symlinks the way a sandboxed command would see them (in virtual space) and checks
that the result is still inside the thread's directories (or the skills directory).
Anything else is refused before it touches the disk.
"""

from __future__ import annotations

import os
import posixpath
import re
from dataclasses import dataclass
from pathlib import Path

from harness.sandbox.errors import SandboxPathError

USER_DATA = "/mnt/user-data"
WORKSPACE = f"{USER_DATA}/workspace"
UPLOADS = f"{USER_DATA}/uploads"
OUTPUTS = f"{USER_DATA}/outputs"
DEFAULT_SKILLS = "/mnt/skills"
USER_DATA_SUBDIRS = ("workspace", "uploads", "outputs")

MAX_PATH_BYTES = 4096
MAX_NAME_BYTES = 255
_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def check_id(kind: str, value: str | int) -> str:
    text = str(value)
    if not _ID.match(text):
        raise ValueError(f"invalid {kind} {value!r}: use 1-64 letters, digits, '_' or '-'")
    return text


@dataclass(frozen=True)
class Root:
    virtual: str
    host: Path  # realpath of the directory the virtual root maps to
    boundary: Path  # where confined opens start walking (the root's own directory)
    writable: bool


@dataclass(frozen=True)
class ResolvedPath:
    virtual: str  # normalised virtual path, as shown to the model
    host: Path  # lexical host path (symlinks not followed)
    real: Path  # host path with every symlink resolved (inside ``root``)
    root: Root  # the root the path lands in after following links


class VirtualFS:
    """The path mapping of one thread."""

    def __init__(self, user_data_dir: Path, skills_dir: Path | None, skills_virtual: str = DEFAULT_SKILLS,
                 custom_skills_dir: Path | None = None, global_skills_dir: Path | None = None,
                 extra_mounts: list[tuple[str, Path, bool]] | tuple = ()):
        user_data = Path(os.path.realpath(user_data_dir))
        roots = [Root(f"{USER_DATA}/{name}", user_data / name, user_data / name, True) for name in USER_DATA_SUBDIRS]
        roots.append(Root(USER_DATA, user_data, user_data, False))
        self.skills_virtual = posixpath.normpath(skills_virtual)
        if skills_dir is not None:
            real_skills = Path(os.path.realpath(skills_dir))
            roots.append(Root(self.skills_virtual, real_skills, real_skills, False))
        # The user's own installed skills, read-only like the public ones; another user's
        # directory is simply not a root, so no path reaches it.
        self.custom_skills_dir = Path(os.path.realpath(custom_skills_dir)) if custom_skills_dir is not None else None
        if self.custom_skills_dir is not None:
            roots.append(Root(f"{self.skills_virtual}/custom", self.custom_skills_dir, self.custom_skills_dir, False))
        # Skills an admin installed for everyone: the same for every user, read-only.
        self.global_skills_dir = Path(os.path.realpath(global_skills_dir)) if global_skills_dir is not None else None
        if self.global_skills_dir is not None:
            roots.append(Root(f"{self.skills_virtual}/global", self.global_skills_dir, self.global_skills_dir, False))
        # The operator's extra mounts (sandbox.mounts): (container path, host path, writable), at
        # the same path for the file tools as for commands.
        self.extra_mounts: list[tuple[str, Path, bool]] = []
        for virtual, host, writable in extra_mounts:
            real = Path(os.path.realpath(host))
            virtual = posixpath.normpath(virtual)
            roots.append(Root(virtual, real, real, writable))
            self.extra_mounts.append((virtual, real, writable))
        # Longest first, so /mnt/user-data/workspace wins over /mnt/user-data.
        self.roots = sorted(roots, key=lambda r: len(r.virtual), reverse=True)
        self.user_data_dir = user_data
        self.skills_dir = Path(os.path.realpath(skills_dir)) if skills_dir is not None else None

    def host_dir(self, name: str) -> Path:
        return self.user_data_dir / name

    # -- model path -> host path -------------------------------------------------------

    def normalize(self, path: str) -> str:
        if not isinstance(path, str) or not path.strip():
            raise SandboxPathError("Error: the path is empty. Give an absolute path such as /mnt/user-data/workspace/notes.md.")
        if "\x00" in path:
            raise SandboxPathError("Error: the path contains a NUL byte. Remove it and try again.")
        path = path.strip()
        if len(path.encode("utf-8", "surrogatepass")) > MAX_PATH_BYTES:
            raise SandboxPathError(f"Error: the path is longer than {MAX_PATH_BYTES} bytes. Use a shorter path.")
        for part in path.split("/"):
            if len(part.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
                raise SandboxPathError(f"Error: a file or directory name in the path is longer than {MAX_NAME_BYTES} bytes. Use a shorter name.")
        if path == "~" or path.startswith("~/"):
            raise SandboxPathError(f"Error: '~' is not available here. Use {WORKSPACE} instead.")
        if not path.startswith("/"):
            path = f"{WORKSPACE}/{path}"
        return posixpath.normpath(path).replace("//", "/")

    def _root_for(self, virtual: str) -> Root | None:
        for root in self.roots:
            if virtual == root.virtual or virtual.startswith(root.virtual + "/"):
                return root
        return None

    def allowed_roots_text(self) -> str:
        names = [WORKSPACE, UPLOADS, OUTPUTS]
        if self.skills_dir is not None:
            names.append(f"{self.skills_virtual} (read-only)")
        names += [v if writable else f"{v} (read-only)" for v, _, writable in self.extra_mounts]
        return ", ".join(names)

    def _host_of(self, virtual: str) -> Path | None:
        root = self._root_for(virtual)
        if root is None:
            return None
        rel = virtual[len(root.virtual):].lstrip("/")
        return root.host / rel if rel else root.host

    def _link_target_virtual(self, target: str, link_dir: str) -> str | None:
        """Where a symlink points, as a virtual path, or None if it leaves the roots.

        A link made inside the bubblewrap sandbox holds a virtual target; one made by a
        local command holds the host path (commands there are rewritten); a relative one is
        taken from the link's directory.
        """
        if not target.startswith("/"):
            return posixpath.join(link_dir, target)
        for root in self.roots:
            host = str(root.host)
            if target == host or target.startswith(host + "/"):
                return root.virtual + target[len(host):]
        if self._root_for(posixpath.normpath(target)) is not None:
            return target
        return None

    def _follow_links(self, virtual: str, original: str) -> str:
        """Resolve symlinks component by component in virtual space.

        Links are followed the way the sandboxed command would see them, so a link made
        inside bubblewrap to ``/mnt/user-data/outputs/x`` works for the file tools too, and
        a link whose target is outside every root is refused rather than resolved on the host.
        """
        pending = [p for p in virtual.split("/") if p]
        resolved = "/"
        hops = 0
        while pending:
            part = pending.pop(0)
            if part == ".":
                continue
            if part == "..":
                resolved = posixpath.dirname(resolved)
                continue
            candidate = posixpath.join(resolved, part)
            host = self._host_of(candidate)
            if host is not None and os.path.islink(host):
                hops += 1
                if hops > 40:
                    raise SandboxPathError(f"Error: {original} has too many levels of symbolic links.")
                target = self._link_target_virtual(os.readlink(host), resolved)
                if target is None:
                    raise SandboxPathError(
                        f"Error: {original} is a symbolic link (or passes through one) that points outside the sandbox. "
                        "Access to it is refused; use a path inside the sandbox directories."
                    )
                pending = [p for p in target.split("/") if p] + pending
                resolved = "/"
                continue
            resolved = candidate
        return resolved

    def resolve(self, path: str, *, write: bool = False) -> ResolvedPath:
        virtual = self.normalize(path)
        outside = SandboxPathError(
            f"Error: {path!r} is outside the sandbox. Only paths under {self.allowed_roots_text()} are available; "
            f"relative paths are taken from {WORKSPACE}."
        )
        if self._root_for(virtual) is None:
            raise outside
        final = self._follow_links(virtual, virtual)
        root = self._root_for(final)
        if root is None:
            raise SandboxPathError(
                f"Error: {virtual} is a symbolic link (or passes through one) that points outside the sandbox. "
                "Access to it is refused; use a path inside the sandbox directories."
            )
        real = self._host_of(final)
        host = self._host_of(virtual)
        if write:
            if not root.writable:
                if root.virtual == self.skills_virtual or root.virtual.startswith(self.skills_virtual + "/"):
                    raise SandboxPathError(f"Error: {self.skills_virtual} is read-only. Write to {WORKSPACE} or {OUTPUTS} instead.")
                if any(root.virtual == v for v, _, _ in self.extra_mounts):
                    raise SandboxPathError(f"Error: {root.virtual} is a read-only mount. Write to {WORKSPACE} or {OUTPUTS} instead.")
                raise SandboxPathError(f"Error: cannot write to {virtual}. Write under {WORKSPACE}, {UPLOADS} or {OUTPUTS}.")
            if final == root.virtual:
                raise SandboxPathError(f"Error: {virtual} is a directory. Give a file path inside it.")
        return ResolvedPath(virtual, host, real, root)

    # -- host path -> model path -------------------------------------------------------

    def to_virtual(self, host_path: str | Path) -> str | None:
        """The virtual path for a host path inside this thread's roots, else None."""
        real = Path(os.path.realpath(host_path))
        for root in self.roots:
            if real == root.host:
                return root.virtual
            if root.host in real.parents:
                return f"{root.virtual}/{real.relative_to(root.host).as_posix()}"
        return None

    # -- command strings (local provider only) -----------------------------------------

    def _command_pattern(self) -> re.Pattern[str]:
        virtuals = sorted({r.virtual for r in self.roots}, key=len, reverse=True)
        alternation = "|".join(re.escape(v) for v in virtuals)
        # A virtual root that is a whole path token or a prefix followed by '/': not a
        # fragment of some longer word such as /mnt/user-database.
        return re.compile(rf"(?<![\w.~-])({alternation})(?=/|[\s'\"`;|&)<>:,=]|$)")

    def translate_command(self, command: str) -> str:
        """Rewrite virtual paths in a shell command to this thread's host paths."""
        by_virtual = {r.virtual: str(r.host) for r in self.roots}
        return self._command_pattern().sub(lambda m: by_virtual[m.group(1)], command)

    def untranslate_output(self, text: str) -> str:
        """Show host paths in command output as the virtual paths the model knows."""
        for root in sorted(self.roots, key=lambda r: len(str(r.host)), reverse=True):
            text = text.replace(str(root.host), root.virtual)
        return text
