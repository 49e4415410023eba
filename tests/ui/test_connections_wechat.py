"""Settings → Connections with WeChat waiting for its QR login: an administrator sees the code
to scan (and the link it encodes) until the worker reports the bot logged in; 1280 and 375 px,
light and dark."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect
from tests.ui.conftest import UI_HANG_MS

pytestmark = [pytest.mark.browser, pytest.mark.slow]

WECHAT_YAML = """channels:
  enabled: true
  wechat:
    enabled: true
    qrcode_login_enabled: true
"""
LINK = "https://liteapp.weixin.qq.com/q/7GiQu1?qrcode=ui-test&bot_type=3"


@pytest.fixture
def wechat_live(live):
    original = live.config_path.read_text()
    live.config_path.write_text(original + WECHAT_YAML)
    yield live
    live.config_path.write_text(original)
    live.shell("from apps.channels.models import ChannelStatus\nChannelStatus.objects.filter(provider='wechat').delete()")


def _waiting(live) -> None:
    """What the channels worker reports while iLink waits for the scan."""
    live.shell("from apps.channels.status import status_set\n"
               f"status_set('wechat', state='login', detail='Scan the QR code with WeChat to log the bot in', login_qr={LINK!r})")


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [1280, 375])
def test_the_wechat_login_qr_is_shown_to_admins_until_scanned(width, scheme, browser, wechat_live, signed_in_state, doc_shot):
    _waiting(wechat_live)
    context = browser.new_context(base_url=wechat_live.url, storage_state=signed_in_state, color_scheme=scheme,
                                  viewport={"width": width, "height": 800})
    context.set_default_timeout(UI_HANG_MS)
    errors: list[str] = []
    try:
        page = context.new_page()
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto("/settings/connections")
        item = page.locator('li[data-provider="wechat"]')
        expect(item).to_contain_text("waiting for login")
        qr = item.get_by_role("img", name="WeChat login QR code")
        expect(qr).to_be_visible()
        assert qr.evaluate("img => img.naturalWidth > 0 && img.src.startsWith('data:image/svg+xml')")
        expect(item.get_by_role("link", name="open the login link")).to_have_attribute("href", LINK)
        if width == 375:
            assert page.evaluate("document.documentElement.scrollWidth") <= 375
        doc_shot(page, f"connections-wechat-login-{'desktop' if width == 1280 else 'phone'}-{scheme}")
        # The operator scans it: the worker reports the bot online and the code goes away.
        wechat_live.shell("from apps.channels.status import status_set\nstatus_set('wechat', state='connected', bot_name='bot@im.bot')")
        expect(item).to_contain_text("online")
        expect(qr).to_have_count(0)
    finally:
        context.close()
    assert not errors
