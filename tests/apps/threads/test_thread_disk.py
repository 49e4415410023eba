"""Deleting a thread whose files live on a disk image (the container sandbox's thread disks,
harness/sandbox/disk.py): the image is unmounted and removed with the thread's folder."""

from __future__ import annotations

import pytest

from harness.config import thread_user_data_dir
from harness.sandbox import disk

pytestmark = [pytest.mark.django_db,
              pytest.mark.skipif(disk.unsupported_reason() is not None, reason=f"no thread disks here: {disk.unsupported_reason()}")]


def test_deleting_a_thread_unmounts_and_removes_its_disk(user_client, user, thread_of):
    tid = thread_of()
    user_data = thread_user_data_dir(user.pk, tid)
    disk.ensure_mounted(user_data, 8 * 1024 * 1024)
    try:
        (user_data / "outputs" / "report.md").write_text("# report\n")
        assert user_client.delete(f"/api/threads/{tid}").status_code == 204
        assert disk.mounted_device(user_data) is None
        assert not user_data.parent.exists()
    finally:
        disk.unmount(user_data)
