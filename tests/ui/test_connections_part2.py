"""Settings → Connections with the part-2 platforms on (Feishu/Lark, DingTalk, WeCom, Discord):
each is listed and connectable, a code for one of them connects the account once its bot
receives the code, and a platform missing a setting says which; desktop and a 375 px phone."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PART2_YAML = """channels:
  enabled: true
  feishu:
    enabled: true
    app_id: cli_ui_test
    app_secret: secret
    domain: lark
  dingtalk:
    enabled: true
    client_id: ding_ui
    client_secret: secret
  wecom:
    enabled: true
    corp_id: ww_ui
    agent_id: "1000002"
    secret: secret
    token: token
  discord:
    enabled: true
    bot_token: discord-ui-token
"""
PROVIDERS = {"feishu": "Feishu / Lark", "dingtalk": "DingTalk", "wecom": "WeCom", "discord": "Discord"}


@pytest.fixture
def part2_live(live):
    original = live.config_path.read_text()
    live.config_path.write_text(original + PART2_YAML)
    yield live
    live.config_path.write_text(original)
    live.shell("from apps.channels.models import ChannelConnection, ConnectCode\n"
               "ChannelConnection.objects.all().delete(); ConnectCode.objects.all().delete()")


def _connect(page, live, provider: str, sender: str, doc_shot, shot_name: str) -> None:
    page.goto("/settings/connections")
    for name, label in PROVIDERS.items():
        expect(page.locator(f'li[data-provider="{name}"]')).to_contain_text(label)
    # WeCom lacks its EncodingAESKey: it says so and offers no code.
    wecom = page.locator('li[data-provider="wecom"]')
    expect(wecom).to_contain_text("missing encoding_aes_key in channels.wecom")
    expect(wecom.get_by_role("button", name="Get a code")).to_be_disabled()
    item = page.locator(f'li[data-provider="{provider}"]')
    item.get_by_role("button", name="Get a code").click()
    expect(page.locator("#code-box")).to_be_visible()
    code = page.locator("#code-value").inner_text()
    assert re.fullmatch(r"[A-Z2-9]{8}", code)
    expect(page.locator("#code-instruction")).to_contain_text(f"{PROVIDERS[provider]} bot in a direct chat: /connect {code}")
    doc_shot(page, f"{shot_name}-code")
    # What the channels worker does when the code arrives on the platform.
    out = live.shell("from apps.channels.connections import connect_code_consume\n"
                     f"print(bool(connect_code_consume(provider={provider!r}, code_text={code!r}, external_id={sender!r}, "
                     "display_name='Lan Tester')))")
    assert out == "True"
    row = page.locator("#conn-rows tr")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("Lan Tester")
    expect(row).to_contain_text(PROVIDERS[provider])
    doc_shot(page, shot_name)


def test_part2_platforms_at_desktop_width(page, part2_live, doc_shot):
    _connect(page, part2_live, "feishu", "ou_ui_1", doc_shot, "connections-feishu-desktop")
    assert not page.js_errors


def test_part2_platforms_on_a_phone(phone, part2_live, doc_shot):
    _connect(phone, part2_live, "discord", "400000000000000099", doc_shot, "connections-discord-phone")
    assert phone.evaluate("document.documentElement.scrollWidth") <= 375
    assert not phone.js_errors
