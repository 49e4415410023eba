/* Subagent cards: the `task` tool's card shows its subagent.
 *
 * While a run streams, `custom` task events (API_CONTRACT §2) fill the card live: type,
 * description, status, a step list, model and tokens. After a reload the card is built from
 * the task's ToolMessage (status, usage and model ride in additional_kwargs) and the
 * thread's `delegations` ledger (which run each task belongs to); opening it loads the
 * persisted steps from GET /runs/{run}/events?event_types=subagent.step&task_id=…, a page
 * at a time. Text is always set as textContent: a subagent's output never becomes markup. */
(function () {
  "use strict";

  const STATUS_TEXT = { running: "running…", completed: "done", failed: "failed", cancelled: "stopped", timed_out: "timed out" };
  const TOOL_STATUS = { running: "running", completed: "success", failed: "error", cancelled: "cancelled", timed_out: "error" };
  const PAGE = 200;
  const cards = new Map(); // task_id (tool call id) -> card element
  const ledger = new Map(); // task_id -> delegation entry (run_id, type, status, usage)
  let ctx = null; // { api, threadId, setToolStatus }

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function tokens(usage) {
    const n = usage && (usage.total_tokens || (usage.input_tokens || 0) + (usage.output_tokens || 0));
    return n ? `${n.toLocaleString()} tokens` : "";
  }

  function parts(card) {
    if (card.sub) return card.sub;
    const box = el("div", "subagent");
    const head = el("div", "subagent-head");
    const type = el("span", "subagent-type");
    const status = el("span", "subagent-status", STATUS_TEXT.running);
    head.append(type, status);
    const desc = el("div", "subagent-desc");
    const meta = el("div", "subagent-meta");
    const label = el("div", "tool-section-label", "Steps");
    const steps = el("ol", "subagent-steps");
    steps.setAttribute("aria-label", "Subagent steps");
    const empty = el("div", "subagent-empty", "Open to load the steps.");
    box.append(head, desc, meta, label, steps, empty);
    const body = card.querySelector(".tool-body");
    body.insertBefore(box, body.firstChild);
    card.classList.add("subagent-card");
    card.querySelector(".tool-icon").textContent = "⇉";
    card.sub = { box, type, status, desc, meta, steps, empty, seen: new Set(), loaded: false, live: false };
    card.addEventListener("toggle", () => { if (card.open) loadSteps(card); });
    return card.sub;
  }

  function setStatus(card, status, detail) {
    const p = parts(card);
    card.dataset.subagentStatus = status;
    p.status.textContent = STATUS_TEXT[status] || status;
    p.status.dataset.status = status;
    if (ctx && ctx.setToolStatus) ctx.setToolStatus(card, TOOL_STATUS[status] || "running", detail);
    if (status !== "running") card.dataset.done = "1";
  }

  function setMeta(card, model, usage) {
    const p = parts(card);
    if (model) p.model = model;
    if (usage) p.usage = usage;
    p.meta.textContent = [p.model, tokens(p.usage)].filter(Boolean).join(" · ");
  }

  function addStep(card, step) {
    const p = parts(card);
    const index = step.message_index;
    if (index !== undefined && p.seen.has(index)) return;
    if (index !== undefined) p.seen.add(index);
    const item = el("li", "subagent-step");
    item.dataset.kind = step.kind || "ai";
    let head = "";
    if (step.kind === "tool") head = `result of ${step.tool_name || "tool"}`;
    else if (step.tool_calls && step.tool_calls.length) head = "calls " + step.tool_calls.map((c) => c.name).join(", ");
    if (head) item.append(el("span", "subagent-step-head", head));
    const text = (step.text || "").trim();
    if (text) item.append(el("span", "subagent-step-text", text.length > 300 ? text.slice(0, 300) + "…" : text));
    p.steps.append(item);
    p.empty.hidden = true;
  }

  async function loadSteps(card) {
    const p = parts(card);
    const taskId = card.dataset.callId;
    const entry = ledger.get(taskId);
    if (p.loaded || p.live || !ctx || !entry || !entry.run_id || !ctx.threadId()) return;
    p.loaded = true;
    p.empty.textContent = "Loading steps…";
    let after = null;
    try {
      for (;;) {
        const q = new URLSearchParams({ event_types: "subagent.step", task_id: taskId, limit: String(PAGE) });
        if (after !== null) q.set("after_seq", String(after));
        const rows = await ctx.api("GET", `/threads/${encodeURIComponent(ctx.threadId())}/runs/${encodeURIComponent(entry.run_id)}/events?${q}`);
        for (const row of rows || []) addStep(card, row.content || {});
        if (!rows || rows.length < PAGE) break;
        after = rows[rows.length - 1].seq;
      }
      p.empty.textContent = "No steps were recorded.";
      p.empty.hidden = p.steps.children.length > 0;
    } catch (e) {
      p.loaded = false;
      p.empty.textContent = "Could not load the steps: " + e.message;
    }
  }

  function onCall(card, args) {
    const p = parts(card);
    cards.set(card.dataset.callId, card);
    args = args || {};
    p.type.textContent = args.subagent_type || "general-purpose";
    p.desc.textContent = args.description || "";
    card.querySelector(".tool-name").textContent = "Subagent · " + (args.subagent_type || "general-purpose");
    if (args.description) card.querySelector(".tool-args-summary").textContent = args.description;
    const entry = ledger.get(card.dataset.callId);
    if (entry) applyEntry(card, entry);
  }

  function onEvent(data) {
    if (!data || typeof data !== "object" || typeof data.type !== "string" || !data.type.startsWith("task_")) return;
    const card = cards.get(data.task_id);
    if (!card) return;
    const p = parts(card);
    p.live = true;
    p.empty.hidden = true;
    if (data.type === "task_started") {
      if (data.subagent_type) p.type.textContent = data.subagent_type;
      setStatus(card, "running");
      setMeta(card, data.model_name, null);
    } else if (data.type === "task_running") {
      if (data.step) addStep(card, data.step);
      setMeta(card, null, data.usage);
    } else {
      const status = data.type.slice(5);
      setStatus(card, status, data.error);
      setMeta(card, data.model_name, data.usage);
    }
  }

  function onResult(card, msg) {
    const kw = (msg && msg.additional_kwargs) || {};
    if (!kw.subagent_status) return false;
    parts(card);
    cards.set(card.dataset.callId, card);
    setStatus(card, kw.subagent_status, msg.content);
    setMeta(card, kw.subagent_model, kw.subagent_usage);
    if (kw.subagent_skipped) parts(card).empty.textContent = "Not run: over the subagent limit.";
    return true;
  }

  function applyEntry(card, entry) {
    if (entry.subagent_type) parts(card).type.textContent = entry.subagent_type;
    if (entry.status && entry.status !== "running" && !parts(card).live) setStatus(card, entry.status);
    if (entry.model_name || entry.usage) setMeta(card, entry.model_name, entry.usage);
  }

  function onLedger(delegations) {
    for (const entry of delegations || []) {
      if (!entry || !entry.id) continue;
      ledger.set(entry.id, { ...(ledger.get(entry.id) || {}), ...entry });
      const card = cards.get(entry.id);
      if (card) {
        applyEntry(card, ledger.get(entry.id));
        if (card.open) loadSteps(card); // opened before the ledger arrived
      }
    }
  }

  function reset() { cards.clear(); ledger.clear(); }

  function init(options) { ctx = options; }

  window.DFSubagents = { init, onCall, onEvent, onResult, onLedger, reset };
})();
