/* The chat page's threads sidebar: the list grouped Pinned / Today / Previous 7 days / Older,
 * search over titles and message text (server side, full text), pin, rename, delete (with
 * the styled dialog) and keyboard switching (Alt+↑ / Alt+↓ anywhere, ↑/↓ within the list).
 *
 * app.js owns the conversation and calls init() once and refresh() when a thread changed;
 * this file owns everything inside #sidebar's list. Threads that never had a run (a chat
 * opened for an upload, then left) are drafts and are not listed: `started: true`. */
(function () {
  "use strict";

  const $ = (id) => document.getElementById(id);
  const GROUPS = [["pinned", "Pinned"], ["today", "Today"], ["week", "Previous 7 days"], ["older", "Older"]];
  const SEARCH_DELAY_MS = 200;
  let ctx = null;
  // byId: the threads the list shows now, read by its buttons when clicked.
  const S = { threads: [], pinned: [], results: null, term: "", renaming: false, searchTimer: null, searchSeq: 0, byId: new Map() };
  const el = {};

  function h(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "text") node.textContent = v;
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? "" : v);
    }
    for (const c of children) if (c !== null && c !== undefined) node.append(c);
    return node;
  }
  const icon = (name) => (window.dfUI ? window.dfUI.icon(name) : document.createTextNode(""));
  // tags.js: the tag filter's search fields, each chat's tag chips and Tags button
  const tags = () => window.DFTags;
  const filtered = (body) => ({ ...body, ...(tags() ? tags().filterBody() : {}) });

  function threadTitle(t) { return (t.metadata && t.metadata.title) || t.title || (t.values && t.values.title) || "New chat"; }

  // ------------------------------------------------------------------ loading

  async function refresh() {
    if (!ctx) return;
    try {
      const [recent, pinned] = await Promise.all([
        ctx.api("POST", "/threads/search", filtered({ limit: 100, sort_by: "updated_at", sort_order: "desc", started: true })),
        ctx.api("POST", "/threads/search", filtered({ limit: 100, sort_by: "updated_at", sort_order: "desc", pinned: true })),
      ]);
      S.threads = recent;
      S.pinned = pinned;
    } catch (e) { return; }
    if (tags()) tags().onThreads([...S.threads, ...S.pinned]);
    if (S.term) await runSearch(S.term); else render();
  }

  async function runSearch(term) {
    const seq = ++S.searchSeq;
    let found;
    try {
      found = await ctx.api("POST", "/threads/search", filtered({ query: term, limit: 50, sort_by: "updated_at", sort_order: "desc" }));
    } catch (e) { found = []; }
    if (seq !== S.searchSeq) return; // a later keystroke's search owns the list now
    S.results = found;
    render();
  }

  function onSearchInput() {
    S.term = el.search.value.trim();
    clearTimeout(S.searchTimer);
    if (!S.term) { S.results = null; S.searchSeq++; render(); return; }
    S.searchTimer = setTimeout(() => runSearch(S.term), SEARCH_DELAY_MS);
  }

  // ------------------------------------------------------------------ rendering

  function groupOf(t, now) {
    if (t.pinned_at) return "pinned";
    const when = new Date(t.updated_at);
    const startOfToday = new Date(now.getFullYear(), now.getMonth(), now.getDate());
    if (when >= startOfToday) return "today";
    if (when >= new Date(startOfToday.getTime() - 7 * 86400000)) return "week";
    return "older";
  }

  // The query's words marked in a text, built from text nodes (never HTML from the server).
  function highlighted(text, term) {
    const words = (term.match(/[\p{L}\p{N}_]+/gu) || []).map((w) => w.toLowerCase());
    const frag = document.createDocumentFragment();
    if (!words.length) { frag.append(text); return frag; }
    const pattern = new RegExp(`(${words.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|")})[\\p{L}\\p{N}_]*`, "giu");
    let last = 0;
    for (const m of text.matchAll(pattern)) {
      frag.append(text.slice(last, m.index), h("mark", { text: m[0] }));
      last = m.index + m[0].length;
    }
    frag.append(text.slice(last));
    return frag;
  }

  function item(t) {
    const active = t.thread_id === ctx.threadId();
    const title = threadTitle(t);
    const link = h("a", { class: "thread-link", href: `/c/${encodeURIComponent(t.thread_id)}/`, "aria-current": active ? "page" : null, "data-thread-link": t.thread_id });
    link.append(h("span", { class: "thread-name" }, S.results ? highlighted(title, S.term) : title));
    if (S.results && t.search_snippet) link.append(h("span", { class: "thread-snippet" }, highlighted(t.search_snippet, S.term)));
    if (tags()) link.append(tags().chips(t) || "");
    const tag = ctx.agentTag ? ctx.agentTag(t.assistant_id) : null;
    // Beside the link, not in it: a title update rewrites the link's text.
    const mark = tag ? h("span", { class: "thread-agent", title: tag.title, "aria-label": tag.title, text: tag.mark }) : null;
    const pinned = Boolean(t.pinned_at);
    const pin = h("button", { type: "button", class: "icon-btn small-btn pin-btn", "aria-pressed": String(pinned),
      "aria-label": (pinned ? "Unpin " : "Pin ") + title, title: pinned ? "Unpin" : "Pin", "data-act": "pin" }, icon(pinned ? "pin-off" : "pin"));
    const rename = h("button", { type: "button", class: "icon-btn small-btn", "aria-label": "Rename " + title, title: "Rename", "data-act": "rename" }, icon("pencil"));
    const del = h("button", { type: "button", class: "icon-btn small-btn", "aria-label": "Delete " + title, title: "Delete", "data-act": "delete" }, icon("trash"));
    return h("li", { class: "thread-item" + (active ? " active" : "") + (t.status === "busy" ? " busy" : "") + (pinned ? " pinned" : ""), "data-thread": t.thread_id },
      mark, link, h("span", { class: "thread-actions" }, pin, tags() ? tags().button(t, title) : null, rename, del));
  }

  // One listener for every item's buttons, reading the thread as the list shows it now: the
  // list keeps its elements across refreshes (render), so a handler of each button's own
  // would act on the thread as it was when the button was first drawn.
  function onListClick(ev) {
    const button = ev.target.closest && ev.target.closest("button[data-act]");
    const li = button && button.closest("[data-thread]");
    const t = li && el.list.contains(li) ? S.byId.get(li.dataset.thread) : null;
    if (!t) return;
    const act = button.dataset.act;
    if (act === "pin") togglePin(t);
    else if (act === "rename") startRename(t, li);
    else if (act === "delete") deleteThread(t);
    else if (act === "tags" && tags()) tags().editFor(t, button);
  }

  function render() {
    if (S.renaming) return; // a refresh must not swallow the title being typed
    const focusedThread = document.activeElement && document.activeElement.closest && document.activeElement.closest("[data-thread]");
    const keep = focusedThread ? focusedThread.dataset.thread : null;
    let sections;
    if (S.results) {
      sections = S.results.length ? [h("li", { class: "thread-group" }, h("ul", { class: "thread-group-list", "aria-label": "Search results" }, ...S.results.map(item)))] : [];
    } else {
      const now = new Date();
      const seen = new Set();
      const buckets = Object.fromEntries(GROUPS.map(([key]) => [key, []]));
      for (const t of [...S.pinned.sort((a, b) => String(b.pinned_at).localeCompare(String(a.pinned_at))), ...S.threads]) {
        if (seen.has(t.thread_id)) continue;
        seen.add(t.thread_id);
        buckets[groupOf(t, now)].push(t);
      }
      sections = GROUPS.filter(([key]) => buckets[key].length).map(([key, label]) => {
        const headingId = "thread-group-" + key;
        return h("li", { class: "thread-group", "data-group": key },
          h("h2", { class: "thread-group-title", id: headingId, text: label }),
          h("ul", { class: "thread-group-list", "aria-labelledby": headingId }, ...buckets[key].map(item)));
      });
    }
    S.byId = new Map([...S.pinned, ...S.threads, ...(S.results || [])].map((t) => [t.thread_id, t]));
    // Kept in place, not replaced: a click pressed before a refresh and released after it
    // still reaches its button (DFKit.morph).
    window.DFKit.morph(el.list, sections);
    const count = el.list.querySelectorAll(".thread-item").length;
    el.empty.hidden = count > 0;
    const filtering = tags() && tags().selected().length;
    el.empty.textContent = S.results ? "No chat matches." : filtering ? "No chat has these tags." : "No chats yet.";
    if (keep) {
      const again = el.list.querySelector(`[data-thread="${CSS.escape(keep)}"] .thread-link`);
      if (again) again.focus();
    }
  }

  // ------------------------------------------------------------------ actions

  async function togglePin(t) {
    try {
      await ctx.api(t.pinned_at ? "DELETE" : "PUT", `/threads/${encodeURIComponent(t.thread_id)}/pin`);
    } catch (e) { ctx.setNote(e.message, "error"); return; }
    await refresh();
    const button = el.list.querySelector(`[data-thread="${CSS.escape(t.thread_id)}"] .pin-btn`);
    if (button) button.focus();
  }

  function startRename(t, li) {
    const input = h("input", { type: "text", class: "rename-input", value: threadTitle(t), "aria-label": "New title" });
    S.renaming = true;
    li.replaceChildren(input);
    input.focus();
    input.select();
    let done = false;
    const finish = async (save) => {
      if (done) return;
      done = true;
      S.renaming = false;
      const title = input.value.trim();
      if (save && title) {
        try {
          await ctx.api("PATCH", `/threads/${encodeURIComponent(t.thread_id)}`, { metadata: { title } });
          ctx.onRenamed(t.thread_id, title);
        } catch (e) { ctx.setNote(e.message, "error"); }
      }
      refresh();
    };
    input.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter") { ev.preventDefault(); finish(true); }
      if (ev.key === "Escape") { ev.preventDefault(); ev.stopPropagation(); finish(false); }
    });
    input.addEventListener("blur", () => finish(true));
  }

  async function deleteThread(t) {
    const ok = await window.dfUI.confirm({
      title: `Delete “${threadTitle(t)}”?`, message: "Its messages and files are removed for good.", confirmLabel: "Delete", danger: true,
    });
    if (!ok) return;
    try {
      await ctx.api("DELETE", `/threads/${encodeURIComponent(t.thread_id)}`);
    } catch (e) {
      ctx.setNote(e.status === 409 ? "This chat is still running: stop it before deleting." : e.message, "error");
      return;
    }
    if (t.thread_id === ctx.threadId()) { location.href = "/"; return; }
    refresh();
  }

  // ------------------------------------------------------------------ keyboard

  function links() { return [...el.list.querySelectorAll(".thread-link")]; }

  // Alt+↑ / Alt+↓ from anywhere opens the previous / next chat in the list's order; ↑ / ↓ on a
  // focused chat link move the focus (Enter opens it, as any link).
  function onKey(ev) {
    if (!ev.altKey || ev.ctrlKey || ev.metaKey || (ev.key !== "ArrowUp" && ev.key !== "ArrowDown")) return;
    // In text being written, Alt+arrows move the caret (macOS): leave them to the field.
    const field = ev.target;
    if (field && (field.tagName === "TEXTAREA" || field.tagName === "INPUT") && field.value) return;
    const all = links();
    if (!all.length) return;
    ev.preventDefault();
    const current = all.findIndex((a) => a.dataset.threadLink === ctx.threadId());
    const step = ev.key === "ArrowDown" ? 1 : -1;
    const next = current < 0 ? (step > 0 ? 0 : all.length - 1) : current + step;
    if (next >= 0 && next < all.length) location.href = all[next].href;
  }

  function onListKey(ev) {
    if (ev.altKey || (ev.key !== "ArrowUp" && ev.key !== "ArrowDown")) return;
    const all = links();
    const at = all.indexOf(document.activeElement);
    if (at < 0) return;
    ev.preventDefault();
    const next = all[Math.min(all.length - 1, Math.max(0, at + (ev.key === "ArrowDown" ? 1 : -1)))];
    next.focus();
  }

  function init(options) {
    ctx = options;
    el.list = $("thread-list");
    el.empty = $("thread-empty");
    el.search = $("thread-search");
    el.search.addEventListener("input", onSearchInput);
    el.search.addEventListener("keydown", (ev) => {
      if (ev.key === "Escape" && el.search.value) { ev.stopPropagation(); el.search.value = ""; onSearchInput(); }
      if (ev.key === "ArrowDown") { const first = links()[0]; if (first) { ev.preventDefault(); first.focus(); } }
    });
    el.list.addEventListener("keydown", onListKey);
    el.list.addEventListener("click", onListClick);
    document.addEventListener("keydown", onKey);
    refresh();
  }

  function setTitle(threadId, title) {
    const name = el.list && el.list.querySelector(`[data-thread="${CSS.escape(threadId || "")}"] .thread-name`);
    if (name && title && !S.results) name.textContent = title;
  }

  window.DFSidebar = { init, refresh, setTitle };
})();
