/* The agent's browser, live: while a browser tool runs, `browser_frame` custom events (JPEG
 * frames of the page, throttled by the server) fill a small panel; the user watches, the page
 * is not theirs to click. `browser_closed` or the run's end closes it. Each finished step's
 * screenshot (the ToolMessage artifact, a file under outputs/.browser-frames) stays in the
 * tool card, so the transcript keeps the last frame after a reload. */
(function () {
  "use strict";

  const { h } = window.DFKit;
  const viewer = () => window.DFViewer;
  const TOOLS = new Set(["browser_navigate", "browser_snapshot", "browser_click", "browser_type", "browser_get_text",
    "browser_back", "browser_screenshot", "browser_close", "web_capture"]);
  let panel = null;

  function build() {
    const img = h("img", { class: "browser-live-frame", alt: "The agent's browser" });
    const url = h("span", { class: "browser-live-url" });
    const hide = h("button", { type: "button", class: "icon-button browser-live-hide", "aria-label": "Hide the live browser view", text: "✕",
      onclick: () => close() });
    panel = h("aside", { class: "browser-live", role: "region", "aria-label": "The agent's browser, live", hidden: true },
      h("div", { class: "browser-live-bar" },
        h("span", { class: "browser-live-dot", "aria-hidden": "true" }),
        h("span", { class: "browser-live-title", text: "Browser · live" }), url, hide),
      img);
    panel.img = img;
    panel.url = url;
    document.body.append(panel);
  }

  function show(frame) {
    if (!panel) build();
    if (panel.dismissed) return; // hidden by the user for this run
    if (typeof frame.image === "string" && frame.image.startsWith("data:image/jpeg;base64,")) panel.img.src = frame.image;
    panel.url.textContent = frame.url || "";
    panel.url.title = frame.url || "";
    panel.hidden = false;
  }

  function close() {
    if (!panel) return;
    panel.hidden = true;
    panel.dismissed = true;
  }

  function onCustom(data) {
    if (!data || typeof data !== "object") return;
    if (data.type === "browser_frame") show(data);
    else if (data.type === "browser_closed") close();
  }

  function onRunEnd() {
    if (panel) { panel.hidden = true; panel.dismissed = false; panel.img.removeAttribute("src"); }
  }

  function onResult(card, msg, failed) {
    if (!TOOLS.has(card.dataset.tool)) return false;
    const art = msg && msg.artifact;
    if (failed || !art || typeof art !== "object" || art.kind !== "browser") return false;
    card.classList.add("browser-card");
    const extra = card.querySelector(".tool-extra");
    const parts = [];
    if (typeof art.url === "string" && /^https?:\/\//i.test(art.url)) {
      parts.push(h("div", { class: "browser-card-page" }, h("span", { text: art.title || art.url }), h("span", { class: "browser-card-url", text: art.url })));
    }
    if (typeof art.screenshot === "string" && viewer()) {
      const path = art.screenshot;
      parts.push(h("button", { type: "button", class: "browser-shot-open", "aria-label": "Open the screenshot of this step",
        onclick: (ev) => viewer().open(path, { opener: ev.currentTarget }) },
        h("img", { class: "browser-shot", src: viewer().artifactUrl(path), alt: `The page after ${card.dataset.tool}`, loading: "lazy" })));
    }
    if (!parts.length) return false;
    let slot = card.querySelector(".browser-view");
    if (!slot) {
      slot = h("div", { class: "browser-view" });
      extra.before(slot);
    }
    slot.replaceChildren(...parts);
    // the step's picture sits under the collapsed card, as presented files do
    if (!card.shot) { card.shot = h("div", { class: "browser-shot-row" }); card.after(card.shot); }
    const thumb = slot.querySelector(".browser-shot-open");
    if (thumb) card.shot.replaceChildren(thumb.cloneNode(true));
    const copy = card.shot.querySelector("button");
    if (copy) copy.onclick = (ev) => viewer().open(art.screenshot, { opener: ev.currentTarget });
    return true;
  }

  window.DFBrowserView = { onCustom, onResult, onRunEnd, reset: onRunEnd };
})();
