"""Settings → Connections for Slack and GitHub in a real browser: the code comes with the
instruction each platform needs (Slack's client eats messages that start with "/", so Slack
connects through the /deerflow slash command; GitHub by a comment mentioning the bot), and the
connection appears once the bot receives it; desktop and a 375 px phone."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHANNELS_YAML = """channels:
  enabled: true
  slack:
    enabled: true
    bot_token: xoxb-ui-test
    app_token: xapp-ui-test
  github:
    enabled: true
    webhook_secret: ui-test-secret
    mention_login: deerflow-bot
"""


@pytest.fixture
def channels_live(live):
    original = live.config_path.read_text()
    live.config_path.write_text(original + CHANNELS_YAML)
    yield live
    live.config_path.write_text(original)
    live.shell("from apps.channels.models import ChannelConnection, ConnectCode\n"
               "ChannelConnection.objects.all().delete(); ConnectCode.objects.all().delete()")


def _bot_receives(live, provider: str, code: str, sender: str, name: str, workspace: str = "") -> None:
    """What the Slack worker (or the GitHub webhook) does when the code arrives."""
    out = live.shell("from apps.channels.connections import connect_code_consume\n"
                     f"print(bool(connect_code_consume(provider={provider!r}, code_text={code!r}, external_id={sender!r}, "
                     f"workspace={workspace!r}, display_name={name!r})))")
    assert out == "True"


def _code_for(page, provider: str) -> str:
    page.locator(f'li[data-provider="{provider}"]').get_by_role("button", name="Get a code").click()
    expect(page.locator("#code-box")).to_be_visible()
    expect(page.locator("#code-provider")).to_contain_text({"slack": "Slack", "github": "GitHub"}[provider])
    code = page.locator("#code-value").inner_text()
    assert re.fullmatch(r"[A-Z2-9]{8}", code)
    return code


def _connect_slack_and_github(page, live, doc_shot, shot_name: str) -> None:
    page.goto("/settings/connections")
    expect(page.locator('li[data-provider="slack"]')).to_contain_text("Slack")
    code = _code_for(page, "slack")
    expect(page.locator("#code-instruction")).to_contain_text(f"/deerflow connect {code}")
    doc_shot(page, f"{shot_name}-slack-code")
    _bot_receives(live, "slack", code, "U0TESS", "tess", workspace="T0TEAM")
    expect(page.locator("#conn-rows tr")).to_have_count(1)
    expect(page.locator("#conn-rows tr")).to_contain_text("tess")

    code = _code_for(page, "github")
    expect(page.locator("#code-instruction")).to_contain_text(f"@deerflow-bot /connect {code}")
    _bot_receives(live, "github", code, "583231", "octotess")
    expect(page.locator("#conn-rows tr")).to_have_count(2)
    expect(page.locator("#conn-rows")).to_contain_text("octotess")
    doc_shot(page, shot_name)


def test_slack_and_github_connections_at_desktop_width(page, channels_live, doc_shot):
    _connect_slack_and_github(page, channels_live, doc_shot, "connections-slack-github-desktop")
    assert not page.js_errors


def test_slack_and_github_connections_on_a_phone(phone, channels_live, doc_shot):
    _connect_slack_and_github(phone, channels_live, doc_shot, "connections-slack-github-phone")
    assert phone.evaluate("document.documentElement.scrollWidth") <= 375
    assert not phone.js_errors
