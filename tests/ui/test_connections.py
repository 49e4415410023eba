"""Settings → Connections in a real browser: a one-time code with its countdown, the
connection it makes once the bot receives it, and revoking it; desktop and a 375 px phone."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHANNELS_YAML = "channels:\n  enabled: true\n  telegram:\n    enabled: true\n    bot_token: '123:abc'\n    bot_username: deer_test_bot\n"


@pytest.fixture
def channels_live(live):
    original = live.config_path.read_text()
    live.config_path.write_text(original + CHANNELS_YAML)
    yield live
    live.config_path.write_text(original)
    live.shell("from apps.channels.models import ChannelConnection, ConnectCode\n"
               "ChannelConnection.objects.all().delete(); ConnectCode.objects.all().delete()")


def _bot_receives(live, code: str, sender: str) -> None:
    """What the channels worker does when the code arrives in Telegram."""
    out = live.shell("from apps.channels.connections import connect_code_consume\n"
                     f"print(bool(connect_code_consume(provider='telegram', code_text={code!r}, external_id={sender!r}, "
                     "display_name='Tess Tester')))")
    assert out == "True"


def _connect_and_revoke(page, live, sender: str, doc_shot, shot_name: str):
    page.goto("/settings/connections")
    expect(page.locator("#conn-empty")).to_be_visible()
    telegram = page.locator('li[data-provider="telegram"]')
    expect(telegram).to_contain_text("Telegram")
    telegram.get_by_role("button", name="Get a code").click()
    code_box = page.locator("#code-box")
    expect(code_box).to_be_visible()
    code = page.locator("#code-value").inner_text()
    assert re.fullmatch(r"[A-Z2-9]{8}", code)
    expect(page.locator("#code-instruction")).to_contain_text(f"/connect {code}")
    expect(page.get_by_role("link", name="Open Telegram")).to_have_attribute("href", f"https://t.me/deer_test_bot?start={code}")
    expect(page.locator("#code-expiry")).to_contain_text(re.compile(r"Expires in (9|10):\d\d"))
    doc_shot(page, f"{shot_name}-code")

    _bot_receives(live, code, sender)
    row = page.locator("#conn-rows tr")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("Tess Tester")
    expect(page.locator("#code-expiry")).to_contain_text("Connected: Tess Tester")
    doc_shot(page, shot_name)

    page.once("dialog", lambda dialog: dialog.accept())
    row.get_by_role("button", name="Revoke").click()
    expect(page.locator("#conn-rows tr")).to_have_count(0)
    expect(page.locator("#conn-empty")).to_be_visible()


def test_connections_at_desktop_width(page, channels_live, doc_shot):
    _connect_and_revoke(page, channels_live, "9001", doc_shot, "connections-desktop")
    assert not page.js_errors


def test_connections_on_a_phone(phone, channels_live, doc_shot):
    _connect_and_revoke(phone, channels_live, "9002", doc_shot, "connections-phone")
    assert phone.evaluate("document.documentElement.scrollWidth") <= 375
    assert not phone.js_errors


def test_a_provider_that_is_off_says_why_and_offers_no_code(page, live):
    original = live.config_path.read_text()
    live.config_path.write_text(original + "channels:\n  enabled: true\n  telegram:\n    enabled: true\n")
    try:
        page.goto("/settings/connections")
        telegram = page.locator('li[data-provider="telegram"]')
        expect(telegram).to_contain_text("missing bot_token in channels.telegram")
        expect(telegram.get_by_role("button", name="Get a code")).to_be_disabled()
    finally:
        live.config_path.write_text(original)


@pytest.mark.parametrize("width", [1280, 375])
def test_a_scheduled_task_posts_its_result_to_a_connection(browser, request, live, signed_in_state, channels_live, width, doc_shot):
    from tests.ui.conftest import _finish, _open_page

    live.shell("from apps.accounts.models import User; from apps.channels.models import ChannelConnection\n"
               f"ChannelConnection.objects.create(user=User.objects.get(username='tester'), provider='telegram', external_id='77{width}',"
               " display_name='Tess Tester')")
    context, page = _open_page(request, browser, live, storage_state=signed_in_state, viewport={"width": width, "height": 800})
    try:
        page.goto("/schedules/")
        page.get_by_label("Title").fill(f"Brief to Telegram {width}")
        page.get_by_label("Prompt").fill("Summarize the news")
        deliver = page.get_by_label("Also post the result to")
        expect(deliver.locator("option", has_text="Telegram · Tess Tester")).to_have_count(1)
        deliver.select_option(label="Telegram · Tess Tester")
        page.get_by_role("button", name="Create task").click()
        expect(page.locator("#task-rows")).to_contain_text(f"Brief to Telegram {width}")
        out = live.shell("from apps.schedules.models import ScheduledTask\n"
                         f"t = ScheduledTask.objects.get(title='Brief to Telegram {width}'); print(t.deliver_to.display_name); t.delete()")
        assert out == "Tess Tester"
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        assert not page.js_errors
    finally:
        _finish(request, context, page)
