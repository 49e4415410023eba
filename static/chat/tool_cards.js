/* The card of each tool call: name, a short summary of its arguments, a status pill, the
 * full arguments and the result when expanded; files given to present_files as buttons under
 * it that open the viewer, with "Download all" (the run's archive) when there are several.
 * Cards are kept by tool_call_id in the map app.js owns, so chunks, snapshots and history
 * rows update one card. */
(function () {
  "use strict";

  const { h, icon, shorten, basename } = window.DFKit;
  const viewer = () => window.DFViewer;
  const web = () => window.DFWebTools;
  const subs = () => window.DFSubagents;
  const SUMMARY_KEYS = ["description", "command", "query", "url", "path", "file_path", "question", "prompt", "pattern"];
  let deps = null;

  function argSummary(name, args) {
    if (!args || typeof args !== "object") return "";
    if (name === "write_todos" && Array.isArray(args.todos)) return `${args.todos.length} steps`;
    if (name === "present_files" && Array.isArray(args.filepaths)) return args.filepaths.map(basename).join(", ");
    for (const key of SUMMARY_KEYS) if (typeof args[key] === "string" && args[key]) return args[key];
    for (const v of Object.values(args)) if (typeof v === "string" && v) return v;
    return "";
  }

  const TOOL_LABELS = { write_todos: "Update plan", ask_clarification: "Question", present_files: "Present files", bash: "Run command",
    web_search: "Web search", web_fetch: "Read page", image_search: "Image search",
    browser_navigate: "Open page", browser_click: "Click", browser_type: "Type", browser_snapshot: "Look at page",
    browser_get_text: "Read page text", browser_back: "Go back", browser_screenshot: "Screenshot", browser_close: "Close browser",
    web_capture: "Capture page" };

  function upsert(entry, call) {
    if (deps.running()) window.DFWorking.done();
    let card = deps.cards.get(call.id);
    if (!card) {
      card = h("details", { class: "tool-card", "data-status": "running", "data-tool": call.name || "" });
      const summary = h("summary", {},
        h("span", { class: "tool-icon", "aria-hidden": "true", text: "⚙" }),
        h("span", { class: "tool-name" }),
        h("span", { class: "tool-args-summary" }),
        h("span", { class: "tool-status" }));
      const body = h("div", { class: "tool-body" },
        h("div", { class: "tool-section-label", text: "Arguments" }), h("pre", { class: "tool-args" }),
        h("div", { class: "tool-section-label result-label", text: "Result", hidden: true }), h("pre", { class: "tool-result", hidden: true }),
        h("div", { class: "tool-extra" }));
      card.append(summary, body);
      card.dataset.callId = call.id;
      deps.cards.set(call.id, card);
      entry.tools.append(card);
    }
    const name = call.name || card.dataset.tool || "tool";
    card.dataset.tool = name;
    let args = call.args;
    if (args === undefined && call.argsText) { try { args = JSON.parse(call.argsText); } catch (e) { args = undefined; } }
    card.querySelector(".tool-name").textContent = TOOL_LABELS[name] ? `${TOOL_LABELS[name]} · ${name}` : name;
    card.querySelector(".tool-args-summary").textContent = shorten(argSummary(name, args), 80);
    card.querySelector(".tool-args").textContent = args !== undefined ? JSON.stringify(args, null, 2) : (call.argsText || "");
    if (call.error) setStatus(card, "error", call.error);
    else if (!card.dataset.done && card.dataset.status !== "waiting") setStatus(card, "running");
    if (name === "task" && subs()) subs().onCall(card, args);
    if (name === "present_files" && args && Array.isArray(args.filepaths)) {
      // presented files stay visible under the (collapsed) card, one click from a preview
      if (!card.presented) {
        card.presented = h("div", { class: "presented", "aria-label": "Presented files" });
        card.after(card.presented);
      }
      card.presented.replaceChildren(...args.filepaths.map((p) => h("button", {
        type: "button", class: "presented-file", title: p, "aria-label": "Open " + basename(p), onclick: (ev) => viewer().open(p, { opener: ev.currentTarget }),
      }, icon("file"), h("span", { text: basename(p) }))));
      const runId = entry.runId || deps.runId();
      if (runId) {
        viewer().presentedBy(runId);
        if (args.filepaths.length > 1) {
          card.presented.append(h("a", { class: "presented-file download-all", href: viewer().archiveUrl(runId), "aria-label": "Download all presented files" },
            icon("download"), h("span", { text: "Download all" })));
        }
      }
    }
  }

  function setStatus(card, status, detail) {
    card.dataset.status = status;
    const labels = { running: "running…", success: "done", error: "failed", denied: "denied", cancelled: "stopped", waiting: "waiting for you" };
    card.querySelector(".tool-status").textContent = labels[status] || status;
    if (detail && status === "error") card.querySelector(".tool-status").title = detail;
  }

  function result(msg) {
    const card = deps.cards.get(msg.tool_call_id);
    if (!card) return; // a result for a call we never saw (hidden or older than the loaded page)
    const text = deps.textOf(msg.content);
    const res = card.querySelector(".tool-result");
    res.hidden = false;
    if (!card.querySelector(".web-raw")) card.querySelector(".result-label").hidden = false;
    res.textContent = text;
    const meta = (msg.additional_kwargs || {}).deerflow_tool_meta || {};
    const failed = msg.status === "error" || meta.status === "error";
    card.dataset.done = "1";
    if (subs() && subs().onResult(card, msg)) return;
    setStatus(card, meta.status === "denied" ? "denied" : failed ? "error" : "success");
    if (window.DFBrowserView && window.DFBrowserView.onResult(card, msg, failed)) return;
    if (web()) web().onResult(card, msg, failed);
  }

  window.DFToolCards = { init(options) { deps = options; }, upsert, setStatus, result };
})();
