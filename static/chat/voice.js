/* Voice on the chat page, with the browser's own speech APIs (nothing leaves for our server):
 *
 * - Dictation: the microphone button beside the paperclip puts what the browser heard into
 *   the message box (Web Speech API SpeechRecognition, webkitSpeechRecognition in Chrome).
 *   The button exists only where the browser has the API; it never sends by itself.
 * - Read aloud: "Read aloud" under each answer speaks its text (speechSynthesis), the text
 *   as rendered — no Markdown symbols, no code-block Copy labels. Pressed again (or another
 *   answer's), it stops. Hidden where the browser cannot speak.
 *
 * The answer's buttons are message_actions.js's row; this file adds its own to each row it
 * finds (a MutationObserver on the transcript), so neither file needs the other. */
(function () {
  "use strict";

  const $ = (id) => document.getElementById(id);
  const Recognition = window.SpeechRecognition || window.webkitSpeechRecognition;
  const synth = window.speechSynthesis;
  const Utterance = window.SpeechSynthesisUtterance;
  const CHUNK = 220; // characters per utterance: Chrome stops long ones part-way

  function note(text, kind) {
    const el = $("composer-note");
    if (!el) return;
    el.textContent = text;
    el.className = "composer-note small " + (kind === "error" ? "error-text" : "muted");
  }

  function lang() { return document.documentElement.lang && navigator.language && navigator.language.startsWith(document.documentElement.lang) ? navigator.language : (navigator.language || "en-US"); }

  // ------------------------------------------------------------------ dictation

  const DICTATION_ERRORS = {
    "not-allowed": "The browser was not allowed to use the microphone.",
    "service-not-allowed": "The browser was not allowed to use the microphone.",
    "no-speech": "No speech was heard.",
    "audio-capture": "No microphone was found.",
    network: "The browser's speech service could not be reached.",
    "language-not-supported": "The browser cannot dictate in this language.",
  };

  function setupDictation() {
    const button = $("voice-input");
    const input = $("input");
    if (!button || !input || typeof Recognition !== "function") return; // stays hidden
    button.hidden = false;
    let rec = null;

    function setListening(on) {
      button.setAttribute("aria-pressed", String(on));
      button.setAttribute("aria-label", on ? "Stop dictation" : "Dictate a message");
      button.title = on ? "Stop dictation" : "Dictate a message";
      button.classList.toggle("listening", on);
    }

    function start() {
      if (input.disabled) return;
      const before = input.value;
      const base = before && !/\s$/.test(before) ? before + " " : before;
      rec = new Recognition();
      rec.lang = lang();
      rec.interimResults = true;
      rec.continuous = false;
      rec.onresult = (ev) => {
        let heard = "";
        for (let i = 0; i < ev.results.length; i++) heard += ev.results[i][0].transcript;
        input.value = base + heard.trim();
        input.dispatchEvent(new Event("input", { bubbles: true })); // the box grows to fit
      };
      rec.onerror = (ev) => {
        if (ev.error === "aborted") return;
        note(DICTATION_ERRORS[ev.error] || `Dictation stopped (${ev.error}).`, "error");
      };
      rec.onend = () => {
        rec = null;
        setListening(false);
        note("");
        input.focus();
      };
      try {
        rec.start();
      } catch (e) {
        rec = null;
        note("Dictation could not start: " + e.message, "error");
        return;
      }
      setListening(true);
      note("Listening… speak, then pause to finish.");
    }

    button.addEventListener("click", () => { if (rec) rec.stop(); else start(); });
  }

  // ------------------------------------------------------------------ read aloud

  /* The answer as a listener should hear it: the rendered text (so no Markdown symbols),
   * without buttons (a code block's Copy), one block per line. */
  function speakable(body) {
    const clone = body.cloneNode(true);
    clone.querySelectorAll("button, svg, script, style, .visually-hidden").forEach((n) => n.remove());
    // innerText needs layout: measure the clone off screen, where it keeps the answer's width.
    const holder = document.createElement("div");
    holder.className = "speak-measure";
    holder.setAttribute("aria-hidden", "true");
    holder.append(clone);
    document.body.append(holder);
    const text = clone.innerText;
    holder.remove();
    return text.replace(/[ \t]+\n/g, "\n").replace(/\n{2,}/g, "\n").trim();
  }

  /* Short pieces at sentence ends (a long utterance is cut off by some browsers). */
  function chunks(text) {
    const out = [];
    for (const para of text.split(/\n+/)) {
      let rest = para.trim();
      while (rest.length > CHUNK) {
        const cut = Math.max(rest.lastIndexOf(". ", CHUNK), rest.lastIndexOf("? ", CHUNK), rest.lastIndexOf("! ", CHUNK), rest.lastIndexOf(", ", CHUNK));
        const at = cut > CHUNK / 3 ? cut + 1 : (rest.lastIndexOf(" ", CHUNK) > 0 ? rest.lastIndexOf(" ", CHUNK) : CHUNK);
        out.push(rest.slice(0, at).trim());
        rest = rest.slice(at).trim();
      }
      if (rest) out.push(rest);
    }
    return out;
  }

  let speaking = null; // the button of the answer being read

  function reset(button) {
    if (!button) return;
    button.textContent = "Read aloud";
    button.setAttribute("aria-pressed", "false");
    button.setAttribute("aria-label", "Read aloud");
    if (speaking === button) speaking = null;
  }

  function stop() {
    const was = speaking;
    speaking = null;
    synth.cancel();
    reset(was);
  }

  function read(button, body) {
    if (speaking === button) { stop(); return; }
    stop();
    const pieces = chunks(speakable(body));
    if (!pieces.length) return;
    speaking = button;
    button.textContent = "Stop reading";
    button.setAttribute("aria-pressed", "true");
    button.setAttribute("aria-label", "Stop reading");
    pieces.forEach((piece, i) => {
      const u = new Utterance(piece);
      u.lang = lang();
      if (i === pieces.length - 1) u.onend = () => { if (speaking === button) reset(button); };
      u.onerror = () => { if (speaking === button) reset(button); };
      synth.speak(u);
    });
  }

  function addReadButtons(root) {
    for (const row of root.querySelectorAll(".msg.assistant > .msg-actions")) {
      if (row.querySelector('[data-action="read-aloud"]')) continue;
      const message = row.closest(".msg");
      const body = message.querySelector(":scope > .md");
      if (!body) continue;
      const button = document.createElement("button");
      button.type = "button";
      button.className = "msg-action";
      button.dataset.action = "read-aloud";
      button.setAttribute("aria-pressed", "false");
      button.addEventListener("click", () => read(button, body));
      reset(button);
      row.append(button);
    }
  }

  function setupReadAloud() {
    const messages = $("messages");
    if (!messages || !synth || typeof Utterance !== "function") return;
    addReadButtons(messages);
    new MutationObserver(() => addReadButtons(messages)).observe(messages, { childList: true, subtree: true });
    // Leaving the page (or a reload) ends what is being read.
    window.addEventListener("pagehide", () => synth.cancel());
  }

  window.DFVoice = { speakable, chunks };

  function init() { setupDictation(); setupReadAloud(); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init); else init();
})();
