"""Every button and link on every page, in both themes, against WCAG AA: text contrast of at
least 4.5:1 (3:1 for large text) with what is really behind it.

The colour behind an element is found the way the eye finds it: the element's own background,
else its nearest ancestor's, with translucent layers blended over what lies under them. Disabled
controls are exempt (WCAG's inactive components), as are elements hidden from view."""

from __future__ import annotations

import pytest
from tests.ui.conftest import UI_HANG_MS

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PAGES = ["/", "/agents/", "/skills/", "/memory/", "/schedules/", "/approvals/", "/usage/", "/console/", "/observability/",
         "/settings/", "/settings/mcp", "/settings/connections", "/accounts/tokens/", "/accounts/email/", "/accounts/password/change/"]
ANONYMOUS_PAGES = ["/accounts/login/", "/accounts/signup/"]

AUDIT = r"""() => {
  const parse = (c) => { const m = c.match(/rgba?\(([^)]+)\)/); if (!m) return [0, 0, 0, 0];
    const p = m[1].split(/[ ,\/]+/).filter(Boolean).map(Number); return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1]; };
  const over = (top, under) => { const a = top[3]; return [0, 1, 2].map(i => top[i] * a + under[i] * (1 - a)).concat([1]); };
  const lum = (c) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); };
  const backdrop = (el) => {
    const layers = [];
    for (let n = el; n && n.nodeType === 1; n = n.parentElement) {
      const bg = parse(getComputedStyle(n).backgroundColor);
      if (bg[3] > 0) { layers.push(bg); if (bg[3] >= 1) break; }
    }
    let colour = [255, 255, 255, 1];
    if (!layers.length || layers[layers.length - 1][3] < 1) colour = parse(getComputedStyle(document.documentElement).backgroundColor)[3] ? parse(getComputedStyle(document.documentElement).backgroundColor) : colour;
    for (let i = layers.length - 1; i >= 0; i--) colour = over(layers[i], colour);
    return colour;
  };
  const out = [];
  const seen = new Set();
  for (const el of document.querySelectorAll("a[href], button, [role=button], input[type=submit], input[type=button], summary, select")) {
    if (el.disabled || el.getAttribute("aria-disabled") === "true" || el.closest("[hidden], [inert]")) continue;
    const box = el.getBoundingClientRect();
    const style = getComputedStyle(el);
    if (box.width < 1 || box.height < 1 || style.visibility === "hidden" || style.display === "none") continue;
    const text = (el.innerText || el.value || "").trim();
    if (!text) continue; // an icon-only control: its label is for screen readers, its glyph is not text
    let opacity = 1;
    for (let n = el; n && n.nodeType === 1; n = n.parentElement) opacity *= Number(getComputedStyle(n).opacity);
    const bg = backdrop(el);
    const fg = over(parse(style.color).map((v, i) => i === 3 ? v * opacity : v), bg);
    const [a, b] = [lum(fg), lum(bg)];
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    const size = parseFloat(style.fontSize), bold = Number(style.fontWeight) >= 700;
    const need = size >= 24 || (bold && size >= 18.66) ? 3 : 4.5;
    const name = `${el.tagName.toLowerCase()}${el.id ? "#" + el.id : ""}${el.className && typeof el.className === "string" ? "." + el.className.trim().split(/\s+/).join(".") : ""}`;
    const key = name + text;
    if (ratio < need && !seen.has(key)) { seen.add(key); out.push(`${name} "${text.slice(0, 30)}" ${ratio.toFixed(2)} < ${need}`); }
  }
  return out;
}"""


def _audit(browser, live, state, paths, scheme):
    context = browser.new_context(base_url=live.url, storage_state=state, color_scheme=scheme, viewport={"width": 1280, "height": 800})
    context.set_default_timeout(UI_HANG_MS)
    failures = []
    try:
        page = context.new_page()
        for path in paths:
            page.goto(path)
            page.wait_for_load_state("networkidle")
            assert page.evaluate("document.documentElement.dataset.theme || 'light'") == scheme or path.startswith("/accounts/"), path
            failures += [f"{path} [{scheme}]: {line}" for line in page.evaluate(AUDIT)]
    finally:
        context.close()
    return failures


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_every_button_and_link_meets_wcag_aa(scheme, browser, live, signed_in_state):
    failures = _audit(browser, live, signed_in_state, PAGES, scheme) + _audit(browser, live, None, ANONYMOUS_PAGES, scheme)
    assert not failures, "\n".join(failures)


# The controls that only appear in some states: the command palette open (its options and
# keys), the sidebar's tag filter with one tag pressed and tagged chats, the header's Tags button.
AUDIT_WITH_OPTIONS = AUDIT.replace('summary, select")', 'summary, select, [role=option], kbd, .tag-chip")')


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_palette_and_the_tag_controls_meet_wcag_aa(scheme, browser, live, signed_in_state):
    context = browser.new_context(base_url=live.url, storage_state=signed_in_state, color_scheme=scheme, viewport={"width": 1280, "height": 800})
    context.set_default_timeout(UI_HANG_MS)
    try:
        page = context.new_page()
        live.shell("from apps.accounts.models import User\nfrom apps.threads.models import Thread\nfrom apps.runs.models import Run\n"
                   "u = User.objects.get(username='tester')\n"
                   "t, made = Thread.objects.get_or_create(id='contrast-tagged', owner=u, defaults={'title': 'Tagged for contrast'})\n"
                   "made and Run.objects.create(thread=t, owner=u, status='success')\n")
        page.goto("/c/contrast-tagged/")
        page.wait_for_function("document.body.dataset.ready === '1'")
        page.evaluate("window.DFKit.api('PUT', '/threads/contrast-tagged/tags', {tags: ['contrast']})")
        page.reload()
        page.wait_for_function("document.body.dataset.ready === '1'")
        page.get_by_role("group", name="Filter chats by tag").get_by_role("button").first.click()
        page.locator(".thread-item .tag-chip").first.wait_for()
        failures = [f"sidebar [{scheme}]: {line}" for line in page.evaluate(AUDIT_WITH_OPTIONS)]
        page.keyboard.press("Control+k")
        page.get_by_role("dialog", name="Command palette").wait_for()
        page.locator("#palette-list [role=option]").first.wait_for()
        failures += [f"palette [{scheme}]: {line}" for line in page.evaluate(AUDIT_WITH_OPTIONS)]
        page.keyboard.press("Escape")
        page.evaluate("localStorage.clear()")  # the filter would otherwise follow the next tests
    finally:
        context.close()
    assert not failures, "\n".join(failures)
