// The Memory page: facts with their source, edit, delete, pause, export/import, clear.
// Everything goes through /api/memory; errors show the API's {"detail": ...}.
(function () {
  "use strict";

  const { api, el, button } = window.DeerFlowPage;

  const API = "/api/memory";
  const $ = (id) => document.getElementById(id);
  const errorBox = $("memory-error");
  const LABELS = { workContext: "Work", personalContext: "Personal", topOfMind: "Top of mind",
                   recentMonths: "Recent months", earlierContext: "Earlier", longTermBackground: "Background" };
  let doc = null;

  function showError(message) {
    errorBox.textContent = message || "";
    errorBox.hidden = !message;
  }

  async function run(action) {
    showError("");
    try {
      render(await action());
    } catch (err) {
      showError(err.message);
    }
  }

  function source(fact) {
    const s = fact.source || {};
    if (s.kind === "user") return "Added by you";
    if (!s.threadId) return "—";
    const href = `/c/${encodeURIComponent(s.threadId)}/` + (s.messageId ? `#msg-${encodeURIComponent(s.messageId)}` : "");
    const when = fact.createdAt ? new Date(fact.createdAt).toLocaleDateString() : "";
    return el("a", { href, class: "fact-source" }, `Conversation${when ? " of " + when : ""}`);
  }

  function editRow(row, fact) {
    const input = el("input", { class: "fact-edit", value: fact.content, maxlength: "1000", "aria-label": "Fact" });
    const cell = row.querySelector("td");
    cell.replaceChildren(input);
    const actions = row.querySelector(".row-actions");
    actions.replaceChildren(
      button("Save", () => run(() => api("PATCH", `${API}/facts/${encodeURIComponent(fact.id)}`, { content: input.value }))),
      button("Cancel", () => render(doc)));
    input.focus();
  }

  function render(data) {
    doc = data;
    const rows = $("fact-rows");
    rows.replaceChildren();
    for (const fact of data.facts) {
      const row = el("tr", { "data-fact-id": fact.id },
        el("td", { "data-label": "Fact" }, fact.content),
        el("td", { "data-label": "Category" }, fact.category),
        el("td", { "data-label": "Confidence" }, `${Math.round(fact.confidence * 100)}%`),
        el("td", { "data-label": "Source" }, source(fact)),
        el("td", {}, el("div", { class: "row-actions" })));
      row.querySelector(".row-actions").append(
        button("Edit", () => editRow(row, fact)),
        button("Delete", () => run(() => api("DELETE", `${API}/facts/${encodeURIComponent(fact.id)}`)), "danger"));
      rows.append(row);
    }
    $("fact-empty").hidden = data.facts.length > 0;
    const summaries = $("summaries");
    summaries.replaceChildren();
    for (const section of ["user", "history"]) {
      for (const [key, value] of Object.entries(data[section] || {})) {
        const text = (value && value.summary) || "";
        if (text) summaries.append(el("dt", {}, LABELS[key] || key), el("dd", {}, text));
      }
    }
    $("summaries-card").hidden = !summaries.children.length;
    $("pause-button").textContent = data.paused ? "Resume memory" : "Pause memory";
    $("memory-state").textContent = data.paused
      ? "Memory is paused: nothing is learned and nothing is recalled in chats."
      : `${data.facts.length} fact${data.facts.length === 1 ? "" : "s"} remembered.`;
  }

  $("fact-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const input = $("f-content");
    run(async () => {
      const data = await api("POST", `${API}/facts`, { content: input.value });
      input.value = "";
      return data;
    });
  });
  $("pause-button").addEventListener("click", () => run(async () => {
    await api("PATCH", `${API}/config`, { paused: !doc.paused });
    return api("GET", API);
  }));
  $("clear-button").addEventListener("click", async () => {
    if (await window.dfUI.confirm({ title: "Forget everything?", message: "DeerFlow forgets every fact and summary it keeps about you. This cannot be undone.", confirmLabel: "Forget everything", danger: true })) run(() => api("DELETE", API));
  });
  $("import-file").addEventListener("change", async (event) => {
    const file = event.target.files[0];
    event.target.value = "";
    if (file) run(async () => api("POST", `${API}/import`, await file.text()));
  });

  run(() => api("GET", API));
})();
