/* Answer versions: after a regenerate or an edit, ‹ 1/2 › arrows on the turn switch between
 * its versions (GET/POST /api/threads/{id}/versions). The server stores which one is shown
 * and makes the thread continue from it; the page then reloads the history it shows, so what
 * is on screen is what a reload shows. The arrows sit on the answer, or on the question when
 * the versions came from editing it (as ChatGPT places them). */
(function () {
  "use strict";

  let app = null;
  let asked = 0; // the latest refresh wins: an older answer arriving late is dropped

  const h = (...args) => window.DFKit.h(...args);

  function target(group) {
    const edited = group.kinds.includes("edit");
    const nodes = [...app.messagesEl().querySelectorAll(`.msg[data-run="${CSS.escape(group.shown)}"]`)];
    if (edited) return nodes.find((n) => n.classList.contains("user")) || null;
    const answers = nodes.filter((n) => n.classList.contains("assistant") && !n.classList.contains("textless"));
    return answers[answers.length - 1] || nodes.filter((n) => n.classList.contains("assistant")).pop() || null;
  }

  async function choose(runId, label) {
    if (app.running()) { app.setNote("Wait for the current answer to finish.", "error"); return; }
    try {
      await app.api("POST", `/threads/${encodeURIComponent(app.threadId())}/versions`, { run_id: runId });
    } catch (e) {
      app.setNote("Could not switch versions: " + e.message, "error");
      return;
    }
    await app.reload();
    app.setNote(`Showing ${label}. The conversation continues from it.`);
    const arrows = app.messagesEl().querySelector(".versions");
    if (arrows) (arrows.querySelector("button:not([disabled])") || arrows).focus();
  }

  function control(group) {
    const at = group.index - 1;
    const step = (d) => () => choose(group.run_ids[at + d], `version ${at + d + 1} of ${group.total}`);
    const what = group.kinds.includes("edit") ? "message" : "answer";
    // The runs the arrows switch to are in the markup, so a control drawn alike is alike.
    return h("span", { class: "versions", role: "group", "aria-label": `Versions of this ${what}`, "data-runs": group.run_ids.join(" "),
                       "aria-disabled": app.held && app.held() ? "true" : null },
      h("button", { type: "button", class: "msg-action version-step", "data-step": "prev", "aria-label": "Previous version",
                    title: "Previous version", disabled: at === 0, onclick: step(-1), text: "‹" }),
      h("span", { class: "version-count", "aria-live": "polite", text: `${group.index}/${group.total}` }),
      h("button", { type: "button", class: "msg-action version-step", "data-step": "next", "aria-label": "Next version",
                    title: "Next version", disabled: at === group.total - 1, onclick: step(1), text: "›" }));
  }

  async function refresh(hooks) {
    app = hooks || app;
    if (!app) return;
    const mine = ++asked;
    const threadId = app.threadId();
    if (!threadId || app.running()) return;
    let result;
    try { result = await app.api("GET", `/threads/${encodeURIComponent(threadId)}/versions`); } catch (e) { return; }
    if (mine !== asked || threadId !== app.threadId()) return;
    // A control drawn alike stays: a refresh between a press on an arrow and its release
    // would otherwise take the click with the old arrow.
    const kept = new Set();
    for (const group of result.groups || []) {
      const node = target(group);
      const bar = node && node.querySelector(".msg-actions");
      if (!bar) continue;
      const fresh = control(group);
      const old = bar.querySelector(":scope > .versions");
      if (old && old.outerHTML === fresh.outerHTML) { kept.add(old); continue; }
      if (old) old.remove();
      bar.prepend(fresh);
      kept.add(fresh);
    }
    app.messagesEl().querySelectorAll(".versions").forEach((n) => { if (!kept.has(n)) n.remove(); });
  }

  window.DFVersions = { refresh };
})();
