/* The conversation's messages: one entry per message id, whether it came from a history
 * row, a streamed chunk or a `values` snapshot, so replays and snapshots never duplicate
 * text and a complete message ignores late chunks. app.js owns the run and the socket and
 * feeds this module what arrives; tool cards, feedback, web sources and message actions
 * decorate the entries made here. */
(function () {
  "use strict";

  const { h, icon, formatSize, basename } = window.DFKit;
  const md = () => window.DFMarkdown;
  const working = () => window.DFWorking;
  const web = () => window.DFWebTools;
  const fb = () => window.DFFeedback;
  const acts = () => window.DFMessageActions;
  const upsertToolCard = (entry, call) => window.DFToolCards.upsert(entry, call);
  const renderTool = (msg) => window.DFToolCards.result(msg);

  let S = null; // the chat's state (app.js): messages, toolCards, runId, pendingHuman, ...
  let list = null; // the element the entries go in
  let deps = null; // { updateWelcome, retryFrom }

  function init(options) {
    S = options.state;
    list = options.list;
    deps = options;
  }

  function textOf(content) {
    if (content === null || content === undefined) return "";
    if (typeof content === "string") return content;
    if (Array.isArray(content)) {
      return content.map((part) => {
        if (typeof part === "string") return part;
        if (part && (part.type === "text" || part.type === undefined) && typeof part.text === "string") return part.text;
        return "";
      }).join("");
    }
    return typeof content === "object" && typeof content.text === "string" ? content.text : "";
  }

  function reasoningOf(msg) {
    const kw = msg.additional_kwargs || {};
    let out = typeof kw.reasoning_content === "string" ? kw.reasoning_content : "";
    if (Array.isArray(msg.content)) {
      for (const part of msg.content) {
        if (part && (part.type === "thinking" || part.type === "reasoning")) out += part.thinking || part.reasoning || part.text || "";
      }
    }
    return out;
  }

  function isAi(type) { return type === "ai" || type === "AIMessageChunk" || type === "AIMessage"; }




  function entryFor(id, type, container) {
    let entry = S.messages.get(id);
    if (entry) return entry;
    entry = { id, type, final: false, text: "", reasoning: "", toolCalls: [], el: null };
    if (type === "human") {
      entry.el = h("article", { class: "msg user", "data-id": id, "aria-label": "You" });
      entry.body = h("div", { class: "bubble" });
      entry.files = h("ul", { class: "msg-files" });
      entry.el.append(entry.body, entry.files);
    } else {
      entry.el = h("article", { class: "msg assistant", "data-id": id, "aria-label": "Assistant" });
      entry.reasoningEl = h("details", { class: "reasoning", hidden: true },
        h("summary", { text: "Thinking" }), h("div", { class: "reasoning-body" }));
      entry.body = h("div", { class: "md" });
      entry.tools = h("div", { class: "tool-cards" });
      entry.el.append(entry.reasoningEl, entry.body, entry.tools);
    }
    (container || list).append(entry.el);
    S.messages.set(id, entry);
    if (acts() && !String(id).startsWith("pending-")) acts().decorate(entry);
    deps.updateWelcome();
    return entry;
  }

  function renderHuman(msg, container) {
    if ((msg.additional_kwargs || {}).hide_from_ui) return;
    const id = msg.id || "human-" + Math.random().toString(36).slice(2);
    if (!S.messages.has(id) && S.pendingHuman) {
      // the optimistic bubble becomes the real message once the server echoes it
      const entry = S.pendingHuman;
      S.messages.delete(entry.id);
      entry.id = id;
      entry.el.dataset.id = id;
      entry.el.classList.remove("pending");
      S.messages.set(id, entry);
      S.pendingHuman = null;
      if (acts()) acts().decorate(entry);
    }
    const entry = entryFor(id, "human", container);
    const text = textOf(msg.content);
    if (entry.text !== text || !entry.final) {
      entry.text = text;
      entry.body.textContent = text; // user text is shown as typed, never as markup
    }
    entry.final = true;
    renderFilesOnMessage(entry, (msg.additional_kwargs || {}).files);
    if (!S.rowRun && window.DFStamps && !String(entry.id).startsWith("pending-")) window.DFStamps.stamp(entry); // live: now
  }

  function renderFilesOnMessage(entry, files) {
    entry.files.replaceChildren();
    if (!Array.isArray(files)) return;
    for (const f of files) {
      const name = f.filename || basename(f.path || "");
      entry.files.append(h("li", { class: "file-chip", title: f.path || name }, icon("file"), name, f.size ? h("span", { class: "muted", text: " " + formatSize(f.size) }) : null));
    }
  }

  function renderAi(msg, container) {
    if ((msg.additional_kwargs || {}).hide_from_ui) return;
    const entry = entryFor(msg.id, "ai", container);
    if (S.rowRun && !entry.runId) entry.runId = S.rowRun; // from history: the run that wrote it
    if (S.runId && !entry.runId) entry.runId = S.runId; // a live answer: rated once its run ends
    if (entry.runId) entry.el.dataset.run = entry.runId;
    entry.text = textOf(msg.content);
    entry.reasoning = reasoningOf(msg);
    entry.final = true;
    entry.el.classList.remove("streaming");
    paintAi(entry);
    if (!S.rowRun && window.DFStamps && (entry.text || "").trim()) {
      const rm = msg.response_metadata || {};
      window.DFStamps.stamp(entry, null, rm.deerflow_model || rm.model_name || ""); // live: now, by the model that answered
    }
    const kw = msg.additional_kwargs || {};
    if (kw.deerflow_error_fallback && !entry.retry) {
      // the provider failed for good, or the model answered nothing: say so where it happened and offer a retry
      entry.el.classList.add("failed");
      entry.retry = window.DFKit.errorBox("This turn failed.", kw.error && kw.error.detail, () => deps.retryFrom(entry));
      entry.el.append(entry.retry);
    }
    for (const call of msg.tool_calls || []) upsertToolCard(entry, { id: call.id, name: call.name, args: call.args, final: true });
    for (const bad of msg.invalid_tool_calls || []) {
      if (bad && bad.id) upsertToolCard(entry, { id: bad.id, name: bad.name || "tool", argsText: bad.args || "", final: true, error: bad.error || "invalid arguments" });
    }
  }

  function paintAi(entry) {
    if (entry.reasoning) {
      entry.reasoningEl.hidden = false;
      entry.reasoningEl.querySelector(".reasoning-body").textContent = entry.reasoning;
    }
    if (entry.painted !== entry.text) {
      md().render(entry.body, entry.text);
      entry.painted = entry.text;
      if (web()) web().sources(entry);
    }
    entry.body.hidden = !entry.text;
  }

  function schedulePaint(entry) {
    if (S.renderQueued.has(entry)) return;
    S.renderQueued.add(entry);
    requestAnimationFrame(() => {
      S.renderQueued.delete(entry);
      paintAi(entry);
      window.DFScroll.follow();
    });
  }

  function applyChunk(chunk) {
    if (!chunk || !chunk.id) return;
    if (chunk.type === "tool" || chunk.type === "ToolMessageChunk") { renderTool(chunk); return; }
    if (!isAi(chunk.type)) return;
    const known = S.messages.get(chunk.id);
    if (known && known.final) return; // complete already (history or snapshot): chunks would duplicate
    if (textOf(chunk.content) || (chunk.additional_kwargs || {}).reasoning_content || (chunk.tool_call_chunks || []).length) working().done();
    const entry = entryFor(chunk.id, "ai");
    if (S.runId) { entry.runId = entry.runId || S.runId; entry.el.dataset.run = S.runId; }
    entry.el.classList.add("streaming");
    entry.text += textOf(chunk.content);
    const kw = chunk.additional_kwargs || {};
    if (typeof kw.reasoning_content === "string") entry.reasoning += kw.reasoning_content;
    for (const part of chunk.tool_call_chunks || []) {
      const idx = part.index === undefined || part.index === null ? entry.toolCalls.length : part.index;
      let call = entry.toolCalls[idx];
      if (!call) { call = entry.toolCalls[idx] = { id: null, name: "", argsText: "" }; }
      if (part.id) call.id = part.id;
      if (part.name) call.name = part.name;
      if (part.args) call.argsText += part.args;
      if (call.id) upsertToolCard(entry, { id: call.id, name: call.name, argsText: call.argsText, final: false });
    }
    schedulePaint(entry);
  }



  function renderRow(row, container) {
    const msg = row.content || {};
    S.rowRun = row.run_id || null;
    if (msg.type === "human") renderHuman(msg, container);
    else if (isAi(msg.type)) {
      renderAi(msg, container);
      if (fb()) fb().attach(S.messages.get(msg.id), row.run_id, msg.id, row.feedback);
    } else if (msg.type === "tool") {
      renderTool(msg);
      // a clarification answered in an earlier visit: shown as the answered card, not a tool card
      if (msg.name === "ask_clarification" && acts()) acts().answeredClarification(msg, S.toolCards.get(msg.tool_call_id));
    }
    S.rowRun = null;
    const entry = msg.id && S.messages.get(msg.id);
    if (entry && window.DFStamps && (msg.type === "human" || (entry.text || "").trim())) {
      window.DFStamps.stamp(entry, row.created_at, isAi(msg.type) ? ((row.metadata || {}).model_name || "") : "");
    }
    if (entry && row.run_id) { entry.runId = entry.runId || row.run_id; entry.el.dataset.run = row.run_id; } // where a "Stopped" marker goes
  }

  /* A `values` snapshot: every message upserts by id; those older than the loaded history
   * page stay unloaded ("Load earlier" fetches them). */
  function applySnapshot(messages) {
    let seenKnown = false;
    for (const msg of messages) {
      if (!msg || !msg.id) continue;
      const known = S.messages.has(msg.id) || (msg.type === "tool" && S.toolCards.has(msg.tool_call_id));
      if (!known && !seenKnown && S.hasMore) continue;
      seenKnown = seenKnown || known;
      if (msg.type === "human") renderHuman(msg);
      else if (isAi(msg.type)) renderAi(msg);
      else if (msg.type === "tool") renderTool(msg);
    }
  }

  /* An earlier history page goes above what is shown, the reader's place kept. */
  function prependRows(rows, scroller) {
    const holder = document.createElement("div");
    const keepScroll = scroller.scrollHeight - scroller.scrollTop;
    rows.forEach((r) => renderRow(r, holder));
    list.prepend(...holder.children);
    scroller.scrollTop = scroller.scrollHeight - keepScroll;
  }

  /* A replay rewrites the latest turn: its question comes back from the run, so the old
   * bubble and answer leave the page now (the history reload at the end is authoritative). */
  function dropLastTurn() {
    const questions = list.querySelectorAll(".msg.user");
    const last = questions[questions.length - 1];
    if (!last) return;
    let node = last;
    while (node) {
      const next = node.nextElementSibling;
      const entry = S.messages.get(node.dataset.id);
      if (entry) { S.messages.delete(entry.id); for (const c of entry.el.querySelectorAll(".tool-card")) { for (const [k, v] of S.toolCards) if (v === c) S.toolCards.delete(k); } }
      node.remove();
      node = next;
    }
  }

  window.DFTranscript = { init, textOf, isAi, entryFor, renderHuman, renderAi, renderFilesOnMessage, applyChunk, renderRow,
                          applySnapshot, prependRows, dropLastTurn };
})();
