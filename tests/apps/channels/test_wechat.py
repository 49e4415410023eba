"""WeChat (iLink) against a fake iLink server on loopback: the QR login an operator scans from
the Connections page, long polling with a resumable cursor, connect codes, answers by
context token, encrypted pictures and files both ways, and an expired token."""

from __future__ import annotations

import os
import secrets

import pytest
from channels.db import database_sync_to_async

from apps.channels.adapters.wechat import FILE, IMAGE, WeChatAdapter, client_version, decrypt, encrypt, media_key
from apps.channels.connections import connect_code_issue
from apps.channels.models import ChannelStatus
from apps.channels.registry import ADAPTER_MODULES, get_adapter
from apps.channels.status import DatabaseHooks
from apps.runs.models import Run
from harness.testing import call, tool_reply
from tests.apps.channels.wechat_fake import FakeILink
from tests.support.channels import RunningAdapter

pytestmark = [pytest.mark.django_db(transaction=True)]

ANN = "wx_ann@im.wechat"


@pytest.fixture
async def ilink():
    server = await FakeILink().start()
    yield server
    await server.stop()


class Bot(RunningAdapter):
    """The adapter and the manager as the worker wires them, against the fake server."""

    def __init__(self, fake: FakeILink, tmp_path, **overrides) -> None:
        super().__init__(WeChatAdapter, fake.settings(state_dir=str(tmp_path / "wechat"), **overrides), DatabaseHooks("wechat"))


async def _connect(fake: FakeILink, user, who: str = ANN) -> None:
    issued = await database_sync_to_async(connect_code_issue)(user=user, provider="wechat", ttl_seconds=600)
    fake.user_sends(f"/connect {issued.code}", user=who)
    await fake.wait_for(lambda: any(t.startswith("Connected to DeerFlow") for t in fake.texts(who)))


def _status() -> ChannelStatus | None:
    return ChannelStatus.objects.filter(provider="wechat").first()


async def _until_state(state: str) -> ChannelStatus:
    """The worker's report, once it says ``state`` (a bound on a hang, not a timing assert)."""
    import asyncio
    import time

    deadline = time.monotonic() + 30
    while (status := await database_sync_to_async(_status)()) is None or status.state != state:
        assert time.monotonic() < deadline, f"wechat status never became {state!r}: {status and status.state}"
        await asyncio.sleep(0.1)
    return status


def test_registered_and_settings():
    assert ADAPTER_MODULES["wechat"] == "apps.channels.adapters.wechat" and get_adapter("wechat") is WeChatAdapter
    assert WeChatAdapter.missing_settings({}) == ["bot_token"]
    assert WeChatAdapter.missing_settings({"qrcode_login_enabled": True}) == []
    assert client_version("1.0") == str(1 << 16) and client_version("2.3.4") == str((2 << 16) | (3 << 8) | 4)
    key = secrets.token_bytes(16)
    assert decrypt(encrypt(b"x" * 33, key), key) == b"x" * 33
    assert media_key({"aeskey": key.hex()}) == key
    assert media_key({"media": {"aes_key": __import__("base64").b64encode(key).decode()}}) == key


async def test_a_dm_is_answered_through_the_context_token(ilink, tmp_path, scripted_agent, user):
    scripted_agent("Hello from DeerFlow.")
    async with Bot(ilink, tmp_path) as bot:
        await _connect(ilink, user)
        ilink.user_sends("hi there")
        await ilink.wait_for(lambda: "Hello from DeerFlow." in ilink.texts())
        await bot.manager.idle()
    [run] = await database_sync_to_async(lambda: list(Run.objects.all()))()
    assert run.owner_id == user.pk and run.kwargs["input"]["messages"][0]["content"] == "hi there"
    answer = next(m for m in ilink.sent if m["item_list"][0]["text_item"]["text"] == "Hello from DeerFlow.")
    assert answer["message_type"] == 2 and answer["message_state"] == 2 and answer["context_token"] == ilink.context[ANN]
    poll = ilink.calls("POST", "/ilink/bot/getupdates")[0]
    assert poll.headers["AuthorizationType"] == "ilink_bot_token" and poll.headers["iLink-App-ClientVersion"] == "65536"
    assert poll.json()["base_info"] == {"channel_version": "1.0"} and poll.headers["X-WECHAT-UIN"]
    status = await database_sync_to_async(_status)()
    assert status.state == "connected" and status.cursor["get_updates_buf"].startswith("buf-")


async def test_a_stranger_is_told_to_connect_and_a_restart_resumes_from_the_cursor(ilink, tmp_path, scripted_agent):
    scripted_agent("never")
    async with Bot(ilink, tmp_path):
        ilink.user_sends("who are you?", user="wx_eve@im.wechat")
        await ilink.wait_for(lambda: ilink.texts("wx_eve@im.wechat"))
        # The batch is done once the next poll asks from the new buffer.
        await ilink.wait_for(lambda: any(c.json()["get_updates_buf"] for c in ilink.calls("POST", "/ilink/bot/getupdates")))
    assert ilink.texts("wx_eve@im.wechat")[0].startswith("Connect your account first")
    saved = (await database_sync_to_async(_status)()).cursor["get_updates_buf"]
    async with Bot(ilink, tmp_path):
        await ilink.wait_for(lambda: any(c.json()["get_updates_buf"] == saved for c in ilink.calls("POST", "/ilink/bot/getupdates")))
    assert len(ilink.texts("wx_eve@im.wechat")) == 1, "the old message was not answered twice"
    assert await database_sync_to_async(Run.objects.count)() == 0


