"""Uploads count against the sandbox disk quota: an upload that would not fit is a 413 with a
detail naming the quota, nothing of it is written, and the listing reports the usage the Files
panel shows."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from django.core.files.uploadedfile import SimpleUploadedFile

from harness.config import thread_user_data_dir
from harness.sandbox.quota import forget_measurements

pytestmark = pytest.mark.django_db
MIB = 1024 * 1024


@pytest.fixture
def quota_config(tmp_path, monkeypatch):
    def apply(**sandbox):
        base = yaml.safe_load(Path(os.environ["DEER_FLOW_CONFIG_PATH"]).read_text())
        base.setdefault("sandbox", {}).update(sandbox)
        base["uploads"] = {"max_file_size": 8 * MIB, "max_total_size": 16 * MIB}
        path = tmp_path / "config-quota.yaml"
        path.write_text(yaml.safe_dump(base))
        monkeypatch.setenv("DEER_FLOW_CONFIG_PATH", str(path))

    # A fresh data directory: the user quota sums every thread of the user found on disk.
    monkeypatch.setenv("DEER_FLOW_HOME", str(tmp_path / "home"))
    forget_measurements()
    yield apply
    forget_measurements()


def post(client, tid, name, size):
    return client.post(f"/api/threads/{tid}/uploads", {"files": [SimpleUploadedFile(name, b"x" * size)]},
                       format="multipart")


def test_upload_over_the_thread_quota_is_413_and_writes_nothing(user_client, user, thread_of, quota_config):
    quota_config(thread_quota_mb=1, user_quota_mb=100)
    tid = thread_of()
    assert post(user_client, tid, "first.bin", 600_000).status_code == 200
    response = post(user_client, tid, "second.bin", 600_000)
    assert response.status_code == 413
    assert "disk quota of 1.0 MiB" in response.json()["detail"]
    assert sorted(os.listdir(thread_user_data_dir(user.pk, tid) / "uploads")) == ["first.bin"]


def test_upload_over_the_user_quota_is_413(user_client, user, thread_of, quota_config):
    quota_config(thread_quota_mb=10, user_quota_mb=1)
    first, second = thread_of(), thread_of()
    assert post(user_client, first, "a.bin", 700_000).status_code == 200
    response = post(user_client, second, "b.bin", 700_000)
    assert response.status_code == 413 and "all threads" in response.json()["detail"]


def test_listing_reports_quota_usage(user_client, thread_of, quota_config):
    quota_config(thread_quota_mb=2, user_quota_mb=5)
    tid = thread_of()
    post(user_client, tid, "a.bin", 300_000)
    quota = user_client.get(f"/api/threads/{tid}/uploads/list").json()["quota"]
    assert quota["thread_limit"] == 2 * MIB and quota["user_limit"] == 5 * MIB
    assert 300_000 <= quota["thread_bytes"] <= 400_000
    assert quota["user_bytes"] >= quota["thread_bytes"]


def test_a_file_longer_than_it_said_cannot_pass_the_quota(user, thread_of, quota_config):
    from harness.uploads import files as uploads
    from apps.threads.models import Thread

    quota_config(thread_quota_mb=1, user_quota_mb=100)
    thread = Thread.objects.get(pk=thread_of())

    class Liar:
        size = 10

        def chunks(self, n):
            for _ in range(3):
                yield b"x" * 500_000

    with pytest.raises(uploads.PayloadTooLarge, match="disk quota"):
        uploads.upload_files(thread=thread, files=[uploads.IncomingFile("liar.bin", Liar())])
    assert os.listdir(uploads.uploads_dir(thread)) == []
