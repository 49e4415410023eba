/* Message actions on the chat page: copy (Markdown or plain text), regenerate the latest
 * answer, edit the latest question and rerun, branch from any completed answer, and the
 * "stopped" marker of a cancelled run. Keyboard: ↑ in an empty composer edits the last
 * question; Ctrl/Cmd+Shift+C copies the last answer.
 *
 * After a regenerate or an edit the page reloads the history from the server once the run
 * ends: the server decides what is visible (replaced answers leave it, a failed replay
 * brings the original back), so the page never keeps a copy of its own. */
(function () {
  "use strict";

  let app = null;
  // While a run goes, and until its end is read in (a replay reloads the history), the
  // actions that start a run or change what is shown say they are unavailable
  // (aria-disabled): a click on them would be refused, or land on an element a reload
  // replaces. Copy and Branch stay available.
  let held = false;
  let endsPending = 0;
  const IDLE_ONLY = '.msg-action[data-action="edit"], .msg-action[data-action="regenerate"], .versions';

  function hold(on) {
    held = on;
    for (const node of app.messagesEl().querySelectorAll(IDLE_ONLY)) markHeld(node);
  }

  function markHeld(node) {
    if (held) node.setAttribute("aria-disabled", "true"); else node.removeAttribute("aria-disabled");
  }

  /* app.js: a run started or stopped being followed. */
  function onRunning(running) {
    if (running) hold(true);
    else if (!endsPending) hold(false);
  }

  function h(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "text") node.textContent = v;
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else if (v !== false && v !== null && v !== undefined) node.setAttribute(k, v === true ? "" : v);
    }
    for (const c of children) if (c !== null && c !== undefined) node.append(c);
    return node;
  }

  function plainText(entry) {
    const body = entry.body;
    return body ? (body.innerText || body.textContent || "").trim() : entry.text;
  }

  async function copy(text, label) {
    try {
      await navigator.clipboard.writeText(text);
      app.setNote(label + " copied.");
    } catch (e) {
      // no clipboard permission (an insecure origin): a hidden textarea still works
      const area = h("textarea", { class: "visually-hidden" });
      area.value = text;
      document.body.append(area);
      area.select();
      document.execCommand("copy");
      area.remove();
      app.setNote(label + " copied.");
    }
  }

  function button(action, label, onclick) {
    const node = h("button", { type: "button", class: "msg-action", "data-action": action, title: label, "aria-label": label, text: label, onclick });
    if (node.matches(IDLE_ONLY)) markHeld(node);
    return node;
  }

  function decorate(entry) {
    if (entry.actions) return;
    entry.actions = h("div", { class: "msg-actions", role: "toolbar", "aria-label": "Message actions" });
    if (entry.type === "human") {
      entry.actions.append(
        button("copy", "Copy", () => copy(entry.text, "Message")),
        button("edit", "Edit", () => startEdit(entry)));
    } else {
      entry.actions.append(
        button("copy-md", "Copy", () => copy(entry.text, "Markdown")),
        button("copy-plain", "Copy text", () => copy(plainText(entry), "Text")),
        button("regenerate", "Regenerate", () => regenerate()),
        button("branch", "Branch", () => branch(entry)));
    }
    entry.el.append(entry.actions);
  }

  function entries(type) {
    return [...app.messagesEl().querySelectorAll(type === "human" ? ".msg.user" : ".msg.assistant")]
      .map((node) => app.messages().get(node.dataset.id)).filter(Boolean);
  }

  function lastAnswer() {
    const answers = entries("ai").filter((e) => e.text && e.text.trim());
    return answers[answers.length - 1] || null;
  }

  function lastQuestion() {
    const qs = entries("human");
    return qs[qs.length - 1] || null;
  }

  /* Only the latest answer can be regenerated and only the latest question edited. */
  function refresh() {
    const answer = lastAnswer();
    const question = lastQuestion();
    for (const node of app.messagesEl().querySelectorAll(".msg.latest-answer, .msg.latest-question")) {
      node.classList.remove("latest-answer", "latest-question");
    }
    if (answer) answer.el.classList.add("latest-answer");
    if (question) question.el.classList.add("latest-question");
    // A message that is only tool calls has no text: its Copy buttons would copy nothing.
    for (const entry of entries("ai")) entry.el.classList.toggle("textless", !(entry.text && entry.text.trim()));
    if (window.DFVersions) window.DFVersions.refresh(Object.assign({}, app, { held: () => held })); // versions.js: the ‹ 1/2 › arrows
  }

  function clearStopped() { app.messagesEl().querySelectorAll(".stopped-marker").forEach((n) => n.remove()); }

  // working.js places the marker after the run's last message (and on reload for every cancelled run)
  function markStopped(runId) { window.DFWorking.markStopped(app.messagesEl(), runId, "cancelled"); }

  async function start(path, body, what) {
    if (app.running() || held) { app.setNote("Wait for the current answer to finish.", "error"); return; }
    let run;
    try {
      run = await app.api("POST", `/threads/${encodeURIComponent(app.threadId())}${path}`, body);
    } catch (e) {
      app.setNote(`Could not ${what}: ${e.message}`, "error");
      return;
    }
    clearStopped();
    clearSuggestions();
    app.follow(run.run_id, { replay: true });
  }

  function regenerate() { return start("/runs/regenerate", {}, "regenerate"); }

  function startEdit(entry) {
    if (entry.editing) return;
    if (app.running() || held) { app.setNote("Wait for the current answer to finish.", "error"); return; }
    entry.editing = true;
    const area = h("textarea", { class: "edit-box", "aria-label": "Edit your message", rows: "3" });
    area.value = entry.text;
    const form = h("form", { class: "edit-form" }, area,
      h("div", { class: "edit-buttons" },
        h("button", { type: "submit", class: "button", text: "Save & rerun" }),
        h("button", { type: "button", class: "button secondary", text: "Cancel", onclick: () => close() })));
    const close = () => { form.remove(); entry.body.hidden = false; entry.editing = false; };
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      const text = area.value.trim();
      if (!text) return;
      close();
      start("/runs/edit-regenerate", { content: text, message_id: entry.id }, "edit and rerun");
    });
    area.addEventListener("keydown", (ev) => {
      if (ev.key === "Escape") { ev.preventDefault(); close(); }
      if (ev.key === "Enter" && !ev.shiftKey) { ev.preventDefault(); form.requestSubmit(); }
    });
    entry.body.hidden = true;
    entry.el.insertBefore(form, entry.body.nextSibling);
    area.focus();
  }

  async function branch(entry) {
    let result;
    try {
      result = await app.api("POST", `/threads/${encodeURIComponent(app.threadId())}/branches`, { message_id: entry.id });
    } catch (e) {
      app.setNote("Could not branch: " + e.message, "error");
      return;
    }
    const note = result.workspace_clone_mode === "skipped_historical_turn" ? "?note=files-skipped" : "";
    location.assign(`/c/${encodeURIComponent(result.thread_id)}/${note}`);
  }

  /* After a run: a replay reloads the history the server now shows; a cancelled run gets
   * its marker, and a replay that failed says the conversation was restored. */
  async function onRunEnd(runId, info) {
    if (!runId || !app.threadId()) return;
    endsPending++;
    try {
      await settle(runId, info);
    } finally {
      endsPending--;
      if (!endsPending && !app.running()) hold(false);
    }
  }

  async function settle(runId, info) {
    refreshGoal();
    let run = null;
    try { run = await app.api("GET", `/threads/${encodeURIComponent(app.threadId())}/runs/${runId}`); } catch (e) { /* gone */ }
    if (info && info.replay) await app.reload();
    refreshContext();
    if (run && run.stop_reason === "cancelled") markStopped(runId);
    if (run && run.status === "success") suggest();
    if (run && info && info.replay && (run.status === "error" || run.stop_reason === "cancelled")) {
      app.setNote(`The ${run.metadata.replay.kind === "edit" ? "edit" : "regenerated answer"} ${run.status === "error" ? "failed" : "was cancelled"}; the conversation before it is restored.`, "error");
    }
    refresh();
  }

  /* On load: was the latest run cancelled? */
  async function onHistory() {
    refresh();
    refreshContext();
    refreshGoal();
    if (!app.threadId()) return;
    await window.DFWorking.markHistory(app.threadId(), app.messagesEl()); // replaced runs show no messages, so no marker
    if (new URLSearchParams(location.search).get("note") === "files-skipped") {
      app.setNote("Branched from an older answer: the files of the later conversation were not copied.");
    }
  }

  // ------------------------------------------------------------ follow-up suggestions

  let suggestionsOn = null;

  function clearSuggestions() { app.messagesEl().querySelectorAll(".suggestions").forEach((n) => n.remove()); }

  /* After an answer, never before it: the chips arrive when they arrive, or not at all. */
  async function suggest() {
    if (suggestionsOn === null) {
      try { suggestionsOn = (await app.api("GET", "/suggestions/config")).enabled; } catch (e) { suggestionsOn = false; }
    }
    const answer = lastAnswer();
    if (!suggestionsOn || !answer) return;
    const threadId = app.threadId();
    let result;
    try { result = await app.api("POST", `/threads/${encodeURIComponent(threadId)}/suggestions`, {}); } catch (e) { return; }
    if (app.running() || threadId !== app.threadId() || lastAnswer() !== answer || !result.suggestions.length) return;
    clearSuggestions();
    const list = h("div", { class: "suggestions", role: "list", "aria-label": "Suggested follow-ups" });
    for (const text of result.suggestions) {
      list.append(h("button", { type: "button", class: "suggestion-chip", role: "listitem", text, onclick: () => { clearSuggestions(); app.send(text); } }));
    }
    answer.el.after(list);
  }

  // ------------------------------------------------------------ answered clarifications

  function answeredClarification(msg, toolCard) {
    const artifact = msg.artifact || {};
    const request = artifact.human_input || {};
    if (!("response" in artifact)) return;
    const question = request.question || String(msg.content || "").split("\n\nThe user answered:")[0];
    const answer = typeof artifact.response === "string" ? artifact.response : JSON.stringify(artifact.response);
    const card = h("div", { class: "clarify answered", "data-tool-call-id": msg.tool_call_id || "" },
      h("p", { class: "clarify-question", text: question }),
      h("p", { class: "clarify-answer" }, "You answered: ", h("strong", { text: answer })));
    if (toolCard) { toolCard.hidden = true; toolCard.after(card); } else app.messagesEl().append(card);
  }

  // ------------------------------------------------------------ thread goal

  // The evaluator's typed blockers (harness/agents/goals.py), as the chat names them.
  const GOAL_BLOCKERS = {
    needs_user_input: "Needs your input", missing_evidence: "Missing evidence", run_failed: "Run failed",
    external_wait: "Waiting on something outside", goal_not_met_yet: "Not met yet",
  };

  /* What the goal's state reads as: [blocker label or "", text, kind]. */
  function goalState(goal) {
    const last = goal.last_evaluation || {};
    const count = `${goal.continuation_count || 0}/${goal.max_continuations}`;
    const reason = last.reason ? ` — ${last.reason}` : "";
    if (goal.status === "met") return ["", `Met${reason}`, "done"];
    const stop = last.stand_down_reason || "";
    if (stop.startsWith("blocked:")) return [GOAL_BLOCKERS[last.blocker] || last.blocker, `Blocked${reason}`, "blocked"];
    if (stop === "max_continuations_reached") return [GOAL_BLOCKERS[last.blocker] || "", `Stopped: the continuation limit is reached (${count})${reason}`, "stopped"];
    if (stop === "no_progress_detected") return ["", `Stopped: the last continuations made no progress (${count})`, "stopped"];
    if (stop === "evaluator_failed") return ["", `Stopped: the evaluator could not answer${reason}`, "stopped"];
    if (goal.continuation_count) return [GOAL_BLOCKERS[last.blocker] || "", `Continuing towards the goal (${count})${reason}`, "active"];
    return ["", `Active · up to ${goal.max_continuations} continuations`, "active"];
  }

  function paintGoal(goal) {
    const banner = document.getElementById("goal-banner");
    if (!banner) return;
    banner.hidden = !goal;
    if (!goal) return;
    const [blocker, text, kind] = goalState(goal);
    document.getElementById("goal-text").textContent = `Goal: ${goal.objective}`;
    document.getElementById("goal-state-text").textContent = text;
    const chip = document.getElementById("goal-blocker");
    chip.textContent = blocker;
    chip.hidden = !blocker;
    banner.classList.toggle("done", kind === "done");
    banner.classList.toggle("blocked", kind === "blocked");
  }

  async function refreshGoal() {
    if (!app.threadId()) { paintGoal(null); return; }
    try { paintGoal((await app.api("GET", `/threads/${encodeURIComponent(app.threadId())}/goal`)).goal); } catch (e) { /* no state yet */ }
  }

  /* "/goal <objective>" sets the thread's goal and starts working on it. */
  function onCommand(text) {
    const match = /^\/goal(?:\s+([\s\S]*))?$/.exec(text);
    if (!match) return false;
    const objective = (match[1] || "").trim();
    if (!objective) { app.setNote("Write the goal after /goal, e.g. /goal Draft a plan and check it.", "error"); return true; }
    if (app.running()) { app.setNote("Wait for the current answer to finish.", "error"); return true; }
    (async () => {
      try {
        await app.ensureThread();
        // The server's default cap (goals.max_continuations, 8 unless the operator says otherwise).
        const result = await app.api("PUT", `/threads/${encodeURIComponent(app.threadId())}/goal`, { objective });
        paintGoal(result.goal);
        app.send(objective);
      } catch (e) {
        app.setNote("Could not set the goal: " + e.message, "error");
      }
    })();
    return true;
  }

  function onCustom(data) {
    if (!data || typeof data !== "object") return;
    // Continuations are more turns of the same run: the banner follows the evaluator's verdicts.
    if (data.type === "goal_continuation") {
      app.setNote(`Continuing towards the goal (${data.n}/${data.max})…`);
      refreshGoal();
    } else if (data.type === "goal_stopped") {
      app.setNote(data.status === "met" ? "Goal met." : data.blocker && data.stand_down_reason === `blocked:${data.blocker}`
        ? `Goal blocked: ${GOAL_BLOCKERS[data.blocker] || data.blocker}.` : "The goal loop stopped.");
      refreshGoal();
    }
  }

  // ------------------------------------------------------------ context usage, compaction

  function formatTokens(n) { return n >= 1000 ? (Math.round(n / 100) / 10) + "k" : String(n); }

  async function refreshContext() {
    const meter = document.getElementById("context-meter");
    const button = document.getElementById("compact");
    if (!meter || !app.threadId()) return;
    let usage;
    try { usage = await app.api("GET", `/threads/${encodeURIComponent(app.threadId())}/context`); } catch (e) { return; }
    if (!usage.message_count) { meter.hidden = true; button.hidden = true; return; }
    meter.hidden = false;
    meter.textContent = `Context ${formatTokens(usage.used_tokens)} / ${formatTokens(usage.context_window)} (${usage.percent}%)`;
    meter.title = `${usage.message_count} messages in the model's context${usage.has_summary ? ", plus a summary of earlier ones" : ""}`;
    meter.classList.toggle("high", usage.percent >= 70);
    // Offered when compacting would free something worth it: a long thread or a full window.
    const keep = usage.keep_messages || 20;
    button.hidden = !(usage.message_count > keep && (usage.message_count >= 2 * keep || usage.percent >= 50));
  }

  async function compact() {
    const button = document.getElementById("compact");
    if (app.running()) { app.setNote("Wait for the current answer to finish.", "error"); return; }
    button.disabled = true;
    app.setNote("Compacting…");
    try {
      const result = await app.api("POST", `/threads/${encodeURIComponent(app.threadId())}/compact`);
      app.setNote(`Compacted: ${result.summarized_messages} older messages summarized, the last ${result.kept_messages} kept.`);
    } catch (e) {
      app.setNote("Could not compact: " + e.message, "error");
    } finally {
      button.disabled = false;
      refreshContext();
    }
  }

  function onKey(ev) {
    if ((ev.ctrlKey || ev.metaKey) && ev.shiftKey && (ev.key === "C" || ev.key === "c")) {
      const answer = lastAnswer();
      if (answer) { ev.preventDefault(); copy(answer.text, "Last answer"); }
    }
  }

  function onComposerKey(ev, input) {
    if (ev.key === "ArrowUp" && !input.value && !app.running()) {
      const q = lastQuestion();
      if (q) { ev.preventDefault(); startEdit(q); return true; }
    }
    return false;
  }

  window.DFMessageActions = {
    init(hooks) {
      app = hooks;
      document.addEventListener("keydown", onKey);
      const button = document.getElementById("compact");
      if (button) button.addEventListener("click", compact);
      const clear = document.getElementById("goal-clear");
      if (clear) clear.addEventListener("click", async () => {
        try { await app.api("DELETE", `/threads/${encodeURIComponent(app.threadId())}/goal`); paintGoal(null); app.setNote("Goal cleared."); }
        catch (e) { app.setNote("Could not clear the goal: " + e.message, "error"); }
      });
    },
    decorate, refresh, onRunning, onRunEnd, onHistory, onComposerKey, markStopped, clearSuggestions, onCommand, onCustom, answeredClarification,
  };
})();
