"""Voice in a real browser, 1280 px light and 375 px dark.

There is no microphone or speech engine here, so the browser's speech APIs are stood in for by
fakes put into the page before it loads (Playwright's add_init_script): a SpeechRecognition that
"hears" what the test says, and a speechSynthesis that records what it is asked to speak. The
page's own code is unchanged. Without the APIs, the controls are not there at all."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect
from tests.ui.conftest import UI_HANG_MS

pytestmark = [pytest.mark.browser, pytest.mark.slow]

FAKE_SPEECH = """
(() => {
  window.__spoken = []; window.__cancels = 0; window.__recognizers = [];
  class FakeRecognition {
    start() { window.__recognizers.push(this); }
    stop() { if (this.onend) this.onend(); }
    abort() { if (this.onend) this.onend(); }
  }
  // What the microphone "hears": interim words, then the final sentence, then the end.
  window.__hear = (interim, final) => {
    const rec = window.__recognizers[window.__recognizers.length - 1];
    rec.onresult({ results: [[{ transcript: interim }]] });
    rec.onresult({ results: [Object.assign([{ transcript: final }], { isFinal: true })] });
    rec.onend();
  };
  window.SpeechRecognition = FakeRecognition;
  window.webkitSpeechRecognition = FakeRecognition;
  const queue = [];
  const synth = {
    speaking: false, pending: false, paused: false,
    speak(u) { window.__spoken.push(u.text); queue.push(u); this.speaking = true; },
    cancel() { window.__cancels++; queue.length = 0; this.speaking = false; },
    pause() {}, resume() {}, getVoices() { return []; },
    addEventListener() {}, removeEventListener() {},
  };
  Object.defineProperty(window, "speechSynthesis", { value: synth, configurable: true });
  window.SpeechSynthesisUtterance = class { constructor(text) { this.text = text; } };
  window.__finishSpeaking = () => { const done = queue.splice(0); synth.speaking = false; done.forEach((u) => u.onend && u.onend()); };
})();
"""

NO_SPEECH = """
(() => {
  for (const name of ["SpeechRecognition", "webkitSpeechRecognition", "SpeechSynthesisUtterance"]) {
    try { delete window[name]; } catch (e) {}
    Object.defineProperty(window, name, { value: undefined, configurable: true });
  }
  Object.defineProperty(window, "speechSynthesis", { value: undefined, configurable: true });
})();
"""

ANSWER = ("**Leek and potato** soup goes with `rye` bread.\n\n"
          "## Why\n\n"
          "- The *rye* is sour\n"
          "- See [the recipe](https://example.com/soup)\n")
SPOKEN = ["Leek and potato soup goes with rye bread.", "Why", "The rye is sour", "See the recipe"]

VIEWS = [({"width": 1280, "height": 800}, "light"), ({"width": 375, "height": 740}, "dark")]


def ask(page, text):
    box = page.get_by_label("Message", exact=True)
    box.fill(text)
    box.press("Enter")
    answer = page.locator("article.msg.assistant").last
    expect(answer).to_contain_text("Leek and potato soup")
    return answer


@pytest.mark.parametrize("viewport,scheme", VIEWS, ids=["desktop-light", "phone-dark"])
def test_dictation_fills_the_composer_and_read_aloud_speaks_the_answer_without_markdown(
        viewport, scheme, browser, live, signed_in_state, script, doc_shot):
    context = browser.new_context(base_url=live.url, storage_state=signed_in_state, color_scheme=scheme, viewport=viewport)
    context.set_default_timeout(UI_HANG_MS)
    context.add_init_script(FAKE_SPEECH)
    suffix = f"-{scheme}" + ("-phone" if viewport["width"] == 375 else "")
    try:
        page = context.new_page()
        page.goto("/")
        page.wait_for_function("document.body.dataset.ready === '1'")
        box = page.get_by_label("Message", exact=True)
        box.fill("Please")
        mic = page.get_by_role("button", name="Dictate a message")
        mic.click()
        stop = page.get_by_role("button", name="Stop dictation")
        expect(stop).to_have_attribute("aria-pressed", "true")
        expect(page.locator("#composer-note")).to_contain_text("Listening")
        doc_shot(page, "voice-listening" + suffix)
        page.evaluate("window.__hear('suggest a soup', 'suggest a soup for rye bread')")
        expect(box).to_have_value("Please suggest a soup for rye bread")  # added to what was typed, not sent
        expect(mic).to_have_attribute("aria-pressed", "false")
        expect(box).to_be_focused()
        assert page.locator("article.msg.user").count() == 0

        script(ANSWER)
        box.press("Enter")
        answer = page.locator("article.msg.assistant").last
        expect(answer).to_contain_text("Leek and potato soup")
        read = answer.get_by_role("button", name="Read aloud")
        read.click()
        stop_reading = answer.get_by_role("button", name="Stop reading")
        expect(stop_reading).to_have_attribute("aria-pressed", "true")
        spoken = page.evaluate("window.__spoken")
        assert spoken == SPOKEN, spoken
        assert not any(mark in " ".join(spoken) for mark in ("*", "#", "`", "[", "](", "- ")), spoken
        doc_shot(page, "voice-read-aloud" + suffix)
        stop_reading.click()  # the stop control
        expect(answer.get_by_role("button", name="Read aloud")).to_have_attribute("aria-pressed", "false")
        assert page.evaluate("window.__cancels") >= 1
        # Read to the end: the button comes back by itself.
        answer.get_by_role("button", name="Read aloud").click()
        page.evaluate("window.__finishSpeaking()")
        expect(answer.get_by_role("button", name="Read aloud")).to_have_attribute("aria-pressed", "false")
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    finally:
        context.close()


@pytest.mark.parametrize("viewport,scheme", VIEWS, ids=["desktop-light", "phone-dark"])
def test_without_speech_apis_neither_control_is_shown(viewport, scheme, browser, live, signed_in_state, script):
    context = browser.new_context(base_url=live.url, storage_state=signed_in_state, color_scheme=scheme, viewport=viewport)
    context.set_default_timeout(UI_HANG_MS)
    context.add_init_script(NO_SPEECH)
    try:
        page = context.new_page()
        page.goto("/")
        page.wait_for_function("document.body.dataset.ready === '1'")
        assert page.evaluate("typeof window.webkitSpeechRecognition === 'undefined' && !window.speechSynthesis")
        expect(page.locator("#voice-input")).to_be_hidden()
        script(ANSWER)
        answer = ask(page, "Soup?")
        expect(answer.get_by_role("button", name="Copy", exact=True)).to_be_visible()  # the row is there...
        expect(answer.locator('[data-action="read-aloud"]')).to_have_count(0)  # ...without Read aloud
    finally:
        context.close()
