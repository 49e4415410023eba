"""A hard disk limit per thread: its user-data folder is a file system of its own.

The container provider puts each thread's ``user-data`` (workspace, uploads, outputs) on an
ext4 image of ``sandbox.thread_quota_mb``: a sparse file next to the folder
(``…/threads/{thread}/user-data.img``), loop-mounted over the folder itself. Everything that
reads or writes the thread's files — the file tools, uploads, artifacts, the container's
bind mounts — goes through the same path as before and lands in the image, and a write past
its size fails with ENOSPC in the writer, whoever it is: the host's disk never sees it.

Why an image and not project quotas: XFS/ext4 project quotas need the file system holding
``DEER_FLOW_HOME`` mounted with ``prjquota`` (set at mkfs or while unmounted), which an
operator rarely controls; a loop image needs only root and ``mkfs.ext4``, on any file system.

Lifecycle: made and mounted when the thread's sandbox is first built (files already in the
folder, e.g. uploads made before, are moved in), mounted again after a reboot, grown online
when the quota grows (never shrunk: that could lose files), unmounted when the thread is
deleted. The loop device is attached with autoclear, so it goes with the last unmount,
including the copy a container still holds. At provider start, mounts and loop devices whose
image was deleted (a thread removed while its container lived, a crash) are cleaned up.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import subprocess
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

from harness.sandbox.paths import USER_DATA_SUBDIRS
from harness.sandbox.quota import MIB, tree_usage

logger = logging.getLogger(__name__)

IMAGE_NAME = "user-data.img"
_TOOLS = ("mkfs.ext4", "mount", "umount", "losetup", "resize2fs")
_lock = threading.Lock()


class DiskError(Exception):
    """The image could not be made or mounted; the message is for the operator's log."""


def unsupported_reason() -> str | None:
    """Why images cannot be used here, or None when they can."""
    if os.geteuid() != 0:
        return "the server does not run as root (loop mounts need it)"
    missing = [tool for tool in _TOOLS if shutil.which(tool) is None]
    if missing:
        return f"{', '.join(missing)} not found (Debian: e2fsprogs, mount)"
    if not os.path.exists("/dev/loop-control"):
        return "no /dev/loop-control (no loop devices on this machine)"
    return None


def image_path(user_data: Path) -> Path:
    return Path(user_data).parent / IMAGE_NAME


def _run(*argv: str) -> str:
    done = subprocess.run(list(argv), capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise DiskError(f"{' '.join(argv[:2])} failed: {(done.stderr or done.stdout).strip()[-400:]}")
    return done.stdout


def _unescape(field: str) -> str:
    return field.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")


def mounts() -> dict[str, str]:
    """Mount point -> source device, from this process's mount table."""
    table: dict[str, str] = {}
    try:
        with open("/proc/self/mounts", encoding="utf-8") as fh:
            for line in fh:
                fields = line.split(" ")
                if len(fields) >= 2:
                    table[_unescape(fields[1])] = _unescape(fields[0])
    except OSError:
        pass
    return table


def mounted_device(user_data: Path) -> str | None:
    # The mount table holds resolved paths.
    return mounts().get(os.path.realpath(user_data))


def _backing_file(device: str) -> str | None:
    try:
        return Path(f"/sys/block/{Path(device).name}/loop/backing_file").read_text().strip()
    except OSError:
        return None


@contextlib.contextmanager
def _thread_lock(user_data: Path) -> Iterator[None]:
    # Server processes share the mount table: one of them mounts, the others find it mounted.
    parent = Path(user_data).parent
    parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with _lock:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _make_image(image: Path, size: int) -> None:
    tmp = image.with_name(image.name + ".new")
    with open(tmp, "wb") as fh:
        fh.truncate(size)  # sparse: the host pays only for what is written
    try:
        # -m 0: no blocks reserved for root (commands may run as root); the uid owns the root dir.
        # lazy_journal_init: the journal of a sparse file reads as zeros already; writing it out
        # would cost the host its size and a new thread's first command tens of milliseconds.
        _run("mkfs.ext4", "-q", "-F", "-m", "0", "-E",
             f"root_owner={os.getuid()}:{os.getgid()},nodiscard,lazy_itable_init=1,lazy_journal_init=1", str(tmp))
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, image)


