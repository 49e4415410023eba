/* Working state of a run: a "Thinking… 3s" line from Send until the first token or tool
 * card, and a "Stopped" marker where a cancelled run ended (live, and after a reload, from
 * the runs' stop_reason). Nothing here runs or fetches unless a run is under way or the
 * thread has cancelled runs to mark. */
(function () {
  "use strict";

  const K = () => window.DFKit;
  let line = null, timer = null, started = 0;
  const CANCELLED = new Set(["cancelled", "rolled_back"]);

  function tick() {
    if (!line) return;
    const secs = Math.floor((Date.now() - started) / 1000);
    line.querySelector(".working-time").textContent = secs + "s";
  }

  /* From Send (or an answer to a question): shown until `done()`. */
  function start(container) {
    done();
    started = Date.now();
    line = K().h("div", { class: "working", "aria-live": "polite", "aria-label": "Working" },
      K().h("span", { class: "working-dots", "aria-hidden": "true" }, K().h("i"), K().h("i"), K().h("i")),
      K().h("span", { class: "working-text", text: "Thinking…" }),
      K().h("span", { class: "working-time muted", text: "0s" }));
    container.append(line);
    timer = setInterval(tick, 1000);
  }

  /* The first token, tool card, question or error has arrived (or the run ended). */
  function done() {
    clearInterval(timer);
    timer = null;
    if (line) line.remove();
    line = null;
  }

  function active() { return !!line; }

  function marker(reason) {
    return K().h("p", { class: "run-stopped stopped-marker", "data-stop": reason || "cancelled" },
      K().icon("stop"), K().h("span", { text: reason === "rolled_back" ? "Stopped — the answer was rolled back." : "Stopped — the answer was cancelled." }));
  }

  /* After the last element of a run (or at the end of `container` when none is shown). */
  function markStopped(container, runId, reason) {
    if (runId && container.querySelector(`.run-stopped[data-run="${CSS.escape(runId)}"]`)) return;
    const mine = runId ? container.querySelectorAll(`[data-run="${CSS.escape(runId)}"]`) : [];
    const node = marker(reason);
    if (runId) node.dataset.run = runId;
    if (mine.length) mine[mine.length - 1].after(node);
    else container.append(node);
  }

  /* On load: one request for the thread's cancelled runs; markers only where their messages are shown. */
  async function markHistory(threadId, container) {
    let runs;
    try {
      runs = await K().api("GET", `/threads/${encodeURIComponent(threadId)}/runs?status=interrupted&limit=100`);
    } catch (e) { return; }
    for (const run of runs || []) {
      if (!CANCELLED.has(run.stop_reason)) continue;
      if (!container.querySelector(`[data-run="${CSS.escape(run.run_id)}"]`)) continue; // older than the loaded page
      markStopped(container, run.run_id, run.stop_reason);
    }
  }

  window.DFWorking = { start, done, active, markStopped, markHistory };
})();
