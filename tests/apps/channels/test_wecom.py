"""WeCom: the callback crypto against WeCom's documented sample vectors, the callback route
(URL check, encrypted messages, refusals) bridged to the adapter, and the send / media APIs
against a fake server on loopback."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from aiohttp import web
from django.test import AsyncClient

from apps.channels.base import ChatRef
from apps.channels.common import PlatformError
from apps.channels.registry import ADAPTER_MODULES, get_adapter
from apps.channels.adapters.wecom import WeComAdapter, split_bytes
from apps.channels.adapters.wecom_crypto import WeComCrypto, WeComCryptoError, signature
from tests.apps.channels.fake_platform import FakePlatform, Inbox

# WeCom's published WXBizMsgCrypt sample: token, EncodingAESKey, CorpID and two callbacks.
TOKEN, AES_KEY, CORP_ID = "QDG6eK", "jWmYm7qr5nMoAUwZRjGtBxmz3KA1tkAj3ykkR6q2B2C", "wx5823bf96d3bd56c7"
URL_CHECK = {"msg_signature": "5c45ff5e21c57e6ad56bac8758b79b1d9ac89fd3", "timestamp": "1409659589", "nonce": "263014780",
             "echostr": "P9nAzCzyDtyTWESHep1vC5X9xho/qYX3Zpb4yKa9SKld1DsH3Iyt3tP3zNdtp+4RPcs8TgAE7OaBO+FZXvnaqQ=="}
SAMPLE_QUERY = {"msg_signature": "477715d11cdb4164915debcba66cb864d751f3e6", "timestamp": "1409659813", "nonce": "1372623149"}
SAMPLE_ENCRYPT = ("RypEvHKD8QQKFhvQ6QleEB4J58tiPdvo+rtK1I9qca6aM/wvqnLSV5zEPeusUiX5L5X/0lWfrf0QADHHhGd3QczcdCUpj911L3vg3W/sYYvuJTs3TU"
                  "UkSUXxaccAS0qhxchrRYt66wiSpGLYL42aM6A8dTT+6k4aSknmPj48kzJs8qLjvd4Xgpue06DOdnLxAUHzM6+kDZ+HMZfJYuR+LtwGc2hgf5gsij"
                  "ff0ekUNXZiqATP7PF5mZxZ3Izoun1s4zG4LUMnvw2r+KqCKIw+3IQH03v+BCA9nMELNqbSf6tiWSrXJB3LAVGUcallcrw8V2t9EL4EhzJWrQUa"
                  "x5wLVMNS0+rUPA3k22Ncx4XXZS9o0MBH27Bo6BpNelZpS+/uh9KsNlY6bHCmJU9p8g7m3fVKn28H3KDYA5Pl/T8Z1ptDAVe0lXdQ2YoyyH2uyPIGHBZ"
                  "ZIs2pDBS8R07+qN+E7Q==")
URL = "/api/channels/wecom/callback"


def envelope(encrypted: str) -> str:
    return f"<xml><ToUserName><![CDATA[{CORP_ID}]]></ToUserName><Encrypt><![CDATA[{encrypted}]]></Encrypt><AgentID><![CDATA[218]]></AgentID></xml>"


def signed(message_xml: str, *, corp_id: str = CORP_ID, token: str = TOKEN) -> tuple[dict, str]:
    encrypted = WeComCrypto(token, AES_KEY, corp_id).encrypt(message_xml)
    query = {"timestamp": str(int(time.time())), "nonce": "42"}
    query["msg_signature"] = signature(token, query["timestamp"], query["nonce"], encrypted)
    return query, envelope(encrypted)


def text_message(content: str, *, sender: str = "zhangsan", msg_id: str = "1001") -> str:
    return (f"<xml><ToUserName><![CDATA[{CORP_ID}]]></ToUserName><FromUserName><![CDATA[{sender}]]></FromUserName>"
            f"<CreateTime>1700000000</CreateTime><MsgType><![CDATA[text]]></MsgType><Content><![CDATA[{content}]]></Content>"
            f"<MsgId>{msg_id}</MsgId><AgentID>1000002</AgentID></xml>")


def test_crypto_matches_wecoms_sample_vectors():
    crypto = WeComCrypto(TOKEN, AES_KEY, CORP_ID)
    assert crypto.open(URL_CHECK["msg_signature"], URL_CHECK["timestamp"], URL_CHECK["nonce"], URL_CHECK["echostr"]) == "1616140317555161061"
    message = crypto.open(SAMPLE_QUERY["msg_signature"], SAMPLE_QUERY["timestamp"], SAMPLE_QUERY["nonce"], SAMPLE_ENCRYPT)
    assert "<FromUserName><![CDATA[mycreate]]></FromUserName>" in message and "<Content><![CDATA[hello]]></Content>" in message
    assert crypto.decrypt(crypto.encrypt("你好, round trip")) == "你好, round trip"
    with pytest.raises(WeComCryptoError, match="signature mismatch"):
        crypto.verify("0" * 40, SAMPLE_QUERY["timestamp"], SAMPLE_QUERY["nonce"], SAMPLE_ENCRYPT)
    with pytest.raises(WeComCryptoError, match="another corp id"):
        WeComCrypto(TOKEN, AES_KEY, "ww_other_corp").decrypt(SAMPLE_ENCRYPT)
    with pytest.raises(WeComCryptoError):
        WeComCrypto(TOKEN, "A" * 43, CORP_ID).decrypt(SAMPLE_ENCRYPT)
    with pytest.raises(WeComCryptoError, match="43 characters"):
        WeComCrypto(TOKEN, "c2hvcnQ", CORP_ID)


def test_split_bytes_keeps_each_piece_under_the_limit():
    text = "段落" * 800 + "\n" + "x" * 3000
    pieces = split_bytes(text)
    assert "".join(pieces) == text
    assert all(len(p.encode()) <= 2048 for p in pieces) and len(pieces) == 4


class FakeWeCom(FakePlatform):
    def __init__(self) -> None:
        super().__init__()
        self.tokens = 0
        self.expire_next = False
        self.route("GET", "/cgi-bin/gettoken", self._token)
        self.route("POST", "/cgi-bin/message/send", self._send)
        self.json_route("POST", "/cgi-bin/media/upload", {"errcode": 0, "errmsg": "ok", "type": "file", "media_id": "media_out_1"})
        self.route("GET", "/cgi-bin/media/get", self._media)

    async def _token(self, request: web.Request) -> web.Response:
        self.tokens += 1
        return web.json_response({"errcode": 0, "errmsg": "ok", "access_token": f"wc-token-{self.tokens}", "expires_in": 7200})

    async def _send(self, request: web.Request) -> web.Response:
        if self.expire_next:
            self.expire_next = False
            return web.json_response({"errcode": 42001, "errmsg": "access_token expired"})
        return web.json_response({"errcode": 0, "errmsg": "ok", "invaliduser": "", "msgid": f"msg_{len(self.requests)}"})

    async def _media(self, request: web.Request) -> web.Response:
        if request.query["media_id"] != "media_in_1":
            return web.json_response({"errcode": 40007, "errmsg": "invalid media_id"})
        return web.Response(body=b"\xff\xd8 a jpeg", content_type="image/jpeg")


@pytest.fixture
async def fake():
    server = await FakeWeCom().start()
    yield server
    await server.stop()


@pytest.fixture
async def wecom(fake, channels_config, channel_layer):
    settings = {"corp_id": CORP_ID, "agent_id": "1000002", "secret": "app-secret", "token": TOKEN, "encoding_aes_key": AES_KEY,
                "api_base": fake.url, "allowed_networks": ["127.0.0.0/8"]}
    channels_config(wecom=settings)
    inbox = Inbox()
    adapter = WeComAdapter(settings, inbox)
    await adapter.start()
    yield adapter, inbox
    await adapter.stop()


async def test_registered_and_settings():
    assert ADAPTER_MODULES["wecom"] == "apps.channels.adapters.wecom"
    assert get_adapter("wecom") is WeComAdapter
    assert WeComAdapter.missing_settings({"corp_id": "c", "agent_id": "1", "secret": "s", "token": "t", "encoding_aes_key": "x"}) == [
        "encoding_aes_key (the 43 characters WeCom shows)"]


async def test_not_configured_is_404(channels_config):
    channels_config()
    response = await AsyncClient().get(URL, URL_CHECK)
    assert response.status_code == 404 and "not configured" in response.json()["detail"]


async def test_url_check_answers_the_decrypted_echostr(wecom):
    client = AsyncClient()
    ok = await client.get(URL, URL_CHECK)
    assert ok.status_code == 200 and ok.content == b"1616140317555161061"
    forged = await client.get(URL, {**URL_CHECK, "msg_signature": "f" * 40})
    assert forged.status_code == 401 and "signature mismatch" in forged.json()["detail"]
    missing = await client.get(URL, {"timestamp": "1"})
    assert missing.status_code == 400 and missing.json()["detail"] == "missing query parameters: msg_signature, nonce, echostr"


async def test_the_documented_sample_message_reaches_the_adapter(wecom):
    _, inbox = wecom
    response = await AsyncClient().post(f"{URL}?{'&'.join(f'{k}={v}' for k, v in SAMPLE_QUERY.items())}",
                                        data=envelope(SAMPLE_ENCRYPT), content_type="text/xml")
    assert response.status_code == 200 and response.content == b""
    message = await inbox.next()
    assert message.text == "hello" and message.sender_id == "mycreate" and message.message_id == "4561255354251345929"
    assert message.is_direct and message.mentioned
    assert message.chat == ChatRef(provider="wecom", workspace=CORP_ID, chat="mycreate")


async def test_a_message_answered_through_the_send_api(fake, wecom):
    adapter, inbox = wecom
    query, body = signed(text_message("what is deer flow?"))
    client = AsyncClient()
    assert (await client.post(f"{URL}?{'&'.join(f'{k}={v}' for k, v in query.items())}", data=body, content_type="text/xml")).status_code == 200
    message = await inbox.next()
    sent = await adapter.send_text(message.chat, "**DeerFlow** is a super agent.")
    call = fake.calls("POST", "/cgi-bin/message/send")[0]
    assert call.query == {"access_token": "wc-token-1"}
    assert call.json() == {"touser": "zhangsan", "msgtype": "markdown", "agentid": 1000002,
                           "markdown": {"content": "**DeerFlow** is a super agent."}}
    assert sent.message_id.startswith("msg_")
    token = fake.calls("GET", "/cgi-bin/gettoken")[0]
    assert token.query == {"corpid": CORP_ID, "corpsecret": "app-secret"}
    # An expired token is replaced once and the send retried.
    fake.expire_next = True
    await adapter.send_text(message.chat, "again")
    assert fake.tokens == 2 and len(fake.calls("POST", "/cgi-bin/message/send")) == 3


async def test_refused_callbacks_deliver_nothing(wecom):
    _, inbox = wecom
    client = AsyncClient()
    query, body = signed(text_message("forged"))
    bad = await client.post(f"{URL}?msg_signature={'0' * 40}&timestamp={query['timestamp']}&nonce=42", data=body, content_type="text/xml")
    assert bad.status_code == 401
    query, body = signed(text_message("other corp"), corp_id="ww_someone_else")
    other = await client.post(f"{URL}?{'&'.join(f'{k}={v}' for k, v in query.items())}", data=body, content_type="text/xml")
    assert other.status_code == 401 and "another corp id" in other.json()["detail"]
    no_envelope = await client.post(f"{URL}?msg_signature=a&timestamp=1&nonce=2", data="not xml", content_type="text/xml")
    assert no_envelope.status_code == 400
    query, body = signed("<xml><unclosed>")
    malformed = await client.post(f"{URL}?{'&'.join(f'{k}={v}' for k, v in query.items())}", data=body, content_type="text/xml")
    assert malformed.status_code == 200  # verified but unreadable: acknowledged, logged, dropped
    query, body = signed(text_message("the real one", msg_id="2002"))
    await client.post(f"{URL}?{'&'.join(f'{k}={v}' for k, v in query.items())}", data=body, content_type="text/xml")
    assert (await inbox.next()).text == "the real one"
    assert [m.text for m in inbox.messages] == ["the real one"]


async def test_files_in_and_out(fake, wecom):
    adapter, inbox = wecom
    image = (f"<xml><ToUserName><![CDATA[{CORP_ID}]]></ToUserName><FromUserName><![CDATA[lisi]]></FromUserName>"
             "<CreateTime>1700000001</CreateTime><MsgType><![CDATA[image]]></MsgType><PicUrl><![CDATA[http://example.invalid/p]]></PicUrl>"
             "<MediaId><![CDATA[media_in_1]]></MediaId><MsgId>3003</MsgId><AgentID>1000002</AgentID></xml>")
    query, body = signed(image)
    await AsyncClient().post(f"{URL}?{'&'.join(f'{k}={v}' for k, v in query.items())}", data=body, content_type="text/xml")
    message = await inbox.next()
    assert message.files[0].name == "image.jpg"
    assert await message.files[0].read() == b"\xff\xd8 a jpeg"
    assert fake.calls("GET", "/cgi-bin/media/get")[0].query["media_id"] == "media_in_1"
    await adapter.send_file(message.chat, "report.pdf", b"%PDF-1.7 report")
    upload = fake.calls("POST", "/cgi-bin/media/upload")[0]
    assert upload.query["type"] == "file"
    assert upload.form()["media"] == ("report.pdf", b"%PDF-1.7 report")
    sent = fake.calls("POST", "/cgi-bin/message/send")[-1].json()
    assert sent["msgtype"] == "file" and sent["file"] == {"media_id": "media_out_1"} and sent["touser"] == "lisi"
    with pytest.raises(PlatformError, match="up to 20 MB"):
        await adapter.send_file(message.chat, "huge.bin", b"x" * (20 * 1024 * 1024 + 1))
    gone = adapter._media("media_missing", "x")
    with pytest.raises(PlatformError, match="errcode 40007"):
        await gone.read()


async def test_a_callback_waits_in_the_spool_for_a_worker_in_another_process(fake, channels_config, channel_layer, tmp_path, monkeypatch):
    """No adapter consumes in this process and the layer is in memory (the embedded stack, with
    run_channels as its own process): the message waits under DEER_FLOW_HOME until a worker takes it."""
    from channels.layers import InMemoryChannelLayer

    from apps.channels.common import spool_dir

    if not isinstance(channel_layer, InMemoryChannelLayer):
        pytest.skip("REDIS_URL is set: the layer itself crosses processes, nothing is spooled")
    monkeypatch.setenv("DEER_FLOW_HOME", str(tmp_path / "home"))
    settings = {"corp_id": CORP_ID, "agent_id": "1", "secret": "s", "token": TOKEN, "encoding_aes_key": AES_KEY,
                "api_base": fake.url, "allowed_networks": ["127.0.0.0/8"]}
    channels_config(wecom=settings)
    query, body = signed(text_message("while the worker was away", msg_id="7007"))
    response = await AsyncClient().post(f"{URL}?{'&'.join(f'{k}={v}' for k, v in query.items())}", data=body, content_type="text/xml")
    assert response.status_code == 200
    assert len(list(spool_dir("wecom").glob("*.json"))) == 1
    inbox = Inbox()
    adapter = WeComAdapter(settings, inbox)
    await adapter.start()
    try:
        message = await inbox.next()
    finally:
        await adapter.stop()
    assert message.text == "while the worker was away" and message.message_id == "7007"
    assert list(spool_dir("wecom").glob("*.json")) == []
