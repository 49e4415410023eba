/* DeerFlow chat workspace: the run, the thread websocket, the composer and the pieces of
 * the page, each in its own file (transcript.js keeps the messages, clarify.js the agent's
 * question, todos.js the plan, tool_cards.js, viewer.js, attach.js, sidebar.js, ...).
 *
 * One rule keeps reloads, reconnects and live streams consistent: every message is keyed by
 * its id (transcript.js). The websocket resumes after the last event id seen. */
(function () {
  "use strict";

  const boot = JSON.parse(document.getElementById("boot").textContent);
  const $ = (id) => document.getElementById(id);
  const picker = () => window.DFAgentPicker;
  const modes = () => window.DFModes; // modes.js: the thread's mode and the model picker
  const working = () => window.DFWorking; // working.js: "Thinking…" and the stopped marker
  const viewer = () => window.DFViewer; // viewer.js: the files panel and the file viewer
  const STREAM_MODES = ["messages-tuple", "values", "updates", "custom"];

  // A uuid4 of the page's own: crypto.randomUUID exists only on https and localhost.
  function newThreadId() {
    if (window.crypto.randomUUID) return window.crypto.randomUUID();
    const b = window.crypto.getRandomValues(new Uint8Array(16));
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    const hex = Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  }

  const S = {
    threadId: boot.thread_id,
    // A new chat names its thread before it exists, so its socket can open at page load and
    // the first message creates the thread and starts the run in one step (docs/api.md#websocket).
    newThreadId: boot.thread_id ? null : newThreadId(),
    threadSaved: !!boot.thread_id, // the server has the thread (false while the first message is on its way)
    creating: null, // {promise, resolve, reject} while the first message creates the thread
    listStale: false, // the sidebar is refreshed at a new run's first chunk, not before its model request
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
    attachments: $("attachments"),
    fileInput: $("file-input"), dropHint: $("drop-hint"), loadEarlier: $("load-earlier"), sidebar: $("sidebar"),
    scrim: $("scrim"),
  };

  // ---------------------------------------------------------------- small helpers

  const { h, api } = window.DFKit;

  function scrollToEnd(force) { window.DFScroll.follow(force); }

  function setNote(text, kind) {
    el.note.textContent = text || "";
    el.note.className = "composer-note small " + (kind === "error" ? "error-text" : "muted");
  }

  function updateWelcome() {
    const empty = el.messages.children.length === 0 && !S.running;
    el.welcome.hidden = !(empty && !$("no-model"));
  }

  const web = () => window.DFWebTools; // web_tools.js: result lists on web cards, sources under answers
  const subs = () => window.DFSubagents; // subagents.js: the task tool's card
  const fb = () => window.DFFeedback; // feedback.js: thumbs under an answer
  const changes = () => window.DFWorkspaceChanges; // workspace_changes.js: the files a run changed
  const gov = () => window.DFGovernance; // governance.js: approval card, budget notice
  const acts = () => window.DFMessageActions; // message_actions.js: copy, regenerate, edit, branch
  // tool_cards.js: the card of each tool call (status pill, arguments, result, presented files)
  const upsertToolCard = (entry, call) => window.DFToolCards.upsert(entry, call);
  const setToolStatus = (card, status, detail) => window.DFToolCards.setStatus(card, status, detail);

  // transcript.js: the messages, keyed by id (history rows, stream chunks, snapshots)
  const transcript = window.DFTranscript;
  const { textOf, entryFor, renderFilesOnMessage, applyChunk, renderRow, applySnapshot } = transcript;
  // clarify.js: the agent's question (or an approval) waiting for the user's answer
  const showClarification = (value) => window.DFClarify.show(value);
  const renderTodos = (todos) => window.DFTodos.render(todos); // todos.js: the plan panel
  const clearClarification = () => window.DFClarify.clear();
  const answerClarification = (answer) => window.DFClarify.answer(answer);


  function applyValues(values) {
    if (!values) return;
    if (typeof values.title === "string" && values.title && !S.titleFromUser) setTitle(values.title);
    if ("todos" in values) renderTodos(values.todos);
    if (Array.isArray(values.artifacts)) viewer().setArtifacts(values.artifacts);
    if (Array.isArray(values.delegations) && subs()) subs().onLedger(values.delegations);
    if (Array.isArray(values.messages)) applySnapshot(values.messages);
    scrollToEnd();
  }

  // ---------------------------------------------------------------- title

  function setTitle(title) {
    el.title.textContent = title || "New chat";
    document.title = (title ? title + " · " : "") + "DeerFlow";
    if (sidebar()) sidebar().setTitle(S.threadId, title);
  }

  // ---------------------------------------------------------------- runs and the websocket

  function context() {
    const ctx = modes().context();
    return picker() ? picker().context(ctx) : ctx;
  }

  function newThreadMetadata() {
    return { ...modes().threadMetadata(), ...(picker() ? picker().threadMetadata() : {}) };
  }

  function adoptThread(threadId) {
    if (picker()) picker().lock();
    S.threadId = threadId;
    history.replaceState(null, "", `/c/${encodeURIComponent(S.threadId)}/`);
  }

  /* The thread, created now over HTTP if the page has none yet (an upload before the first
   * message, a goal); it takes the id the page's socket is already open for. */
  async function ensureThread() {
    if (S.creating) return S.creating.promise;
    if (S.threadId) return S.threadId;
    const thread = await api("POST", "/threads", {
      thread_id: S.newThreadId,
      metadata: newThreadMetadata(),
      assistant_id: picker() ? picker().assistantId() : "lead_agent",
    });
    S.threadSaved = true;
    adoptThread(thread.thread_id);
    loadThreads();
    return S.threadId;
  }

  // The first message's run message carries the thread's creation; the page shows the chat's
  // address at once, and takes it back if the server refuses (then nothing was created).
  function beginCreating() {
    let resolve, reject;
    const promise = new Promise((res, rej) => { resolve = res; reject = rej; });
    promise.catch(() => {});
    S.creating = { promise, resolve, reject };
    adoptThread(S.newThreadId);
    return { metadata: newThreadMetadata() };
  }

  function creationDone(error) {
    const creating = S.creating;
    if (!creating) return;
    S.creating = null;
    if (!error) {
      S.threadSaved = true;
      creating.resolve(S.threadId);
      return;
    }
    S.threadId = null;
    history.replaceState(null, "", "/");
    if (picker() && picker().unlock) picker().unlock();
    if (error.status === 404) { S.newThreadId = newThreadId(); connect(); } // the id was taken: the retry gets another
    creating.reject(new Error(error.detail || "The chat could not be created."));
  }

  function setRunning(running) {
    S.running = running;
    el.stop.hidden = !running;
    el.send.hidden = running;
    document.body.classList.toggle("is-running", running);
    if (acts()) acts().onRunning(running);
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
    entry.typed = text;
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
    let creation = null;
    if (!S.threadId) creation = beginCreating();
    else if (S.creating) {
      try { await S.creating.promise; } catch (e) { showError(e.message); return; }
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
    wsSend(creation ? { type: "run", payload, thread: creation } : { type: "run", payload });
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
    threadId: () => S.threadId || S.newThreadId,
    query: () => (S.threadSaved ? "" : "?new=1"),
    // A thread not created yet has nothing to subscribe to (and an "idle" answer arriving after
    // the first message went out would end its run on the page); a dropped socket while the
    // first message is on its way re-subscribes to learn whether its run started.
    hello: (starting) => S.runId ? { type: "subscribe", run_id: S.runId, after: S.lastEventId || undefined }
      : (starting || !(S.threadSaved || S.creating) ? null : { type: "subscribe" }),
    onMessage: (msg) => onServerMessage(msg),
    onStatus: (text, error) => showConnection(text, error),
    // Closed for good (signed out, the chat gone) while a new chat's first message was on its
    // way: the thread was never created, so whatever waits on its creation (an upload) is told
    // why, and the message goes back to the composer instead of being lost.
    onFinal: (reason) => {
      if (S.creating && !S.runId) {
        creationDone({ detail: reason });
        if (S.pendingHuman) {
          const text = S.pendingHuman.typed || "";
          S.pendingHuman.el.remove();
          S.messages.delete(S.pendingHuman.id);
          S.pendingHuman = null;
          if (!el.input.value) { el.input.value = text; autoGrow(); }
        }
      }
      setRunning(false);
    },
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
      creationDone(null);
      // A new chat is listed from its first run on (drafts are not); the list is asked for at
      // the run's first chunk, so that its query does not delay the model request.
      S.listStale = true;
      return;
    }
    if (msg.type === "idle") {
      if (!sock.queued() && S.running && !S.runId) setRunning(false);
      return;
    }
    if (msg.type === "error") {
      if (S.creating && S.running && !S.runId) creationDone(msg);
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
    if (S.listStale && msg.event !== "metadata") { S.listStale = false; if (msg.event !== "end") loadThreads(); } // finishRun lists at the end
    handleEvent(msg.event, msg.data);
  }

  function handleEvent(event, data) {
    const base = event.split("|")[0];
    if (base === "messages" && Array.isArray(data)) applyChunk(data[0]);
    else if (base === "values") applyValues(data);
    else if (base === "custom" && event === "custom") {
      if (subs()) subs().onEvent(data);
      if (acts()) acts().onCustom(data);
      if (window.DFBrowserView) window.DFBrowserView.onCustom(data);
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
    if (ended && changes()) changes().showFor(ended);
    if (acts()) acts().onRunEnd(S.runId, S.following);
    if (window.DFBrowserView) window.DFBrowserView.onRunEnd();
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
    if (info && info.replay) transcript.dropLastTurn();
    working().start(el.messages);
    wsSend({ type: "subscribe", run_id: runId });
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
    const box = window.DFKit.errorBox(text, "", retryable && S.lastInput ? () => {
      box.remove();
      send(S.lastInput.content); // queued if the failed run has not ended yet
    } : null);
    el.messages.append(box);
    scrollToEnd(true);
  }

  // ---------------------------------------------------------------- history

  async function loadHistory(beforeSeq) {
    const q = new URLSearchParams({ limit: "50" });
    if (beforeSeq) q.set("before_seq", String(beforeSeq));
    const page = await api("GET", `/threads/${encodeURIComponent(S.threadId)}/messages/page?${q}`);
    const rows = (page.data || []).slice().sort((a, b) => a.seq - b.seq);
    if (beforeSeq) transcript.prependRows(rows, el.conversation);
    else rows.forEach((r) => renderRow(r));
    S.hasMore = !!page.has_more;
    S.nextBeforeSeq = page.next_before_seq;
    el.loadEarlier.hidden = !S.hasMore;
    if (changes()) changes().showForHistory();
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
    if (changes()) changes().reset();
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
    S.threadSaved = false;
    S.newThreadId = newThreadId(); // a fresh id, and a socket for it, for the next first message
    connect();
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
    $("open-sidebar").addEventListener("click", openSidebar);
    $("close-sidebar").addEventListener("click", closeSidebar);
    el.scrim.addEventListener("click", closeSidebar);
    window.DFAttach.acceptDrops(document.querySelector(".chat"), el.dropHint);
    window.DFAttach.acceptPaste(el.input);
  }

  // The drawer (phones): opening moves focus into it, closing gives it back to the button that
  // opened it, so a keyboard or screen-reader user is never left behind the scrim.
  function openSidebar() {
    document.body.classList.add("sidebar-open");
    el.scrim.hidden = false;
    $("open-sidebar").setAttribute("aria-expanded", "true");
    requestAnimationFrame(() => $("thread-search").focus());
  }
  function closeSidebar() {
    const wasOpen = document.body.classList.contains("sidebar-open");
    document.body.classList.remove("sidebar-open");
    el.scrim.hidden = true;
    $("open-sidebar").setAttribute("aria-expanded", "false");
    if (wasOpen && document.activeElement && document.activeElement.closest(".sidebar")) $("open-sidebar").focus();
  }

  // ---------------------------------------------------------------- start

  async function start() {
    setupControls();
    modes().init({ api, setNote, threadId: () => S.threadId, models: boot.models || [] });
    viewer().init({ api, setNote, threadId: () => S.threadId });
    window.DFAttach.init({ api, ensureThread, setNote, threadId: () => S.threadId, list: el.attachments,
                           uploaded: () => viewer().refresh(), emptied: () => discardDraft() });
    window.DFTodos.init();
    window.DFTranscript.init({ state: S, list: el.messages, updateWelcome, retryFrom });
    window.DFClarify.init({ state: S, list: el.messages, setNote, updateWelcome, resume: (answer) => startRun({ command: { resume: answer } }) });
    window.DFToolCards.init({ cards: S.toolCards, textOf, running: () => S.running, runId: () => S.runId });
    window.DFScroll.init(el.conversation, el.messages, $("jump-latest"));
    if (acts()) {
      acts().init({ api, setNote, follow, send, ensureThread, threadId: () => S.threadId, running: () => S.running, messages: () => S.messages,
                    messagesEl: () => el.messages, reload: reloadThread });
    }
    if (subs()) subs().init({ api, threadId: () => S.threadId, setToolStatus });
    if (fb()) fb().init({ api, threadId: () => S.threadId });
    if (changes()) changes().init({ api, threadId: () => S.threadId, messages: () => S.messages });
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
      connect(); // opened now for the id the first message will create (?new=1): ready by Enter
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
    ensureThread() { return ensureThread(); },
  };
  start();
})();
