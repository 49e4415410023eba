/* DeerFlow chat workspace: threads sidebar, conversation, streaming over the thread
 * websocket, clarification, plan todos, uploads and the files panel.
 *
 * One rule keeps reloads, reconnects and live streams consistent: every message is keyed
 * by its id. History rows, stream chunks and `values` snapshots all upsert into the same
 * map, so a replayed event or a snapshot never duplicates text; a message that is already
 * complete ignores further chunks. The websocket resumes after the last event id seen. */
(function () {
  "use strict";

  const boot = JSON.parse(document.getElementById("boot").textContent);
  const $ = (id) => document.getElementById(id);
  const md = () => window.DFMarkdown;
  const picker = () => window.DFAgentPicker;
  const modes = () => window.DFModes; // modes.js: the thread's mode and the model picker
  const working = () => window.DFWorking; // working.js: "Thinking…" and the stopped marker
  const viewer = () => window.DFViewer; // viewer.js: the files panel and the file viewer
  const STREAM_MODES = ["messages-tuple", "values", "updates", "custom"];

  const S = {
    threadId: boot.thread_id,
    runId: null,
    lastEventId: null,
    running: false,
    queue: [],
    messages: new Map(), // id -> entry {id, type, el, final, text, reasoning, toolCalls}
    toolCards: new Map(), // tool_call_id -> card element
    pendingHuman: null,
    interrupt: null,
    hasMore: false,
    nextBeforeSeq: null,
    threads: [],
    lastInput: null,
    renderQueued: new Set(),
    titleFromUser: false,
  };

  const el = {
    messages: $("messages"), conversation: $("conversation"), input: $("input"), composer: $("composer"),
    send: $("send"), stop: $("stop"), note: $("composer-note"), title: $("thread-title"), welcome: $("welcome"),
    threadList: $("thread-list"),
    connection: $("connection"),
    todos: $("todos"), todoList: $("todo-list"), todosProgress: $("todos-progress"),
    attachments: $("attachments"),
    fileInput: $("file-input"), dropHint: $("drop-hint"), loadEarlier: $("load-earlier"), sidebar: $("sidebar"),
    scrim: $("scrim"),
  };

  // ---------------------------------------------------------------- small helpers

  const { h, icon, csrf, api, shorten, formatSize, basename } = window.DFKit;

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

  function scrollToEnd(force) { window.DFScroll.follow(force); }

  function setNote(text, kind) {
    el.note.textContent = text || "";
    el.note.className = "composer-note small " + (kind === "error" ? "error-text" : "muted");
  }

  function updateWelcome() {
    const empty = el.messages.children.length === 0 && !S.running;
    el.welcome.hidden = !(empty && !$("no-model"));
  }

  // ---------------------------------------------------------------- rendering messages

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
    (container || el.messages).append(entry.el);
    S.messages.set(id, entry);
    if (acts() && !String(id).startsWith("pending-")) acts().decorate(entry);
    updateWelcome();
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
    const kw = msg.additional_kwargs || {};
    if (kw.deerflow_error_fallback && !entry.retry) {
      // the model provider failed for good: say so where it happened and offer a retry
      entry.el.classList.add("failed");
      entry.retry = h("div", { class: "run-error", role: "alert" },
        h("span", { text: (kw.error && kw.error.detail) ? shorten(kw.error.detail, 200) : "The model call failed." }),
        h("button", { type: "button", class: "button secondary", text: "Retry", onclick: () => retryFrom(entry) }));
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
      scrollToEnd();
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

  const web = () => window.DFWebTools; // web_tools.js: result lists on web cards, sources under answers
  const subs = () => window.DFSubagents; // subagents.js: the task tool's card
  const fb = () => window.DFFeedback; // feedback.js: thumbs under an answer
  const gov = () => window.DFGovernance; // governance.js: approval card, budget notice
  const acts = () => window.DFMessageActions; // message_actions.js: copy, regenerate, edit, branch

  // tool_cards.js: the card of each tool call (status pill, arguments, result, presented files)
  const upsertToolCard = (entry, call) => window.DFToolCards.upsert(entry, call);
  const setToolStatus = (card, status, detail) => window.DFToolCards.setStatus(card, status, detail);
  const renderTool = (msg) => window.DFToolCards.result(msg);

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
    if (entry && row.run_id) { entry.runId = entry.runId || row.run_id; entry.el.dataset.run = row.run_id; } // where a "Stopped" marker goes
  }

  function applyValues(values) {
    if (!values) return;
    if (typeof values.title === "string" && values.title && !S.titleFromUser) setTitle(values.title);
    if ("todos" in values) renderTodos(values.todos);
    if (Array.isArray(values.artifacts)) viewer().setArtifacts(values.artifacts);
    if (Array.isArray(values.delegations) && subs()) subs().onLedger(values.delegations);
    if (Array.isArray(values.messages)) {
      let seenKnown = false;
      for (const msg of values.messages) {
        if (!msg || !msg.id) continue;
        const known = S.messages.has(msg.id) || (msg.type === "tool" && S.toolCards.has(msg.tool_call_id));
        // messages older than the loaded history page stay unloaded ("Load earlier" fetches them)
        if (!known && !seenKnown && S.hasMore) continue;
        seenKnown = seenKnown || known;
        if (msg.type === "human") renderHuman(msg);
        else if (isAi(msg.type)) renderAi(msg);
        else if (msg.type === "tool") renderTool(msg);
      }
    }
    scrollToEnd();
  }

  // ---------------------------------------------------------------- todos, title, files

  function renderTodos(todos) {
    if (!Array.isArray(todos) || todos.length === 0) { el.todos.hidden = true; el.todoList.replaceChildren(); return; }
    el.todos.hidden = false;
    const icons = { completed: "circle-check", in_progress: "circle-dot", pending: "circle" };
    el.todoList.replaceChildren(...todos.map((t) => h("li", { class: "todo " + (t.status || "pending"), "data-status": t.status || "pending" },
      h("span", { class: "todo-icon", "aria-hidden": "true" }, icon(icons[t.status] || "circle")),
      h("span", { class: "todo-text", text: t.content || "" }),
      h("span", { class: "visually-hidden", text: ` (${(t.status || "pending").replace("_", " ")})` }))));
    const done = todos.filter((t) => t.status === "completed").length;
    el.todosProgress.textContent = `${done}/${todos.length}`;
  }

  function setTitle(title) {
    el.title.textContent = title || "New chat";
    document.title = (title ? title + " · " : "") + "DeerFlow";
    if (sidebar()) sidebar().setTitle(S.threadId, title);
  }

  // ---------------------------------------------------------------- clarification

  function showClarification(value) {
    working().done();
    if (value && value.type === "approval" && gov()) {
      clearClarification();
      S.interrupt = value;
      gov().show(value, el.messages);
      const callCard = value.tool_call_id && S.toolCards.get(value.tool_call_id);
      if (callCard) setToolStatus(callCard, "waiting");
      updateWelcome();
      scrollToEnd(true);
      return;
    }
    if (!value || value.type !== "clarification") return;
    clearClarification();
    S.interrupt = value;
    // clarify.js builds the card for the question's mode (free text, choices, a form)
    const card = window.DFClarify.card(value, answerClarification, () => setNote("Choose or type an answer first.", "error"));
    el.messages.append(card);
    const callCard = value.tool_call_id && S.toolCards.get(value.tool_call_id);
    if (callCard) setToolStatus(callCard, "waiting");
    setNote("The agent is waiting for your answer — you can also type it below.");
    updateWelcome();
    scrollToEnd(true);
  }

  function clearClarification() {
    const old = $("clarify");
    if (old) old.remove();
    if (gov()) gov().clear();
    S.interrupt = null;
  }

  function answerClarification(answer) {
    window.DFClarify.markAnswered($("clarify"), answer);
    S.interrupt = null;
    setNote("");
    startRun({ command: { resume: answer } });
  }

  // ---------------------------------------------------------------- runs and the websocket

  function context() {
    const ctx = modes().context();
    return picker() ? picker().context(ctx) : ctx;
  }

  async function ensureThread() {
    if (S.threadId) return S.threadId;
    const thread = await api("POST", "/threads", {
      metadata: { ...modes().threadMetadata(), ...(picker() ? picker().threadMetadata() : {}) },
      assistant_id: picker() ? picker().assistantId() : "lead_agent",
    });
    if (picker()) picker().lock();
    S.threadId = thread.thread_id;
    history.replaceState(null, "", `/c/${encodeURIComponent(S.threadId)}/`);
    loadThreads();
    return S.threadId;
  }

  function setRunning(running) {
    S.running = running;
    el.stop.hidden = !running;
    el.send.hidden = running;
    document.body.classList.toggle("is-running", running);
    if (!running) {
      working().done();
      for (const card of S.toolCards.values()) if (card.dataset.status === "running") setToolStatus(card, "cancelled");
      for (const entry of S.messages.values()) entry.el.classList.remove("streaming");
    }
    updateWelcome();
  }

  async function send(text) {
    text = (text || "").trim();
    if (acts() && !S.interrupt && acts().onCommand(text)) { el.input.value = ""; autoGrow(); return; } // "/goal …"
    const ready = window.DFAttach.ready();
    if (!text && ready.length === 0) return;
    if (window.DFAttach.uploading()) { setNote("Wait for the uploads to finish.", "error"); return; }
    if (S.interrupt && S.interrupt.type === "approval") { setNote("Approve or deny the action above first.", "error"); return; }
    if (S.interrupt) {
      el.input.value = "";
      autoGrow();
      answerClarification(text);
      return;
    }
    if (S.running) {
      // one run at a time per thread: keep the message and send it when this run ends
      S.queue.push(text);
      el.input.value = "";
      autoGrow();
      setNote(`Queued ${S.queue.length} message${S.queue.length > 1 ? "s" : ""}: sent when the current answer finishes.`);
      return;
    }
    el.input.value = "";
    autoGrow();
    const files = ready.map((a) => ({ filename: a.info.filename, size: a.info.size, path: a.info.virtual_path || a.info.path }));
    const message = { role: "user", content: text || "(see the attached files)" };
    if (files.length) message.additional_kwargs = { files };
    window.DFAttach.clear();
    // optimistic bubble; adopted by the real message when the server echoes it
    const tempId = "pending-" + Date.now();
    const entry = entryFor(tempId, "human");
    entry.el.classList.add("pending");
    entry.body.textContent = message.content;
    renderFilesOnMessage(entry, files);
    S.pendingHuman = entry;
    S.lastInput = message;
    scrollToEnd(true);
    startRun({ input: { messages: [message] } });
  }

  async function startRun(part) {
    setNote("");
    removeErrors();
    if (acts()) acts().clearSuggestions();
    try {
      await ensureThread();
    } catch (e) {
      showError(e.message);
      return;
    }
    setRunning(true);
    S.runId = null;
    S.lastEventId = null;
    working().start(el.messages);
    const payload = Object.assign({
      assistant_id: picker() ? picker().assistantId() : "lead_agent",
      stream_mode: STREAM_MODES,
      on_disconnect: "continue",
      context: context(),
      config: { recursion_limit: 1000 },
    }, part);
    wsSend({ type: "run", payload });
  }

  function stopRun() {
    if (!S.running) return;
    wsSend({ type: "cancel", run_id: S.runId || undefined });
    setNote("Stopping…");
  }

  // socket.js: the transport (outbox, reconnect with backoff); on open it re-subscribes
  // after the last event seen, or to whatever runs now when no run is being started
  const sock = window.DFSocket.create({
    path: boot.ws_path,
    threadId: () => S.threadId,
    hello: (starting) => S.runId ? { type: "subscribe", run_id: S.runId, after: S.lastEventId || undefined } : (starting ? null : { type: "subscribe" }),
    onMessage: (msg) => onServerMessage(msg),
    onStatus: (text, error) => showConnection(text, error),
    onFinal: () => setRunning(false),
  });
  const wsSend = (msg) => sock.send(msg);
  const connect = () => sock.connect();

  function showConnection(text, error) {
    el.connection.hidden = !text;
    el.connection.textContent = text;
    el.connection.classList.toggle("error", !!error);
  }

  function onServerMessage(msg) {
    if (msg.type === "run_created") {
      S.runId = msg.run.run_id;
      if (S.pendingHuman) S.pendingHuman.el.dataset.run = S.runId;
      S.lastEventId = null;
      loadThreads(); // a new chat is listed from its first run on (drafts are not)
      return;
    }
    if (msg.type === "idle") {
      if (!sock.queued() && S.running && !S.runId) setRunning(false);
      return;
    }
    if (msg.type === "error") {
      if (S.running && !S.runId) {
        setRunning(false);
        if (S.pendingHuman) { S.pendingHuman.el.remove(); S.messages.delete(S.pendingHuman.id); S.pendingHuman = null; }
      }
      showError(msg.detail || "The request was refused.", msg.status !== 409);
      return;
    }
    if (msg.type !== "event") return;
    if (S.runId && msg.run_id !== S.runId) return; // a stale run's tail
    if (!S.runId) { S.runId = msg.run_id; }
    if (!S.running && msg.event !== "end") setRunning(true);
    S.lastEventId = msg.id;
    handleEvent(msg.event, msg.data);
  }

  function handleEvent(event, data) {
    const base = event.split("|")[0];
    if (base === "messages" && Array.isArray(data)) applyChunk(data[0]);
    else if (base === "values") applyValues(data);
    else if (base === "custom" && event === "custom") {
      if (subs()) subs().onEvent(data);
      if (acts()) acts().onCustom(data);
    }
    else if (base === "updates" && data && typeof data === "object") {
      if (Array.isArray(data.__interrupt__)) for (const it of data.__interrupt__) showClarification(it && it.value);
      for (const v of Object.values(data)) {
        if (v && typeof v === "object" && !Array.isArray(v)) {
          if (typeof v.title === "string" && v.title && !S.titleFromUser) setTitle(v.title);
          if (Array.isArray(v.todos)) renderTodos(v.todos);
        }
      }
    } else if (base === "error") {
      const detail = (data && (data.message || data.error)) || "The run failed.";
      showError(detail, true);
    } else if (base === "gap") {
      // the server no longer has the events we missed: reload what is stored, then follow
      reloadThread().then(() => {
        S.lastEventId = data && data.latest_available_event_id;
        if (S.runId) wsSend({ type: "subscribe", run_id: S.runId, after: S.lastEventId || undefined });
      });
    } else if (base === "end") {
      finishRun();
    }
    scrollToEnd();
  }

  function finishRun() {
    const ended = S.runId;
    if (ended && fb()) for (const entry of S.messages.values()) if (entry.runId === ended) fb().attach(entry, ended, entry.id);
    if (acts()) acts().onRunEnd(S.runId, S.following);
    S.following = null;
    S.runId = null;
    S.lastEventId = null;
    setRunning(false);
    if (!S.interrupt) setNote("");
    loadThreads();
    viewer().refresh();
    if (gov()) gov().refreshBudget();
    if (S.queue.length && !S.interrupt) {
      const next = S.queue.shift();
      setNote(S.queue.length ? `Queued ${S.queue.length} more.` : "");
      send(next);
    }
  }

  /* Follow a run started elsewhere (a regenerate or an edit): its events arrive over the socket. */
  function follow(runId, info) {
    setNote("");
    removeErrors();
    S.following = info || null;
    S.runId = runId;
    S.lastEventId = null;
    setRunning(true);
    if (info && info.replay) dropTurnAfterLastQuestion();
    working().start(el.messages);
    wsSend({ type: "subscribe", run_id: runId });
  }

  /* A replay rewrites the latest turn: its question comes back from the run, so the old
   * bubble and answer leave the page now (the history reload at the end is authoritative). */
  function dropTurnAfterLastQuestion() {
    const questions = el.messages.querySelectorAll(".msg.user");
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

  function retryFrom(entry) {
    // resend the question this answer belongs to: the nearest user message above it
    let node = entry.el.previousElementSibling;
    while (node && !node.classList.contains("user")) node = node.previousElementSibling;
    const human = node && S.messages.get(node.dataset.id);
    if (!human) return;
    if (entry.retry) entry.retry.remove();
    send(human.text); // queued if the failed run has not sent its end yet
  }

  function removeErrors() { el.messages.querySelectorAll(".run-error").forEach((n) => n.remove()); }

  function showError(text, retryable) {
    working().done();
    removeErrors();
    const box = h("div", { class: "run-error", role: "alert" }, h("span", { text: text }));
    if (retryable && S.lastInput) {
      box.append(h("button", { type: "button", class: "button secondary", text: "Retry", onclick: () => {
        box.remove();
        send(S.lastInput.content); // queued if the failed run has not ended yet
      } }));
    }
    el.messages.append(box);
    scrollToEnd(true);
  }

  // ---------------------------------------------------------------- history

  async function loadHistory(beforeSeq) {
    const q = new URLSearchParams({ limit: "50" });
    if (beforeSeq) q.set("before_seq", String(beforeSeq));
    const page = await api("GET", `/threads/${encodeURIComponent(S.threadId)}/messages/page?${q}`);
    const rows = (page.data || []).slice().sort((a, b) => a.seq - b.seq);
    if (beforeSeq) {
      const holder = document.createElement("div");
      const keepScroll = el.conversation.scrollHeight - el.conversation.scrollTop;
      rows.forEach((r) => renderRow(r, holder));
      el.messages.prepend(...holder.children);
      el.conversation.scrollTop = el.conversation.scrollHeight - keepScroll;
    } else {
      rows.forEach((r) => renderRow(r));
    }
    S.hasMore = !!page.has_more;
    S.nextBeforeSeq = page.next_before_seq;
    el.loadEarlier.hidden = !S.hasMore;
  }

  async function loadThreadMeta() {
    const [thread, state] = await Promise.all([
      api("GET", `/threads/${encodeURIComponent(S.threadId)}`),
      api("GET", `/threads/${encodeURIComponent(S.threadId)}/state`).catch(() => null),
    ]);
    if (picker()) picker().onThread(thread);
    modes().onThread(thread);
    const custom = thread.metadata && thread.metadata.title;
    S.titleFromUser = !!custom;
    setTitle(custom || thread.title || (state && state.values && state.values.title) || "");
    if (state && state.values) {
      if ("todos" in state.values) renderTodos(state.values.todos);
      viewer().setArtifacts(state.values.artifacts || []);
      if (subs()) subs().onLedger(state.values.delegations);
    }
    if (state && Array.isArray(state.interrupts) && thread.status === "interrupted") {
      for (const it of state.interrupts) showClarification(it && it.value);
    }
  }

  async function reloadThread() {
    el.messages.replaceChildren();
    S.messages.clear();
    S.toolCards.clear();
    if (web()) web().reset();
    if (subs()) subs().reset();
    await loadHistory();
    working().markHistory(S.threadId, el.messages);
    await loadThreadMeta();
    if (acts()) acts().refresh();
  }

  // ---------------------------------------------------------------- sidebar
  // The list itself lives in sidebar.js (grouping, search, pins, rename, delete, keys).

  const sidebar = () => window.DFSidebar;
  function loadThreads() { if (sidebar()) sidebar().refresh(); }

  // ---------------------------------------------------------------- uploads

  // attach.js: files picked or dropped for the next message (checks, progress, removal)
  const addFiles = (files) => window.DFAttach.add(files);

  // A chat created only to hold an upload, whose uploads were all taken back before the first
  // message, is not a chat: delete it rather than leave an empty thread behind.
  async function discardDraft() {
    if (!S.threadId || S.messages.size || S.running || S.runId) return;
    const draft = S.threadId;
    try { await api("DELETE", `/threads/${encodeURIComponent(draft)}`); } catch (e) { return; }
    if (S.threadId !== draft) return;
    S.threadId = null;
    window.DFAttach.forgetLimits();
    history.replaceState(null, "", "/");
    viewer().clear();
    loadThreads();
  }

  // ---------------------------------------------------------------- composer and controls

  function autoGrow() {
    el.input.style.height = "auto";
    el.input.style.height = Math.min(el.input.scrollHeight, 240) + "px";
  }

  function setupControls() {
    el.composer.addEventListener("submit", (ev) => { ev.preventDefault(); send(el.input.value); });
    el.input.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) { ev.preventDefault(); send(el.input.value); }
      else if (acts() && acts().onComposerKey(ev, el.input)) { /* ↑ edits the last question */ }
    });
    el.input.addEventListener("input", autoGrow);
    el.stop.addEventListener("click", stopRun);
    document.addEventListener("keydown", (ev) => {
      if (ev.key === "Escape") {
        if (viewer().isOpen()) { ev.preventDefault(); viewer().close(); }
        else if (S.running) { ev.preventDefault(); stopRun(); }
        else if (viewer().filesOpen()) viewer().openFiles(false);
        else closeSidebar();
      }
    });
    document.querySelectorAll(".example").forEach((b) => b.addEventListener("click", () => { el.input.value = b.textContent; autoGrow(); el.input.focus(); }));
    $("attach").addEventListener("click", () => el.fileInput.click());
    el.fileInput.addEventListener("change", () => { addFiles(el.fileInput.files); el.fileInput.value = ""; });
    el.loadEarlier.addEventListener("click", () => loadHistory(S.nextBeforeSeq));
    $("todos-head").addEventListener("click", () => {
      const open = el.todoList.hidden;
      el.todoList.hidden = !open;
      $("todos-head").setAttribute("aria-expanded", String(open));
    });
    $("open-sidebar").addEventListener("click", openSidebar);
    $("close-sidebar").addEventListener("click", closeSidebar);
    el.scrim.addEventListener("click", closeSidebar);

    // drag and drop anywhere over the chat
    let depth = 0;
    const chat = document.querySelector(".chat");
    chat.addEventListener("dragenter", (ev) => { if (hasFiles(ev)) { depth++; el.dropHint.hidden = false; chat.classList.add("dragging"); } });
    chat.addEventListener("dragover", (ev) => { if (hasFiles(ev)) ev.preventDefault(); });
    chat.addEventListener("dragleave", () => { depth = Math.max(0, depth - 1); if (!depth) { el.dropHint.hidden = true; chat.classList.remove("dragging"); } });
    chat.addEventListener("drop", (ev) => {
      if (!hasFiles(ev)) return;
      ev.preventDefault();
      depth = 0;
      el.dropHint.hidden = true;
      chat.classList.remove("dragging");
      addFiles(ev.dataTransfer.files);
    });
  }

  function hasFiles(ev) { return ev.dataTransfer && [...(ev.dataTransfer.types || [])].includes("Files"); }
  function openSidebar() { document.body.classList.add("sidebar-open"); el.scrim.hidden = false; }
  function closeSidebar() { document.body.classList.remove("sidebar-open"); el.scrim.hidden = true; }

  // ---------------------------------------------------------------- start

  async function start() {
    setupControls();
    modes().init({ api, setNote, threadId: () => S.threadId, models: boot.models || [] });
    viewer().init({ api, setNote, threadId: () => S.threadId });
    window.DFAttach.init({ api, ensureThread, setNote, threadId: () => S.threadId, list: el.attachments,
                           uploaded: () => viewer().refresh(), emptied: () => discardDraft() });
    window.DFToolCards.init({ cards: S.toolCards, textOf, running: () => S.running, runId: () => S.runId });
    window.DFScroll.init(el.conversation, el.messages, $("jump-latest"));
    if (acts()) {
      acts().init({ api, setNote, follow, send, ensureThread, threadId: () => S.threadId, running: () => S.running, messages: () => S.messages,
                    messagesEl: () => el.messages, reload: reloadThread });
    }
    if (subs()) subs().init({ api, threadId: () => S.threadId, setToolStatus });
    if (fb()) fb().init({ api, threadId: () => S.threadId });
    if (gov()) gov().init({ api, setNote, resume: (answer) => { S.interrupt = null; setNote(""); startRun({ command: { resume: answer } }); } });
    if (sidebar()) {
      sidebar().init({
        api, setNote, threadId: () => S.threadId,
        agentTag: (assistantId) => (picker() ? picker().tagFor(assistantId) : null),
        onRenamed: (threadId, title) => { if (threadId === S.threadId) { S.titleFromUser = true; setTitle(title); } },
      });
    }
    if (S.threadId) {
      try {
        await loadHistory();
        await loadThreadMeta();
        if (acts()) await acts().onHistory();
      } catch (e) {
        showError("Could not load this chat: " + e.message, false);
      }
      updateWelcome();
      viewer().refresh();
      scrollToEnd(true);
      connect(); // subscribes: re-attaches to a run still in progress
    } else {
      updateWelcome();
    }
    // the composer gets the focus unless the user already put it somewhere while the thread loaded
    const idle = !document.activeElement || document.activeElement === document.body;
    if (!el.input.disabled && idle) el.input.focus();
    document.body.dataset.ready = "1";
  }

  window.addEventListener("beforeunload", () => sock.stop());
  // a seam for the browser tests and for debugging from the console: drop the socket as a
  // flaky network would (the client reconnects and resumes after the last event id)
  window.DeerFlowChat = {
    dropConnection() { sock.drop(); },
    state() { return { threadId: S.threadId, runId: S.runId, lastEventId: S.lastEventId, running: S.running }; },
  };
  start();
})();