async def test_qr_login_shows_the_code_to_admins_and_keeps_the_token(ilink, tmp_path, scripted_agent, user, client):
    scripted_agent("logged in and answering")
    async with Bot(ilink, tmp_path, bot_token="", qrcode_login_enabled=True):
        status = await _until_state("login")
        assert ilink.qrcodes == 1 and status.login_qr == "https://liteapp.weixin.qq.com/q/qr-1?bot_type=3"
        ilink.scan()
        await ilink.wait_for(lambda: ilink.calls("POST", "/ilink/bot/getupdates"))
        await _connect(ilink, user)
    status = await database_sync_to_async(_status)()
    assert status.state == "connected" and status.login_qr == ""
    saved = tmp_path / "wechat" / "wechat-auth.json"
    assert oct(os.stat(saved).st_mode & 0o777) == "0o600" and "ilink-token-1" in saved.read_text()
    # A restarted worker logs in with the saved token: no new QR code.
    async with Bot(ilink, tmp_path, bot_token="", qrcode_login_enabled=True):
        ilink.user_sends("still there?")
        await ilink.wait_for(lambda: "logged in and answering" in ilink.texts())
    assert ilink.qrcodes == 1


async def test_the_login_qr_reaches_admins_only(ilink, tmp_path, channels_config, user, other_user, client):
    channels_config(wechat={"qrcode_login_enabled": True})
    await database_sync_to_async(ChannelStatus.objects.create)(provider="wechat", state="login", login_qr="https://liteapp.weixin.qq.com/q/x")
    other_user.is_staff = True
    await database_sync_to_async(other_user.save)()
    await database_sync_to_async(client.force_login)(other_user)
    body = (await database_sync_to_async(client.get)("/api/channels/providers")).json()
    wechat = next(p for p in body["providers"] if p["provider"] == "wechat")
    assert wechat["connection_status"] == "login" and wechat["login_qr"]["link"] == "https://liteapp.weixin.qq.com/q/x"
    assert wechat["login_qr"]["image"].startswith("data:image/svg+xml")
    await database_sync_to_async(client.force_login)(user)
    body = (await database_sync_to_async(client.get)("/api/channels/providers")).json()
    assert "login_qr" not in next(p for p in body["providers"] if p["provider"] == "wechat")


async def test_an_expired_token_starts_a_new_qr_login(ilink, tmp_path, scripted_agent):
    ilink.token = "the-new-token"  # the configured one no longer works
    async with Bot(ilink, tmp_path, bot_token="old-token", qrcode_login_enabled=True):
        await ilink.wait_for(lambda: ilink.qrcodes == 1)
        ilink.scan()
        await ilink.wait_for(lambda: any(c.headers.get("Authorization") == "Bearer the-new-token"
                                         for c in ilink.calls("POST", "/ilink/bot/getupdates")))
    status = await database_sync_to_async(_status)()
    assert "expired" in status.last_error


async def test_pictures_and_files_in_are_decrypted_into_uploads(ilink, tmp_path, scripted_agent, user):
    from apps.threads.uploads import uploads_dir

    scripted_agent("Got them.")
    key = secrets.token_bytes(16)
    async with Bot(ilink, tmp_path) as bot:
        await _connect(ilink, user)
        ilink.user_sends("look", items=[ilink.media_item(IMAGE, b"\x89PNG picture", key),
                                        ilink.media_item(FILE, b"a,b\n1,2\n", key, name="table.csv"),
                                        ilink.media_item(FILE, b"MZ", key, name="tool.exe")])
        await ilink.wait_for(lambda: "Got them." in ilink.texts())
        await bot.manager.idle()
    [run] = await database_sync_to_async(lambda: list(Run.objects.select_related("thread")))()
    directory = await database_sync_to_async(uploads_dir)(run.thread)
    assert (directory / "table.csv").read_bytes() == b"a,b\n1,2\n"
    assert any(p.name.startswith("wechat-image-") and p.read_bytes() == b"\x89PNG picture" for p in directory.iterdir())
    assert not (directory / "tool.exe").exists(), "not an allowed file type"
    assert "Uploaded: wechat-image-" in run.kwargs["input"]["messages"][0]["content"]


async def test_presented_files_go_out_encrypted_through_the_cdn(ilink, tmp_path, scripted_lead, user):
    scripted_lead(
        tool_reply(call("write_file", description="write", path="/mnt/user-data/outputs/report.md", content="# Report\n")),
        tool_reply(call("present_files", filepaths=["/mnt/user-data/outputs/report.md"])),
        "Your report is attached.",
    )
    async with Bot(ilink, tmp_path) as bot:
        await _connect(ilink, user)
        ilink.user_sends("write a report")
        await ilink.wait_for(lambda: any(m["item_list"][0]["type"] == FILE for m in ilink.sent))
        await bot.manager.idle()
    [sent] = [m for m in ilink.sent if m["item_list"][0]["type"] == FILE]
    assert ilink.received_file(sent) == ("report.md", b"# Report\n")
    upload = ilink.calls("POST", "/ilink/bot/getuploadurl")[0].json()
    assert upload["media_type"] == 3 and upload["rawsize"] == len(b"# Report\n") and upload["to_user_id"] == ANN
    assert "Your report is attached." in ilink.texts()


def test_the_admin_shows_the_login_qr_code(admin_client):
    row = ChannelStatus.objects.create(provider="wechat", state="login", login_qr="https://liteapp.weixin.qq.com/q/admin")
    page = admin_client.get(f"/admin/integrations/channelstatus/{row.pk}/change/")
    assert page.status_code == 200 and b'alt="login QR code"' in page.content and b"data:image/svg+xml" in page.content
    row.login_qr = ""
    row.save()
    assert b'alt="login QR code"' not in admin_client.get(f"/admin/integrations/channelstatus/{row.pk}/change/").content
