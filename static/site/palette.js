/* The command palette, on every signed-in page (templates/site/_palette.html):
 *
 *   Ctrl/Cmd+K       open or close it (also the search button in the chat header and top bar)
 *   Ctrl/Cmd+Shift+O a new chat, from anywhere
 *   ?                the keyboard shortcuts (outside a text box; Ctrl/Cmd+/ anywhere)
 *
 * It lists chats (a fuzzy match over the titles of the user's recent chats, plus what the
 * thread search API finds by title and message text for longer queries), actions (new chat,
 * toggle theme, shortcuts), the agents to start a chat with, and every page the user can
 * reach (the page's #palette-data, rendered for this user: staff pages only for staff).
 *
 * Accessibility: a modal <dialog> (the page behind is inert, Tab cycles inside), a combobox
 * text box driving a listbox through aria-activedescendant, focus given back on close. */
(() => {
  "use strict";

  const dialog = document.getElementById("palette");
  const dataNode = document.getElementById("palette-data");
  if (!dialog || !dataNode) return;
  const DATA = JSON.parse(dataNode.textContent);
  const input = document.getElementById("palette-input");
  const list = document.getElementById("palette-list");
  const empty = document.getElementById("palette-empty");
  const help = document.getElementById("palette-help");
  const foot = dialog.querySelector(".palette-foot");
  const MAC = /Mac|iPhone|iPad/.test(navigator.platform || navigator.userAgent || "");
  const RECENT_SHOWN = 5;      // chats listed before anything is typed
  const CHATS_SHOWN = 8;       // chats listed for a query
  const SEARCH_DELAY_MS = 150; // the server search waits for a pause in the typing

  const S = { opener: null, focusTo: null, chats: [], found: [], options: [], active: -1, seq: 0, timer: null, loaded: false };

  for (const key of dialog.querySelectorAll("kbd[data-mod]")) key.textContent = MAC ? "⌘" : "Ctrl";

  // ------------------------------------------------------------------ data

  async function api(path, body) {
    const res = await fetch("/api" + path, {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": DATA.csrf },
      body: JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`search failed (${res.status})`);
    return res.json();
  }

  function titleOf(t) { return (t.metadata && t.metadata.title) || t.title || (t.values && t.values.title) || "New chat"; }

  async function loadChats() {
    try {
      const rows = await api("/threads/search", { limit: 100, sort_by: "updated_at", sort_order: "desc", started: true });
      S.chats = rows.map((t) => ({ id: t.thread_id, title: titleOf(t), tags: t.tags || [] }));
      S.loaded = true;
    } catch (e) { S.chats = []; }
    if (dialog.open) render();
  }

  // The server's search reaches chats older than the recent hundred, and message text.
  function searchServer(term) {
    clearTimeout(S.timer);
    const seq = ++S.seq;
    if (term.length < 2) { S.found = []; return; }
    S.timer = setTimeout(async () => {
      let rows = [];
      try { rows = await api("/threads/search", { query: term, limit: 20, sort_by: "updated_at", sort_order: "desc" }); } catch (e) { rows = []; }
      if (seq !== S.seq || !dialog.open) return;
      S.found = rows.map((t) => ({ id: t.thread_id, title: titleOf(t), tags: t.tags || [], snippet: t.search_snippet || "" }));
      render();
    }, SEARCH_DELAY_MS);
  }

  // ------------------------------------------------------------------ matching

  /* A fuzzy score: every character of the query in order (case-insensitive). Consecutive
   * characters and characters at word starts count more; an earlier first match counts more.
   * null when the text does not contain the query's characters in order. */
  function fuzzy(query, text) {
    const q = query.toLowerCase().replace(/\s+/g, "");
    if (!q) return { score: 0, marks: [] };
    const t = text.toLowerCase();
    let score = 0, from = 0, last = -2;
    const marks = [];
    for (const ch of q) {
      const at = t.indexOf(ch, from);
      if (at < 0) return null;
      const wordStart = at === 0 || /[\s\-_/:.(]/.test(t[at - 1]);
      score += 1 + (at === last + 1 ? 3 : 0) + (wordStart ? 2 : 0);
      marks.push(at);
      last = at;
      from = at + 1;
    }
    if (t.includes(query.toLowerCase().trim())) score += 10; // the words as typed
    return { score: score - marks[0] * 0.05, marks };
  }

  function highlighted(text, marks) {
    const frag = document.createDocumentFragment();
    const set = new Set(marks || []);
    let run = "";
    let marking = false;
    const flush = () => {
      if (!run) return;
      if (marking) { const m = document.createElement("mark"); m.textContent = run; frag.append(m); } else frag.append(run);
      run = "";
    };
    [...text].forEach((ch, i) => {
      const on = set.has(i);
      if (on !== marking) { flush(); marking = on; }
      run += ch;
    });
    flush();
    return frag;
  }

  // ------------------------------------------------------------------ commands

  const go = (path) => () => { location.href = path; };

  function newChat() { location.href = "/"; }

  function toggleTheme() {
    if (!window.dfUI) return;
    const next = window.dfUI.theme.resolved() === "dark" ? "light" : "dark";
    window.dfUI.theme.set(next);
  }

  /* On a chat that has not started, pick the agent in place; anywhere else, a new chat with it. */
  function switchAgent(id) {
    const select = document.getElementById("agent");
    if (select && !select.disabled && [...select.options].some((o) => o.value === id)) {
      select.value = id;
      select.dispatchEvent(new Event("change", { bubbles: true }));
      const box = document.getElementById("input");
      close(box);
      return;
    }
    location.href = "/?agent=" + encodeURIComponent(id);
  }

  function actions() {
    const theme = window.dfUI ? window.dfUI.theme.resolved() : "light";
    return [
      { group: "Actions", label: "New chat", icon: "plus", keys: [MAC ? "⌘" : "Ctrl", "Shift", "O"], run: newChat },
      { group: "Actions", label: theme === "dark" ? "Switch to the light theme" : "Switch to the dark theme",
        icon: theme === "dark" ? "sun" : "moon", hint: "Toggle theme", run: () => { toggleTheme(); close(); } },
      { group: "Actions", label: "Keyboard shortcuts", icon: "keyboard", keys: ["?"], run: () => showHelp(true) },
    ];
  }

  function agentItems() {
    return DATA.agents.map((a) => ({ group: "Agents", label: `New chat with ${a.label}`, mark: a.mark, icon: a.mark ? null : "bot",
      hint: "Switch agent", run: () => switchAgent(a.id) }));
  }

  function pageItems() {
    return DATA.pages.map((p) => ({ group: p.group, label: p.label, icon: p.icon, hint: p.path, run: go(p.path) }));
  }

  function chatItem(c) {
    return { group: "Chats", label: c.title, icon: "message-square", hint: c.snippet ? "" : (c.tags.length ? c.tags.join(", ") : ""),
      snippet: c.snippet, chat: c.id, run: go(`/c/${encodeURIComponent(c.id)}/`) };
  }

  const GROUP_ORDER = ["Chats", "Actions", "Agents", "Go to", "Settings"];

  function candidates(term) {
    const others = [...actions(), ...agentItems(), ...pageItems()];
    if (!term) {
      return [...S.chats.slice(0, RECENT_SHOWN).map(chatItem), ...others];
    }
    const scored = [];
    const seen = new Set();
    for (const c of S.chats) {
      const m = fuzzy(term, c.title);
      if (m) { scored.push({ ...chatItem(c), score: m.score, marks: m.marks }); seen.add(c.id); }
    }
    // Found by the server only (a message matched, or an older chat): after the title matches.
    for (const c of S.found) {
      if (seen.has(c.id)) continue;
      const m = fuzzy(term, c.title);
      scored.push({ ...chatItem(c), score: m ? m.score : -1, marks: m ? m.marks : [] });
      seen.add(c.id);
    }
    const chats = scored.sort((a, b) => b.score - a.score).slice(0, CHATS_SHOWN);
    const rest = [];
    for (const item of others) {
      const m = fuzzy(term, item.label) || (item.hint ? fuzzy(term, item.hint) : null);
      if (m) rest.push({ ...item, score: m.score, marks: fuzzy(term, item.label) ? m.marks : [] });
    }
    rest.sort((a, b) => GROUP_ORDER.indexOf(a.group) - GROUP_ORDER.indexOf(b.group) || b.score - a.score);
    // What holds the query as typed comes before letters scattered through a long title:
    // "poet" means the Poet agent before a chat that happens to read "Please cOmpare thE Three".
    // Equally good, a command comes before a chat: "theme" is the theme switch, not a chat
    // that mentions themes.
    const all = [...chats, ...rest];
    const typed = term.toLowerCase();
    const startsWord = (text) => text.startsWith(typed) || text.includes(" " + typed);
    const rank = (item) => {
      const label = (item.label || "").toLowerCase();
      const hint = item.group === "Chats" ? "" : (item.hint || "").toLowerCase();
      const tier = startsWord(label) || startsWord(hint) ? 2 : label.includes(typed) ? 1 : 0;
      return tier * 2 + (item.group === "Chats" ? 0 : 1);
    };
    const ordered = all.map((item, i) => [item, i, rank(item)]).sort((a, b) => b[2] - a[2] || a[1] - b[1]).map(([item]) => item);
    // Each group's rows together, groups in the order their best row came: the list reads
    // top to bottom in the order the arrow keys walk it.
    const groupRank = new Map();
    ordered.forEach((item) => { if (!groupRank.has(item.group)) groupRank.set(item.group, groupRank.size); });
    return ordered.map((item, i) => [item, i]).sort((a, b) => groupRank.get(a[0].group) - groupRank.get(b[0].group) || a[1] - b[1])
      .map(([item]) => item);
  }

  // ------------------------------------------------------------------ rendering

  function icon(name) {
    try { return window.dfUI.icon(name); } catch (e) { return document.createTextNode(""); }
  }

  function render() {
    const term = input.value.trim();
    const items = candidates(term);
    S.options = items;
    const groups = new Map();
    items.forEach((item, i) => {
      if (!groups.has(item.group)) groups.set(item.group, []);
      groups.get(item.group).push([item, i]);
    });
    const nodes = [];
    for (const [name, rows] of groups) {
      const gid = "palette-group-" + name.toLowerCase().replace(/\W+/g, "-");
      const group = document.createElement("div");
      group.setAttribute("role", "group");
      group.setAttribute("aria-labelledby", gid);
      group.className = "palette-group";
      const head = document.createElement("div");
      head.className = "palette-group-title";
      head.id = gid;
      head.setAttribute("role", "presentation");
      head.textContent = name === "Chats" && !term ? "Recent chats" : name;
      group.append(head);
      for (const [item, i] of rows) {
        const option = document.createElement("div");
        option.id = "palette-opt-" + i;
        option.className = "palette-option";
        option.setAttribute("role", "option");
        option.setAttribute("aria-selected", "false");
        option.dataset.index = String(i);
        if (item.chat) option.dataset.chat = item.chat;
        const glyph = document.createElement("span");
        glyph.className = "palette-glyph";
        glyph.setAttribute("aria-hidden", "true");
        if (item.mark) glyph.textContent = item.mark; else if (item.icon) glyph.append(icon(item.icon));
        const label = document.createElement("span");
        label.className = "palette-label";
        label.append(highlighted(item.label, item.marks));
        if (item.snippet) {
          const snip = document.createElement("span");
          snip.className = "palette-snippet";
          snip.textContent = item.snippet;
          label.append(snip);
        }
        option.append(glyph, label);
        if (item.keys) {
          const keys = document.createElement("span");
          keys.className = "palette-hint";
          for (const k of item.keys) { const kbd = document.createElement("kbd"); kbd.textContent = k; keys.append(kbd); }
          option.append(keys);
        } else if (item.hint) {
          const hint = document.createElement("span");
          hint.className = "palette-hint";
          hint.textContent = item.hint;
          option.append(hint);
        }
        option.addEventListener("mousemove", () => { if (S.active !== i) setActive(i, false); });
        option.addEventListener("click", () => choose(i));
        group.append(option);
      }
      nodes.push(group);
    }
    list.replaceChildren(...nodes);
    empty.hidden = items.length > 0 || (!S.loaded && !term);
    setActive(items.length ? 0 : -1, false);
  }

  function setActive(i, scroll = true) {
    const old = list.querySelector('[aria-selected="true"]');
    if (old) old.setAttribute("aria-selected", "false");
    S.active = i;
    const option = i >= 0 ? document.getElementById("palette-opt-" + i) : null;
    if (option) {
      option.setAttribute("aria-selected", "true");
      input.setAttribute("aria-activedescendant", option.id);
      if (scroll) option.scrollIntoView({ block: "nearest" });
    } else {
      input.removeAttribute("aria-activedescendant");
    }
  }

  function choose(i) {
    const item = S.options[i];
    if (item) item.run();
  }

  // ------------------------------------------------------------------ open and close

  function showHelp(on) {
    help.hidden = !on;
    list.hidden = on;
    empty.hidden = true;
    input.closest(".palette-search").hidden = on;
    foot.hidden = on;
    if (on) document.getElementById("palette-back").focus();
    else { input.focus(); render(); }
  }

  function open(options = {}) {
    if (dialog.open) { if (options.help) showHelp(true); else input.focus(); return; }
    S.opener = document.activeElement && document.activeElement !== document.body ? document.activeElement : null;
    input.value = "";
    S.found = [];
    help.hidden = true;
    list.hidden = false;
    input.closest(".palette-search").hidden = false;
    foot.hidden = false;
    dialog.showModal();
    for (const b of document.querySelectorAll("[data-palette-open]")) b.setAttribute("aria-expanded", "true");
    render();
    loadChats();
    if (options.help) showHelp(true); else input.focus();
  }

  // focusTo: where the focus goes instead of back to the opener (the composer after an agent pick).
  function close(focusTo) {
    if (!dialog.open) return;
    S.focusTo = focusTo || null;
    dialog.close();
  }

  dialog.addEventListener("close", () => {
    clearTimeout(S.timer);
    S.seq++;
    for (const b of document.querySelectorAll("[data-palette-open]")) b.setAttribute("aria-expanded", "false");
    // Back to what had the focus; on a chat page with nothing focused before, the composer.
    const back = S.focusTo || (S.opener && S.opener.isConnected && S.opener) || document.getElementById("input");
    if (back && typeof back.focus === "function") back.focus();
    S.opener = S.focusTo = null;
  });

  // ------------------------------------------------------------------ keys

  input.addEventListener("input", () => { render(); searchServer(input.value.trim()); });

  input.addEventListener("keydown", (ev) => {
    const n = S.options.length;
    if (ev.key === "ArrowDown" || ev.key === "ArrowUp") {
      ev.preventDefault();
      if (!n) return;
      const step = ev.key === "ArrowDown" ? 1 : -1;
      setActive(((S.active < 0 ? (step > 0 ? -1 : 0) : S.active) + step + n) % n);
    } else if (ev.key === "Home" && ev.ctrlKey) { ev.preventDefault(); if (n) setActive(0); }
    else if (ev.key === "End" && ev.ctrlKey) { ev.preventDefault(); if (n) setActive(n - 1); }
    else if (ev.key === "PageDown" || ev.key === "PageUp") {
      ev.preventDefault();
      if (n) setActive(Math.max(0, Math.min(n - 1, S.active + (ev.key === "PageDown" ? 5 : -5))));
    } else if (ev.key === "Enter" && !ev.isComposing) {
      ev.preventDefault();
      if (S.active >= 0) choose(S.active);
    }
  });

  dialog.addEventListener("keydown", (ev) => {
    if (ev.key === "Escape" && !help.hidden) { ev.preventDefault(); showHelp(false); return; }
    if (ev.key !== "Tab") return;
    // The page behind is inert, but Tab could still leave for the browser's own UI.
    const items = [...dialog.querySelectorAll("input, button, [href]")].filter((e) => !e.closest("[hidden]") && !e.disabled);
    if (!items.length) return;
    const first = items[0], last = items[items.length - 1];
    if (ev.shiftKey && document.activeElement === first) { ev.preventDefault(); last.focus(); }
    else if (!ev.shiftKey && document.activeElement === last) { ev.preventDefault(); first.focus(); }
  });

  // A click on the backdrop (outside the box) closes, like a menu.
  dialog.addEventListener("click", (ev) => {
    if (ev.target !== dialog) return;
    const r = dialog.getBoundingClientRect();
    if (ev.clientX < r.left || ev.clientX > r.right || ev.clientY < r.top || ev.clientY > r.bottom) close();
  });

  document.getElementById("palette-keys-link").addEventListener("click", () => showHelp(true));
  document.getElementById("palette-back").addEventListener("click", () => showHelp(false));

  function typing(target) {
    return target && (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName));
  }

  // Capture phase: the shortcuts work wherever the focus is, the message box included.
  document.addEventListener("keydown", (ev) => {
    const mod = MAC ? ev.metaKey : ev.ctrlKey;
    const key = (ev.key || "").toLowerCase();
    if (mod && !ev.altKey && !ev.shiftKey && key === "k") {
      ev.preventDefault();
      ev.stopPropagation();
      if (dialog.open) close(); else open();
    } else if (mod && ev.shiftKey && !ev.altKey && key === "o") {
      ev.preventDefault();
      ev.stopPropagation();
      newChat();
    } else if ((mod && !ev.altKey && !ev.shiftKey && key === "/") || (ev.key === "?" && !mod && !ev.altKey && !typing(ev.target) && !dialog.open)) {
      // Ctrl/Cmd+/ is DeerFlow's own frontend's key for the shortcuts; ? is the usual one.
      ev.preventDefault();
      open({ help: true });
    }
  }, true);

  for (const button of document.querySelectorAll("[data-palette-open]")) {
    button.setAttribute("aria-haspopup", "dialog");
    button.setAttribute("aria-expanded", "false");
    button.setAttribute("aria-keyshortcuts", MAC ? "Meta+K" : "Control+K");
    button.title = `Search and commands (${MAC ? "⌘" : "Ctrl"}+K)`;
    button.addEventListener("click", () => open());
  }

  window.DFPalette = { open, close, fuzzy };
})();
