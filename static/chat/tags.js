/* Chat tags on the chat page (the API: /api/tags, /api/threads/{id}/tags; docs/chat.md#tags).
 *
 * - The sidebar's filter row (#tag-filter): one toggle per tag; with some pressed, the list
 *   shows only the chats carrying every one of them (the thread search's `tags`). The choice
 *   is kept in this browser for the account, so it survives a reload.
 * - Each chat in the sidebar shows its tags and has a Tags button; the chat header has one
 *   for the open chat. Both open the same dialog: tick existing tags, add new ones.
 *
 * sidebar.js asks this file for the search filter, the chips and the button of each item
 * (window.DFTags); it tells this file the chats it listed (onThreads). */
(function () {
  "use strict";

  const { h, api } = window.DFKit;
  const root = document.documentElement;
  const FILTER_KEY = "df-tag-filter:" + (root.dataset.themeKey || "").split(":").pop();
  const S = { tags: [], selected: readFilter(), threadTags: new Map() };
  const $ = (id) => document.getElementById(id);
  const icon = (name) => { try { return window.dfUI.icon(name); } catch (e) { return document.createTextNode(""); } };

  function readFilter() {
    try { const v = JSON.parse(localStorage.getItem(FILTER_KEY) || "[]"); return Array.isArray(v) ? v.filter((x) => typeof x === "string") : []; }
    catch (e) { return []; }
  }
  function saveFilter() { try { localStorage.setItem(FILTER_KEY, JSON.stringify(S.selected)); } catch (e) { /* private mode */ } }
  const same = (a, b) => a.toLowerCase() === b.toLowerCase();
  const currentThread = () => (window.DeerFlowChat ? window.DeerFlowChat.state().threadId : null);
  const sidebar = () => window.DFSidebar;
  const note = (text, kind) => {
    const el = $("composer-note");
    if (!el) return;
    el.textContent = text;
    el.className = "composer-note small " + (kind === "error" ? "error-text" : "muted");
  };

  // ------------------------------------------------------------------ the filter row

  async function loadTags() {
    let tags;
    // A failed answer (the network, or the page leaving mid-request) keeps what was shown: taken
    // as "no tags", it would also forget the saved filter just before a reload reads it.
    try { tags = (await api("GET", "/tags")).tags; } catch (e) { return; }
    S.tags = tags;
    // A tag deleted (here or in another tab) no longer filters anything.
    const kept = S.selected.filter((name) => S.tags.some((t) => same(t.name, name)));
    if (kept.length !== S.selected.length) { S.selected = kept; saveFilter(); }
    renderFilter();
  }

  function renderFilter() {
    const row = $("tag-filter");
    if (!row) return;
    const chips = S.tags.map((t) => {
      const on = S.selected.some((name) => same(name, t.name));
      return h("button", { type: "button", class: "tag-chip filter-chip", "aria-pressed": String(on), "data-tag": t.name,
        title: `${t.thread_count} chat${t.thread_count === 1 ? "" : "s"}`, onclick: () => toggleFilter(t.name) },
        icon("tag"), h("span", { text: t.name }), h("span", { class: "tag-count", text: String(t.thread_count) }));
    });
    const clear = S.selected.length
      ? h("button", { type: "button", class: "link-button tag-clear", onclick: () => { S.selected = []; saveFilter(); renderFilter(); refreshList(); } }, "Show all")
      : null;
    row.querySelector(".tag-filter-chips").replaceChildren(...chips, clear || "");
    row.hidden = S.tags.length === 0;
    const status = $("tag-filter-status");
    if (status) status.textContent = S.selected.length ? `Showing chats tagged ${S.selected.join(" and ")}.` : "";
  }

  function toggleFilter(name) {
    const on = S.selected.some((n) => same(n, name));
    S.selected = on ? S.selected.filter((n) => !same(n, name)) : [...S.selected, name];
    saveFilter();
    renderFilter();
    refreshList();
    const again = $("tag-filter").querySelector(`[data-tag="${CSS.escape(name)}"]`);
    if (again) again.focus();
  }

  function refreshList() { if (sidebar()) sidebar().refresh(); }

  // ------------------------------------------------------------------ the sidebar's items

  /* What sidebar.js adds to each search body. */
  function filterBody() { return S.selected.length ? { tags: [...S.selected] } : {}; }

  function chips(t) {
    const names = t.tags || [];
    if (!names.length) return null;
    return h("span", { class: "thread-tags" }, h("span", { class: "visually-hidden", text: "Tags: " }),
      ...names.map((name) => h("span", { class: "tag-chip small-chip", text: name })));
  }

  // The list delegates its clicks (sidebar.js), so the button carries no handler of its own:
  // a button kept across a refresh would otherwise open the chat as it was before it.
  function button(t, title) {
    return h("button", { type: "button", class: "icon-btn small-btn tag-btn", "data-act": "tags", "aria-label": "Tags for " + title, title: "Tags" },
      icon("tag"));
  }

  function editFor(t, opener) { return edit(t.thread_id, titleOf(t), t.tags || [], opener); }

  /* The chats the sidebar listed: the header's button follows the open chat's tags. */
  function onThreads(threads) {
    for (const t of threads) S.threadTags.set(t.thread_id, { tags: t.tags || [], title: titleOf(t) });
    paintHeader();
    loadTags(); // the counts follow deleted chats
  }

  function titleOf(t) { return (t.metadata && t.metadata.title) || t.title || (t.values && t.values.title) || "New chat"; }

  function paintHeader() {
    const btn = $("thread-tags-btn");
    if (!btn) return;
    const id = currentThread();
    btn.hidden = !id;
    const known = id ? S.threadTags.get(id) : null;
    if (id && !known) {
      // Not in the sidebar (a tag filter hides it): ask for its tags once.
      S.threadTags.set(id, { tags: [], title: "" });
      api("GET", `/threads/${encodeURIComponent(id)}/tags`).then((r) => { S.threadTags.set(id, { tags: r.tags, title: "" }); paintHeader(); }, () => {});
    }
    const names = known ? known.tags : [];
    const count = $("thread-tags-count");
    count.textContent = String(names.length);
    count.hidden = !names.length;
    btn.setAttribute("aria-label", names.length ? `Tags for this chat: ${names.join(", ")}` : "Tags for this chat");
    btn.title = names.length ? "Tags: " + names.join(", ") : "Tags for this chat";
  }

  // ------------------------------------------------------------------ the dialog

  async function edit(threadId, title, current, opener) {
    let tags = current;
    try { tags = (await api("GET", `/threads/${encodeURIComponent(threadId)}/tags`)).tags; } catch (e) { /* use what the list had */ }
    await loadTags();
    const checked = new Set(tags.map((n) => n.toLowerCase()));
    const list = h("ul", { class: "tag-options", "aria-label": "Your tags" });
    const row = (name, on) => {
      const id = "tag-opt-" + Math.random().toString(36).slice(2);
      const box = h("input", { type: "checkbox", id, value: name, checked: on });
      return h("li", null, box, h("label", { for: id }, icon("tag"), h("span", { text: name })));
    };
    for (const t of S.tags) list.append(row(t.name, checked.has(t.name.toLowerCase())));
    const none = h("p", { class: "muted small tag-none", text: "No tags yet: add one below." });
    none.hidden = S.tags.length > 0;
    const field = h("input", { type: "text", class: "tag-new", maxlength: "40", placeholder: "New tag, e.g. work", "aria-label": "New tag" });
    const add = h("button", { type: "button", class: "button secondary", text: "Add" });
    const error = h("p", { class: "error-text small", role: "alert" });
    const save = h("button", { type: "submit", class: "primary", text: "Save" });
    const cancel = h("button", { type: "button", text: "Cancel" });
    const headingId = "tag-dialog-title";
    const form = h("form", { method: "dialog", class: "tag-form" },
      h("h2", { id: headingId }, icon("tag"), h("span", { text: `Tags for “${title}”` })),
      none, list,
      h("div", { class: "tag-add" }, field, add),
      error,
      h("div", { class: "df-dialog-actions" }, cancel, save));
    const dialog = h("dialog", { class: "df-dialog tag-dialog", "aria-labelledby": headingId }, form);

    const addTyped = () => {
      const name = field.value.replace(/\s+/g, " ").trim();
      error.textContent = "";
      if (!name) return;
      if (name.length > 40) { error.textContent = "A tag is at most 40 characters."; return; }
      const existing = [...list.querySelectorAll("input")].find((b) => same(b.value, name));
      if (existing) existing.checked = true; else list.append(row(name, true));
      none.hidden = true;
      field.value = "";
      field.focus();
    };
    add.addEventListener("click", addTyped);
    field.addEventListener("keydown", (ev) => { if (ev.key === "Enter" && !ev.isComposing) { ev.preventDefault(); addTyped(); } });

    const done = () => {
      if (dialog.open) dialog.close();
      dialog.remove();
      const back = opener && opener.isConnected ? opener : $("thread-tags-btn");
      if (back && !back.hidden) back.focus();
    };
    cancel.addEventListener("click", done);
    dialog.addEventListener("cancel", (ev) => { ev.preventDefault(); done(); });
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      if (field.value.trim()) addTyped();
      const names = [...list.querySelectorAll("input:checked")].map((b) => b.value);
      save.disabled = true;
      try {
        const result = await api("PUT", `/threads/${encodeURIComponent(threadId)}/tags`, { tags: names });
        const known = S.threadTags.get(threadId) || { title };
        S.threadTags.set(threadId, { ...known, tags: result.tags });
        paintHeader();
        note(result.tags.length ? `Tagged ${result.tags.join(", ")}.` : "Tags removed.");
      } catch (e) {
        error.textContent = "Could not save the tags: " + e.message;
        save.disabled = false;
        return;
      }
      done();
      await loadTags();
      refreshList();
    });
    document.body.append(dialog);
    dialog.showModal();
    (list.querySelector("input") || field).focus();
  }

  function init() {
    const btn = $("thread-tags-btn");
    if (btn) {
      btn.addEventListener("click", () => {
        const id = currentThread();
        if (!id) return;
        const known = S.threadTags.get(id);
        const title = (document.getElementById("thread-title") || {}).textContent || (known && known.title) || "this chat";
        edit(id, title, known ? known.tags : [], btn);
      });
    }
    loadTags();
  }

  window.DFTags = { filterBody, chips, button, editFor, onThreads, refresh: loadTags, selected: () => [...S.selected] };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init); else init();
})();
