// The composer's Polish button (POST /api/input-polish): the model rewrites the draft into a
// clearer request, in place; "Undo polish" puts back what the user typed. Clicking Polish again
// while it works cancels. Nothing is sent until the user presses Send.
(function () {
  "use strict";

  const boot = JSON.parse(document.getElementById("boot").textContent);
  const input = document.getElementById("input");
  const button = document.getElementById("polish");
  const undo = document.getElementById("polish-undo");
  const status = document.getElementById("polish-status");
  if (!boot.input_polish || !input || !button || !undo || !status || input.disabled) return;
  const label = button.querySelector(".polish-label");
  let pending = null; // the AbortController of the call in flight
  let before = null; // {original, rewritten}: what Undo restores, while the text is still the rewrite

  function say(text, kind) {
    status.textContent = text || "";
    status.className = "polish-status small " + (kind === "error" ? "error-text" : "muted");
    status.hidden = !text;
  }

  function setBusy(busy) {
    input.readOnly = busy;
    input.setAttribute("aria-busy", String(busy));
    button.setAttribute("aria-pressed", String(busy));
    label.textContent = busy ? "Cancel" : "Polish";
    button.title = busy ? "Cancel polishing" : "Rewrite the draft into a clearer request (you can undo it)";
  }

  function refresh() {
    button.hidden = !input.value.trim() && !pending;
    if (before && input.value !== before.rewritten) before = null; // edited since: nothing to undo
    undo.hidden = !before;
  }

  function put(text) {
    input.value = text;
    input.dispatchEvent(new Event("input", { bubbles: true })); // autogrow and the others see it
  }

  async function polish() {
    if (pending) { pending.abort(); return; }
    const text = input.value;
    if (!text.trim()) return;
    pending = new AbortController();
    setBusy(true);
    say("Polishing…");
    try {
      const body = { text, locale: document.documentElement.lang || navigator.language || null };
      const inThread = location.pathname.match(/^\/c\/([^/]+)\/$/); // the chat page's own URL, kept current by app.js
      if (inThread) body.thread_id = decodeURIComponent(inThread[1]);
      const res = await fetch("/api/input-polish", {
        method: "POST", credentials: "same-origin", signal: pending.signal,
        headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": window.DFKit.csrf() },
        body: JSON.stringify(body),
      });
      const data = await res.json().catch(() => ({}));
      if (!res.ok) throw new Error(data.detail || `Polishing failed (${res.status})`);
      if (input.value !== text) { say("The draft changed while polishing; kept yours."); return; }
      if (!data.changed) { say("This draft is already clear."); return; }
      put(data.rewritten_text);
      before = { original: text, rewritten: data.rewritten_text };
      say("");
      input.focus();
    } catch (err) {
      say(err.name === "AbortError" ? "Polishing cancelled." : err.message, err.name === "AbortError" ? "" : "error");
    } finally {
      pending = null;
      setBusy(false);
      refresh();
    }
  }

  button.addEventListener("click", polish);
  undo.addEventListener("click", () => {
    if (!before) return;
    const original = before.original;
    before = null;
    put(original);
    say("");
    refresh();
    input.focus();
  });
  input.addEventListener("input", refresh);
  // A sent message empties the composer without an input event.
  document.getElementById("composer").addEventListener("submit", () => setTimeout(() => { before = null; say(""); refresh(); }));
  refresh();
})();
