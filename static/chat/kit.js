/* Small helpers every chat module shares: element builder, API call, icons, sizes and a
 * confirm dialog. Loaded first; the modules read it as window.DFKit. */
(function () {
  "use strict";

  function h(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = v;
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? "" : v);
    }
    for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) node.append(c instanceof Node ? c : String(c));
    return node;
  }

  // Gives `parent` the children `wanted` (fresh nodes, built by h) while keeping in place every
  // element that is still there: the one with the same key (data-thread, data-group, id), or,
  // without a key, the same tag at the same place, brought to the fresh one's attributes and
  // children. A browser fires no click when the element pressed is replaced before the
  // release, so a list that re-renders under the pointer (a refresh when a run ends) loses
  // the click; a kept element does not. Listeners of the fresh nodes are not carried over:
  // a list rendered this way delegates its clicks to the parent.
  function keyOf(node) {
    return node.nodeType === 1 ? node.getAttribute("data-thread") || node.getAttribute("data-group") || node.id || null : null;
  }

  function morphNode(old, fresh) {
    if (old.nodeType !== 1) {
      if (old.nodeValue !== fresh.nodeValue) old.nodeValue = fresh.nodeValue;
      return;
    }
    for (const a of [...old.attributes]) if (!fresh.hasAttribute(a.name)) old.removeAttribute(a.name);
    for (const a of fresh.attributes) if (old.getAttribute(a.name) !== a.value) old.setAttribute(a.name, a.value);
    morph(old, [...fresh.childNodes]);
  }

  function morph(parent, wanted) {
    const before = [...parent.childNodes];
    const keyed = new Map();
    for (const node of before) { const key = keyOf(node); if (key) keyed.set(key, node); }
    const used = new Set();
    const result = wanted.map((fresh, i) => {
      const key = keyOf(fresh);
      const old = key ? keyed.get(key) : before[i] && !keyOf(before[i]) ? before[i] : null;
      if (!old || used.has(old) || old.nodeType !== fresh.nodeType || old.nodeName !== fresh.nodeName) return fresh;
      used.add(old);
      morphNode(old, fresh);
      return old;
    });
    for (const node of before) if (!used.has(node)) node.remove();
    result.forEach((node, i) => { if (parent.childNodes[i] !== node) parent.insertBefore(node, parent.childNodes[i] || null); });
  }

  // Our own paths, used until (or where) the site's shared set (window.dfUI.icon) has no such name.
  const ICONS = {
    pencil: "M4 20h4L19 9l-4-4L4 16v4zM14 6l4 4",
    trash: "M4 7h16M9 7V4h6v3M6 7l1 13h10l1-13M10 11v6M14 11v6",
    file: "M6 3h8l4 4v14H6zM14 3v4h4",
    download: "M12 4v11M7 10l5 5 5-5M5 20h14",
    external: "M14 4h6v6M20 4l-9 9M18 14v6H4V6h6",
    expand: "M4 9V4h5M20 9V4h-5M4 15v5h5M20 15v5h-5",
    close: "M6 6l12 12M18 6L6 18",
    arrowDown: "M12 5v14M6 13l6 6 6-6",
    stop: "M7 7h10v10H7z",
  };

  // Our names -> the site's shared set (Lucide, static/site/ui.js).
  const SHARED = { pencil: "pencil", trash: "trash", file: "file", download: "download", external: "external-link",
    expand: "maximize-2", close: "x", arrowDown: "arrow-down", stop: "circle-stop" };

  function icon(name) {
    if (window.dfUI && typeof window.dfUI.icon === "function") {
      try {
        const svg = window.dfUI.icon(SHARED[name] || name);
        svg.classList.add("icon"); // the chat's icon sizing
        return svg;
      } catch (e) { /* not in the shared set: ours below */ }
    }
    const ns = "http://www.w3.org/2000/svg";
    const svg = document.createElementNS(ns, "svg");
    svg.setAttribute("viewBox", "0 0 24 24");
    svg.setAttribute("class", "icon");
    svg.setAttribute("aria-hidden", "true");
    const path = document.createElementNS(ns, "path");
    path.setAttribute("d", ICONS[name] || ICONS.file);
    svg.append(path);
    return svg;
  }

  function csrf() {
    const meta = document.querySelector('meta[name="csrf-token"]');
    return meta ? meta.content : "";
  }

  async function api(method, path, body) {
    const opts = { method, headers: { "X-CSRFToken": csrf(), Accept: "application/json" }, credentials: "same-origin" };
    if (body !== undefined) { opts.headers["Content-Type"] = "application/json"; opts.body = JSON.stringify(body); }
    const res = await fetch("/api" + path, opts);
    if (res.status === 204) return null;
    let data = null;
    try { data = await res.json(); } catch (e) { data = null; }
    if (!res.ok) {
      const err = new Error((data && data.detail) || `${method} ${path} failed (${res.status})`);
      err.status = res.status;
      throw err;
    }
    return data;
  }

  // A failure as the user reads it: a plain sentence, and the provider's own words (an exception
  // name, "Error code: 500 …") only behind a Details toggle, for whoever wants to report it.
  const RAW_ERROR = /^\s*([A-Z]\w*(Error|Exception)\b|Error code:)|Traceback|\{['"]error['"]/;
  function errorBox(text, detail, retry) {
    let summary = text, raw = detail || "";
    if (!raw && RAW_ERROR.test(text || "")) { summary = "The model call failed."; raw = text; }
    const box = h("div", { class: "run-error", role: "alert" });
    const words = h("div", { class: "run-error-text" }, h("span", { text: summary || "This turn failed." }));
    if (raw && raw !== summary) {
      words.append(h("details", { class: "error-details" }, h("summary", { text: "Details" }), h("code", { text: shorten(raw, 600) })));
    }
    box.append(words);
    if (retry) box.append(h("button", { type: "button", class: "button secondary", text: "Retry", onclick: retry }));
    return box;
  }

  function shorten(text, n) {
    text = String(text).replace(/\s+/g, " ").trim();
    return text.length > n ? text.slice(0, n - 1) + "…" : text;
  }

  function formatSize(bytes) {
    if (!Number.isFinite(bytes)) return "";
    if (bytes < 1024) return bytes + " B";
    if (bytes < 1024 * 1024) return (bytes / 1024).toFixed(1) + " KB";
    if (bytes < 1024 * 1024 * 1024) return (bytes / 1024 / 1024).toFixed(1) + " MB";
    return (bytes / 1024 / 1024 / 1024).toFixed(1) + " GB";
  }

  function basename(path) { return String(path).split("/").pop(); }

  /* The site's styled dialog when it is there; otherwise a <dialog> of our own, so a
   * destructive action never falls back to the browser's bare confirm(). */
  function confirmDialog(opts) {
    if (window.dfUI && typeof window.dfUI.confirm === "function") return window.dfUI.confirm(opts);
    return new Promise((resolve) => {
      const ok = h("button", { type: "button", class: "button" + (opts.danger ? " danger" : ""), text: opts.confirmLabel || "OK" });
      const cancel = h("button", { type: "button", class: "button secondary", text: "Cancel" });
      const dialog = h("dialog", { class: "df-dialog", role: "alertdialog", "aria-labelledby": "df-dialog-title" },
        h("h2", { id: "df-dialog-title", text: opts.title || "Are you sure?" }),
        opts.message ? h("p", { text: opts.message }) : null,
        h("div", { class: "actions" }, cancel, ok));
      const done = (answer) => { dialog.close(); dialog.remove(); resolve(answer); };
      ok.addEventListener("click", () => done(true));
      cancel.addEventListener("click", () => done(false));
      dialog.addEventListener("cancel", (ev) => { ev.preventDefault(); done(false); });
      document.body.append(dialog);
      dialog.showModal();
      cancel.focus(); // the safe choice has the focus: Enter alone never deletes
    });
  }

  window.DFKit = { h, morph, icon, csrf, api, shorten, formatSize, basename, errorBox, confirm: confirmDialog };
})();
