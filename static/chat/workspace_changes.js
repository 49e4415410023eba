/* The files a run changed, shown after its answer: GET
 * /api/threads/{tid}/runs/{rid}/workspace-changes lists them (created, modified, deleted) with
 * line counts; a file's diff is fetched the first time one is opened. When the run changed
 * outputs it never presented (its delivery receipt is not satisfied), the card says so (a run
 * that would have succeeded is then recorded as an error). A run that changed nothing gets no
 * card. */
(function () {
  "use strict";

  const { h, basename } = window.DFKit;
  let ctx = null; // { api, threadId, messages }
  const shown = new Set(); // run ids whose card is on the page (or being fetched)
  const STATUS = { created: ["A", "Added"], modified: ["M", "Modified"], deleted: ["D", "Deleted"], symlink_created: ["L", "Link added"] };

  function url(runId, withDiff) {
    const q = new URLSearchParams({ include_files: "true", include_diff: withDiff ? "true" : "false" });
    return `/threads/${encodeURIComponent(ctx.threadId())}/runs/${encodeURIComponent(runId)}/workspace-changes?${q}`;
  }

  function lastAnswerOf(runId) {
    let last = null;
    for (const entry of ctx.messages().values()) {
      if (entry.runId === runId && entry.type !== "human" && entry.el && entry.el.isConnected) {
        if (!last || (last.el.compareDocumentPosition(entry.el) & Node.DOCUMENT_POSITION_FOLLOWING)) last = entry;
      }
    }
    return last;
  }

  function delta(additions, deletions) {
    return h("span", { class: "ws-delta" }, h("span", { class: "ws-add", text: "+" + additions }),
      h("span", { class: "ws-del", text: "−" + deletions }));
  }

  function paintDiff(pre, file) {
    pre.replaceChildren();
    if (!file.diff) {
      const why = { binary: "Binary file: no diff.", large: "Too large to diff.", sensitive: "Looks like a secret: not shown.",
                    symlink: "A link: not followed.", truncated: "Diff left out: the run's diff budget was used up." };
      pre.append(h("span", { class: "ws-line muted", text: why[file.diff_unavailable_reason] || "No text changes." }));
      return;
    }
    for (const line of file.diff.split("\n")) {
      let kind = "";
      if (line.startsWith("+++") || line.startsWith("---")) kind = "ws-head";
      else if (line.startsWith("@@")) kind = "ws-hunk";
      else if (line.startsWith("+")) kind = "ws-add";
      else if (line.startsWith("-")) kind = "ws-del";
      else if (line.startsWith("\\ diff truncated")) kind = "ws-cut";
      pre.append(h("span", { class: "ws-line " + kind, text: line || " " }));
    }
  }

  function card(runId, data) {
    const receipt = data.delivery || {};
    const matched = new Set(receipt.matched_paths || []);
    const produced = new Set(receipt.produced_paths || []);
    const s = data.summary;
    const count = s.created + s.modified + s.deleted + s.symlink_created;
    const root = h("section", { class: "ws-changes", "data-run": runId, "aria-label": "Files changed by this answer" });
    root.append(h("div", { class: "ws-head" },
      h("span", { class: "ws-title", text: `${count} file${count === 1 ? "" : "s"} changed` }),
      delta(s.additions, s.deletions)));
    if (receipt.produced_paths && receipt.satisfied === false) {
      root.classList.add("undelivered");
      root.append(h("p", { class: "ws-undelivered", role: "status",
        text: "Outputs were changed but never presented: the answer did not show them to you. Open them from Files." }));
    }
    const list = h("ul", { class: "ws-files" });
    let diffs = null; // the run's files with their diffs, fetched once
    for (const file of data.files) {
      const [letter, label] = STATUS[file.status] || ["?", file.status];
      const pre = h("pre", { class: "ws-diff" }, h("span", { class: "ws-line muted", text: "Loading the diff…" }));
      const dir = file.path.slice(0, file.path.length - basename(file.path).length - 1);
      const details = h("details", { class: "ws-file", "data-path": file.path },
        h("summary", {},
          h("span", { class: "ws-status ws-" + file.status, title: label, "aria-label": label, text: letter }),
          h("span", { class: "ws-name" }, h("code", { text: basename(file.path) }), h("span", { class: "ws-dir muted small", text: " " + dir })),
          matched.has(file.path) ? h("span", { class: "ws-tag presented", text: "Presented" })
            : produced.has(file.path) ? h("span", { class: "ws-tag unpresented", text: "Not presented" }) : null,
          delta(file.additions, file.deletions)),
        pre);
      details.addEventListener("toggle", async () => {
        if (!details.open || details.dataset.loaded) return;
        details.dataset.loaded = "1";
        try {
          diffs = diffs || ctx.api("GET", url(runId, true));
          const full = (await diffs).files.find((f) => f.path === file.path) || file;
          paintDiff(pre, full);
        } catch (err) {
          delete details.dataset.loaded;
          pre.replaceChildren(h("span", { class: "ws-line error-text", text: "Could not load the diff: " + err.message }));
        }
      });
      list.append(h("li", {}, details));
    }
    root.append(list);
    if (s.truncated) root.append(h("p", { class: "ws-note muted small", text: "Some changes are not listed or not diffed: the run changed more than is recorded." }));
    return root;
  }

  /* Show the run's card after its last answer; once per run. */
  async function showFor(runId) {
    if (!ctx || !runId || shown.has(runId) || !ctx.threadId()) return;
    shown.add(runId);
    let data;
    try {
      data = await ctx.api("GET", url(runId, false));
    } catch (err) {
      shown.delete(runId); // still running (409) or gone: asked again at the next chance
      return;
    }
    if (!data.available || !data.files.length) return;
    const answer = lastAnswerOf(runId);
    if (!answer) { shown.delete(runId); return; }
    const old = answer.el.querySelector(".ws-changes");
    if (old) old.remove();
    const node = card(runId, data);
    const bar = answer.el.querySelector(":scope > .feedback-bar");
    answer.el.insertBefore(node, bar || null); // the answer, its changed files, then the rating
  }

  function showForHistory() {
    const runs = new Set();
    for (const entry of ctx.messages().values()) if (entry.runId && entry.type !== "human") runs.add(entry.runId);
    runs.forEach((r) => showFor(r));
  }

  function reset() { shown.clear(); }

  function init(options) { ctx = options; }

  window.DFWorkspaceChanges = { init, showFor, showForHistory, reset };
})();