def _mount(image: Path, target: Path, *, check: bool = True) -> None:
    if check:
        # e2fsck -p first: an image left by a crash mounts clean, or the error says why not.
        subprocess.run(["e2fsck", "-p", str(image)], capture_output=True, timeout=300)
    _run("mount", "-o", "loop,nosuid,nodev,noatime", str(image), str(target))


def _move_in(user_data: Path, image: Path) -> None:
    """Files already in the plain folder go into the image (mounted aside, then unmounted)."""
    stage = user_data.parent / ".user-data.stage"
    stage.mkdir(exist_ok=True)
    _mount(image, stage)
    try:
        _merge(user_data, stage)
    finally:
        _run("umount", str(stage))
        stage.rmdir()


def _fs_bytes(image: Path) -> int:
    """The size the file system inside the image believes it has (less than the file after a failed online grow)."""
    done = subprocess.run(["dumpe2fs", "-h", str(image)], capture_output=True, text=True, timeout=60)
    fields = dict(line.split(":", 1) for line in done.stdout.splitlines() if ":" in line)
    try:
        return int(fields["Block count"]) * int(fields["Block size"])
    except (KeyError, ValueError):
        return 0


def _merge(src: Path, dst: Path) -> None:
    """Move everything below ``src`` into ``dst``; what ``src`` holds wins (it is the newer)."""
    for entry in list(os.scandir(src)):
        target = dst / entry.name
        if entry.is_dir(follow_symlinks=False) and target.is_dir() and not target.is_symlink():
            _merge(Path(entry.path), target)
            os.rmdir(entry.path)
            continue
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        elif os.path.lexists(target):
            target.unlink()
        shutil.move(entry.path, target)


