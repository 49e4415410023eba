/* Site-wide UI helpers, loaded on every page by templates/base.html (after the vendored
   Lucide icon data). Pages use these instead of window.confirm() and text glyphs:

     dfUI.confirm({title, message, confirmLabel, cancelLabel, danger}) -> Promise<boolean>
     dfUI.icon(name, {label, size}) -> SVGElement
     dfUI.theme.get() / .set("light"|"dark"|"system") / .resolved()
     dfUI.themeControl() -> an element with the Light / Dark / System radio group

   The theme itself is applied before first paint by the inline script in base.html; this
   file only changes it later and keeps "system" following the OS setting live. */
(() => {
  "use strict";

  const SVG_NS = "http://www.w3.org/2000/svg";

  // ------------------------------------------------------------------ icons
  function icon(name, opts = {}) {
    const nodes = (window.dfLucideIcons || {})[name];
    // A typo would otherwise render as an empty gap nobody notices.
    if (!nodes) throw new Error(`dfUI.icon: no icon named "${name}" (add it to scripts/build_icons.py)`);
    const svg = document.createElementNS(SVG_NS, "svg");
    const attrs = { viewBox: "0 0 24 24", fill: "none", stroke: "currentColor", "stroke-width": "2",
      "stroke-linecap": "round", "stroke-linejoin": "round", class: `df-icon df-icon-${name}`, focusable: "false" };
    for (const [k, v] of Object.entries(attrs)) svg.setAttribute(k, v);
    if (opts.size) { svg.setAttribute("width", opts.size); svg.setAttribute("height", opts.size); }
    if (opts.label) { svg.setAttribute("role", "img"); svg.setAttribute("aria-label", opts.label); }
    else svg.setAttribute("aria-hidden", "true");
    for (const [tag, nodeAttrs] of nodes) {
      const child = document.createElementNS(SVG_NS, tag);
      for (const [k, v] of Object.entries(nodeAttrs)) if (k !== "key") child.setAttribute(k, v);
      svg.appendChild(child);
    }
    return svg;
  }

  // Replace <span data-icon="name"></span> placeholders in server-rendered templates, so a
  // template can use the icon set without inlining SVG paths.
  function hydrateIcons(root = document) {
    for (const spot of root.querySelectorAll("[data-icon]:not([data-icon-done])")) {
      try { spot.prepend(icon(spot.dataset.icon)); } catch (err) { console.error(err); }
      spot.setAttribute("data-icon-done", "");
    }
  }

  // ------------------------------------------------------------------ confirm dialog
  const FOCUSABLE = "button:not([disabled]), [href], input:not([disabled]), select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex='-1'])";

  function confirm({ title = "Are you sure?", message = "", confirmLabel = "OK", cancelLabel = "Cancel", danger = false } = {}) {
    return new Promise((resolve) => {
      const opener = document.activeElement;
      const dialog = document.createElement("dialog");
      dialog.className = "df-dialog" + (danger ? " danger" : "");
      const id = "df-dialog-" + Math.random().toString(36).slice(2);
      dialog.setAttribute("aria-labelledby", id + "-title");
      if (message) dialog.setAttribute("aria-describedby", id + "-message");
      if (danger) dialog.setAttribute("role", "alertdialog");

      const form = document.createElement("form");
      form.method = "dialog";
      const heading = document.createElement("h2");
      heading.id = id + "-title";
      if (danger) heading.append(icon("triangle-alert"));
      heading.append(document.createTextNode(title));
      form.append(heading);
      if (message) {
        const p = document.createElement("p");
        p.id = id + "-message";
        p.textContent = message;
        form.append(p);
      }
      const actions = document.createElement("div");
      actions.className = "df-dialog-actions";
      const cancel = document.createElement("button");
      cancel.type = "button";
      cancel.textContent = cancelLabel;
      cancel.dataset.role = "cancel";
      const ok = document.createElement("button");
      ok.type = "submit";
      ok.className = "primary" + (danger ? " danger" : "");
      ok.textContent = confirmLabel;
      ok.dataset.role = "confirm";
      actions.append(cancel, ok);
      form.append(actions);
      dialog.append(form);

      let settled = false;
      const finish = (answer) => {
        if (settled) return;
        settled = true;
        if (dialog.open) dialog.close();
        dialog.remove();
        // Give focus back to what opened the dialog, as a native confirm() does; if the page
        // re-rendered that control meanwhile, to the one that replaced it (same id or label).
        let back = opener && opener.isConnected ? opener : null;
        if (!back && opener && opener.id) back = document.getElementById(opener.id);
        const label = opener && opener.getAttribute && opener.getAttribute("aria-label");
        if (!back && label) back = document.querySelector(`[aria-label="${CSS.escape(label)}"]`);
        if (back && typeof back.focus === "function") back.focus();
        resolve(answer);
      };
      form.addEventListener("submit", (ev) => { ev.preventDefault(); finish(true); });
      cancel.addEventListener("click", () => finish(false));
      dialog.addEventListener("cancel", (ev) => { ev.preventDefault(); finish(false); });   // Esc
      dialog.addEventListener("close", () => finish(false));
      // A click on the backdrop (outside the box) cancels, like a menu.
      dialog.addEventListener("click", (ev) => {
        if (ev.target !== dialog) return;
        const r = dialog.getBoundingClientRect();
        const inside = ev.clientX >= r.left && ev.clientX <= r.right && ev.clientY >= r.top && ev.clientY <= r.bottom;
        if (!inside) finish(false);
      });
      dialog.addEventListener("keydown", (ev) => {
        if (ev.key === "Escape") { ev.preventDefault(); finish(false); return; }
        // Enter confirms from anywhere in the dialog except the Cancel button itself.
        if (ev.key === "Enter" && !ev.isComposing && ev.target !== cancel) { ev.preventDefault(); finish(true); return; }
        if (ev.key !== "Tab") return;
        // A modal <dialog> makes the page inert, but Tab can still leave for the browser's
        // own UI; keep it cycling inside the dialog instead.
        const items = [...dialog.querySelectorAll(FOCUSABLE)];
        if (!items.length) return;
        const first = items[0], last = items[items.length - 1];
        if (ev.shiftKey && document.activeElement === first) { ev.preventDefault(); last.focus(); }
        else if (!ev.shiftKey && document.activeElement === last) { ev.preventDefault(); first.focus(); }
      });

      document.body.append(dialog);
      dialog.showModal();
      ok.focus();
    });
  }

  // ------------------------------------------------------------------ theme
  const THEMES = ["light", "dark", "system"];
  const root = document.documentElement;
  const storageKey = root.dataset.themeKey || "df-theme";
  const media = window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null;

  function readPref() {
    try {
      const v = localStorage.getItem(storageKey) || localStorage.getItem("df-theme");
      return THEMES.includes(v) ? v : "system";
    } catch (_) { return "system"; }
  }
  function resolve(pref) { return pref === "system" ? (media && media.matches ? "dark" : "light") : pref; }
  // Vendored stylesheets made for one theme (highlight.js) come in pairs marked
  // data-theme-sheet="light|dark": only the current theme's is enabled.
  function syncSheets() {
    for (const link of document.querySelectorAll("link[data-theme-sheet]")) link.disabled = link.dataset.themeSheet !== root.dataset.theme;
  }
  function apply(pref) {
    root.dataset.themePref = pref;
    root.dataset.theme = resolve(pref);
    syncSheets();
    document.dispatchEvent(new CustomEvent("df:theme", { detail: { pref, theme: root.dataset.theme } }));
  }
  const theme = {
    get: readPref,
    resolved: () => resolve(readPref()),
    set(pref) {
      if (!THEMES.includes(pref)) throw new Error(`dfUI.theme.set: unknown theme "${pref}"`);
      try {
        localStorage.setItem(storageKey, pref);
        // The sign-in page has no user yet: it shows the last choice made in this browser.
        localStorage.setItem("df-theme", pref);
      } catch (_) { /* private mode: the choice lasts for this page only */ }
      apply(pref);
    },
  };
  if (media) {
    const follow = () => { if (readPref() === "system") apply("system"); };
    if (media.addEventListener) media.addEventListener("change", follow); else media.addListener(follow);
  }
  // Another tab changed the theme: follow it.
  window.addEventListener("storage", (ev) => { if (ev.key === storageKey) apply(readPref()); });

  function themeControl() {
    const group = document.createElement("div");
    group.className = "df-theme";
    group.setAttribute("role", "radiogroup");
    group.setAttribute("aria-label", "Theme");
    const name = "df-theme-" + Math.random().toString(36).slice(2);
    const current = readPref();
    for (const [value, label, glyph] of [["light", "Light", "sun"], ["dark", "Dark", "moon"], ["system", "System", "monitor"]]) {
      const option = document.createElement("label");
      const input = document.createElement("input");
      input.type = "radio"; input.name = name; input.value = value; input.checked = value === current;
      input.addEventListener("change", () => { if (input.checked) theme.set(value); });
      option.append(input, icon(glyph), document.createTextNode(label));
      group.append(option);
    }
    document.addEventListener("df:theme", (ev) => {
      for (const input of group.querySelectorAll("input")) input.checked = input.value === ev.detail.pref;
    });
    return group;
  }

  window.dfUI = { confirm, icon, hydrateIcons, theme, themeControl };

  syncSheets();
  const ready = () => {
    syncSheets();
    hydrateIcons();
    for (const spot of document.querySelectorAll("[data-theme-control]:not([data-theme-done])")) {
      spot.append(themeControl());
      spot.setAttribute("data-theme-done", "");
    }
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", ready); else ready();
})();
