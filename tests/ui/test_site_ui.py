"""The site-wide UI kit (static/site/ui.js) in a real browser: the styled confirm dialog
(keyboard: focus trapped, Esc cancels, Enter confirms), the icon set and the theme applied
before first paint."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser]

OPEN_DIALOG = """(opts) => { window.__answer = undefined;
  window.dfUI.confirm(opts).then((a) => { window.__answer = a; }); }"""


def answer(page):
    page.wait_for_function("window.__answer !== undefined")
    return page.evaluate("window.__answer")


def test_confirm_dialog_is_keyboard_operable_and_traps_focus(page, doc_shot):
    page.goto("/schedules/")
    page.evaluate(OPEN_DIALOG, {"title": "Delete “Weekly report”?", "message": "Its run history goes too.", "confirmLabel": "Delete", "danger": True})
    dialog = page.get_by_role("alertdialog", name="Delete “Weekly report”?")
    expect(dialog).to_be_visible()
    expect(dialog).to_have_accessible_description("Its run history goes too.")
    confirm = dialog.get_by_role("button", name="Delete")
    cancel = dialog.get_by_role("button", name="Cancel")
    expect(confirm).to_be_focused()
    doc_shot(page, "dialog-confirm")
    # Tab cycles between the two buttons and never leaves the dialog.
    page.keyboard.press("Tab")
    expect(confirm).not_to_be_focused()
    for _ in range(3):
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.closest('dialog') !== null")
    page.keyboard.press("Shift+Tab")
    assert page.evaluate("document.activeElement.closest('dialog') !== null")
    page.keyboard.press("Escape")
    assert answer(page) is False
    expect(dialog).to_have_count(0)

    page.evaluate(OPEN_DIALOG, {"title": "Revoke token?", "confirmLabel": "Revoke"})
    expect(page.get_by_role("dialog", name="Revoke token?")).to_be_visible()
    page.keyboard.press("Enter")
    assert answer(page) is True

    # Enter on a focused Cancel button cancels: it does what the focused button says.
    page.evaluate(OPEN_DIALOG, {"title": "Leave?"})
    page.get_by_role("dialog", name="Leave?").get_by_role("button", name="Cancel").focus()
    page.keyboard.press("Enter")
    assert answer(page) is False
    assert page.js_errors == []


def test_icons_render_from_the_vendored_set(page):
    page.goto("/schedules/")
    page.wait_for_function("window.dfUI")
    shape = page.evaluate("""() => { const s = dfUI.icon('pin');
      document.body.append(s); const r = s.getBoundingClientRect();
      return { tag: s.tagName, children: s.children.length, hidden: s.getAttribute('aria-hidden'), w: r.width }; }""")
    assert shape["tag"] == "svg" and shape["children"] >= 1 and shape["hidden"] == "true" and shape["w"] > 0
    labelled = page.evaluate("dfUI.icon('search', {label: 'Search'}).getAttribute('aria-label')")
    assert labelled == "Search"
    err = page.evaluate("() => { try { dfUI.icon('no-such-icon'); return null } catch (e) { return e.message } }")
    assert "no-such-icon" in err


def test_theme_follows_the_system_and_a_stored_choice_is_applied_before_first_paint(browser, live, signed_in_state):
    context = browser.new_context(base_url=live.url, storage_state=signed_in_state, color_scheme="dark")
    try:
        page = context.new_page()
        # Record the theme at the first moment a script can see the body: no flash of light.
        page.add_init_script("""document.addEventListener('readystatechange', () => {
          if (!window.__firstTheme) window.__firstTheme = document.documentElement.dataset.theme; }, {once: true});""")
        page.goto("/schedules/")
        assert page.evaluate("window.__firstTheme") == "dark"
        bg = page.evaluate("getComputedStyle(document.body).backgroundColor")
        assert bg == "rgb(17, 19, 23)"
        page.evaluate("dfUI.theme.set('light')")
        page.reload()
        assert page.evaluate("window.__firstTheme") == "light"
        assert page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(247, 248, 250)"
    finally:
        context.close()