def _grow(user_data: Path, image: Path, device: str, size: int) -> None:
    if image.stat().st_size >= size:
        return
    with open(image, "r+b") as fh:
        fh.truncate(size)
    try:
        _run("losetup", "-c", device)
        _run("resize2fs", device)
    except DiskError as exc:
        # Some kernels refuse online resizing; the image is grown when it is next mounted.
        logger.info("Sandbox: the disk of %s grows to %d MiB at its next mount (%s)", user_data, size // MIB, exc)
        return
    logger.info("Sandbox: grew the disk of %s to %d MiB", user_data, size // MIB)


def make_spare(directory: Path, size: int) -> Path:
    """A formatted image made ahead (with the warm pool), so a new thread's first command skips mkfs."""
    directory.mkdir(parents=True, exist_ok=True)
    spare = directory / f"spare-{uuid.uuid4().hex[:12]}.img"
    _make_image(spare, size)
    return spare


def take_spare(directory: Path, size: int) -> Path | None:
    """One spare image of ``size``, if any (another process may take it first: the rename decides)."""
    try:
        candidates = sorted(directory.glob("spare-*.img"))
    except OSError:
        return None
    for spare in candidates:
        with contextlib.suppress(OSError):
            if spare.stat().st_size == size:
                return spare
    return None


def ensure_mounted(user_data: Path, size: int, spares: Path | None = None) -> None:
    """The thread's ``user-data`` is its image, mounted, of at least ``size`` bytes.

    ``spares``: a directory of images made ahead by :func:`make_spare`; one is used when there is one.
    """
    user_data = Path(user_data)
    image = image_path(user_data)
    with _thread_lock(user_data):
        device = mounted_device(user_data)
        if device is not None:
            if image.exists():
                _grow(user_data, image, device, size)
            return
        user_data.mkdir(parents=True, exist_ok=True)
        with os.scandir(user_data) as entries:
            existing = any(entries)
        fresh = not image.exists()
        if fresh:
            # Files written before the image existed must fit in it: never lose them.
            needed = tree_usage(user_data) * 11 // 10 + 16 * MIB if existing else 0
            spare = take_spare(spares, size) if spares is not None and needed <= size else None
            try:
                if spare is None:
                    raise FileNotFoundError
                os.replace(spare, image)  # atomic: of two processes taking one spare, one wins
            except OSError:
                _make_image(image, max(size, needed))
        elif _fs_bytes(image) < size or image.stat().st_size < size:
            with open(image, "r+b") as fh:
                fh.truncate(max(size, image.stat().st_size))
            subprocess.run(["e2fsck", "-fp", str(image)], capture_output=True, timeout=300)
            _run("resize2fs", str(image))
        if existing:
            _move_in(user_data, image)
        _mount(image, user_data, check=not fresh)
        lost = user_data / "lost+found"
        with contextlib.suppress(OSError):
            lost.rmdir()  # e2fsck makes it again when it needs it
        for name in USER_DATA_SUBDIRS:
            (user_data / name).mkdir(exist_ok=True)


def unmount(user_data: Path) -> None:
    """Take the image off the folder (lazily, if a process still uses it). Keeps the image."""
    user_data = Path(user_data)
    if mounted_device(user_data) is None:
        return
    done = subprocess.run(["umount", str(user_data)], capture_output=True, timeout=60)
    if done.returncode != 0:
        subprocess.run(["umount", "-l", str(user_data)], capture_output=True, timeout=60)


def remove(user_data: Path) -> None:
    """Unmount and delete the image (the thread is being deleted)."""
    unmount(user_data)
    image_path(user_data).unlink(missing_ok=True)


def usage(user_data: Path) -> tuple[int, int] | None:
    """(bytes used, bytes usable) of the mounted image, or None when it is not mounted."""
    if mounted_device(Path(user_data)) is None:
        return None
    info = os.statvfs(user_data)
    total = info.f_blocks * info.f_frsize
    return total - info.f_bavail * info.f_frsize, total


def reconcile(home: Path, size: int) -> list[str]:
    """Clean up after deleted threads and crashes; mount images whose mount went (a reboot).

    Returns what was done, one line each (logged by the caller).
    """
    done: list[str] = []
    users = Path(home) / "users"
    prefix = str(users) + "/"
    table = mounts()
    for point, device in table.items():
        if not point.startswith(prefix) or not point.endswith("/user-data") or not device.startswith("/dev/loop"):
            continue
        backing = _backing_file(device) or ""
        if backing.endswith("(deleted)") or not Path(point).parent.is_dir():
            subprocess.run(["umount", "-l", point], capture_output=True, timeout=60)
            done.append(f"unmounted {point} (its image was deleted)")
    # Loop devices still attached to a deleted image of ours, mounted nowhere any more.
    for entry in Path("/sys/block").glob("loop*"):
        backing = _backing_file(f"/dev/{entry.name}") or ""
        if backing.startswith(prefix) and backing.endswith(f"/{IMAGE_NAME} (deleted)") and f"/dev/{entry.name}" not in table.values():
            subprocess.run(["losetup", "-d", f"/dev/{entry.name}"], capture_output=True, timeout=60)
            done.append(f"detached /dev/{entry.name} ({backing})")
    if users.is_dir():
        mounted = set(mounts())
        for image in users.glob(f"*/threads/*/{IMAGE_NAME}"):
            user_data = image.parent / "user-data"
            if str(user_data) not in mounted:
                try:
                    ensure_mounted(user_data, size)
                    done.append(f"mounted {image}")
                except (DiskError, OSError) as exc:
                    logger.warning("Sandbox: could not mount %s: %s", image, exc)
    return done
