// The Knowledge page: collections (create, share, bind to an agent, delete) and the selected
// collection's documents (upload, add a URL, status and progress while they are read, retry,
// delete). Everything goes through /api/knowledge; errors show the API's {"detail": ...}.
(function () {
  "use strict";

  const { api, el, button } = window.DeerFlowPage;
  const API = "/api/knowledge";
  const $ = (id) => document.getElementById(id);
  const errorBox = $("kb-error");
  let collections = [];
  let selected = null;
  let agents = [];
  let pollTimer = null;

  function showError(message) {
    errorBox.textContent = message || "";
    errorBox.hidden = !message;
  }

  async function attempt(action) {
    showError("");
    try {
      return await action();
    } catch (err) {
      showError(err.message);
      return null;
    }
  }

  function access(c) {
    if (!c.is_owner) return `Shared by ${c.owner}`;
    if (c.agent) {
      const agent = agents.find((a) => a.assistant_id === c.agent);
      return `Agent ${agent ? agent.display_name || agent.name : "(deleted)"} only`;
    }
    if (c.shared_with_everyone) return "Everyone";
    if (c.shared_with.length) return `You, ${c.shared_with.join(", ")}`;
    return "Only you";
  }

  function renderCollections() {
    const rows = $("collection-rows");
    rows.replaceChildren();
    for (const c of collections) {
      const open = el("a", { href: `#${c.id}`, class: "kb-open" }, c.name);
      const row = el("tr", { "data-collection-id": c.id, class: selected && selected.id === c.id ? "kb-selected" : "" },
        el("td", { "data-label": "Collection" }, open, c.description ? el("span", { class: "muted small" }, " " + c.description) : ""),
        el("td", { "data-label": "Documents" }, String(c.document_count)),
        el("td", { "data-label": "Access" }, access(c)),
        el("td", {}, el("div", { class: "row-actions" })));
      if (c.is_owner) {
        row.querySelector(".row-actions").append(button("Delete", () => removeCollection(c), "danger"));
      }
      rows.append(row);
    }
    $("collection-empty").hidden = collections.length > 0;
  }

  async function removeCollection(c) {
    const ok = await window.dfUI.confirm({ title: `Delete ${c.name}?`, message: "Its documents, passages and files are removed for everyone it is shared with. This cannot be undone.", confirmLabel: "Delete collection", danger: true });
    if (!ok) return;
    await attempt(async () => {
      await api("DELETE", `${API}/collections/${c.id}`);
      if (selected && selected.id === c.id) { selected = null; location.hash = ""; }
      await loadCollections();
    });
  }

  function statusCell(d) {
    const cell = el("td", { "data-label": "Status" }, el("span", { class: `status ${d.status === "ready" ? "success" : d.status}` }, d.status));
    if (d.status === "queued" || d.status === "processing") {
      cell.append(el("progress", { class: "kb-progress", max: "100", value: String(d.progress), "aria-label": `${d.name}: ${d.progress}%` }));
    }
    if (d.error) cell.append(el("span", { class: "kb-error-text" }, d.error));
    return cell;
  }

  function renderDocuments(documents) {
    const rows = $("document-rows");
    rows.replaceChildren();
    for (const d of documents) {
      const name = d.status === "ready" ? el("a", { href: `/knowledge/documents/${d.id}/` }, d.title || d.name) : el("span", {}, d.name);
      const row = el("tr", { "data-document-id": d.id },
        el("td", { "data-label": "Document" }, name, d.title && d.title !== d.name ? el("span", { class: "muted small" }, " " + d.name) : ""),
        el("td", { "data-label": "Version" }, `v${d.version}${d.is_current ? "" : " (older)"}`),
        statusCell(d),
        el("td", { "data-label": "Passages" }, String(d.passage_count)),
        el("td", {}, el("div", { class: "row-actions" })));
      if (selected.is_owner) {
        const actions = row.querySelector(".row-actions");
        if (d.status !== "ready") actions.append(button("Retry", () => attempt(async () => { await api("POST", `${API}/documents/${d.id}/retry`); await loadDocuments(); })));
        actions.append(button("Delete", () => attempt(async () => { await api("DELETE", `${API}/documents/${d.id}`); await loadDocuments(); await loadCollections(); }), "danger"));
      }
      rows.append(row);
    }
    $("document-empty").hidden = documents.length > 0;
    clearTimeout(pollTimer);
    if (documents.some((d) => d.status === "queued" || d.status === "processing")) {
      pollTimer = setTimeout(loadDocuments, 1000); // progress while the worker reads them
    }
  }

  async function loadDocuments() {
    if (!selected) return;
    const id = selected.id;
    const data = await attempt(() => api("GET", `${API}/collections/${id}/documents`));
    if (data && selected && selected.id === id) {
      renderDocuments(data.documents);
      const ready = data.documents.filter((d) => d.is_current).length;
      const c = collections.find((x) => x.id === id);
      if (c && c.document_count !== ready) { c.document_count = ready; renderCollections(); }
    }
  }

  function renderSelected() {
    $("collection-card").hidden = !selected;
    if (!selected) return;
    $("collection-title").textContent = selected.name;
    $("collection-meta").textContent = selected.is_owner ? access(selected) : `Shared with you by ${selected.owner} (read only)`;
    $("owner-tools").hidden = !selected.is_owner;
    $("s-users").value = selected.shared_with.join(", ");
    $("s-everyone").checked = selected.shared_with_everyone;
    const select = $("s-agent");
    select.replaceChildren(el("option", { value: "" }, "No agent"));
    for (const a of agents.filter((x) => x.editable)) {
      const option = el("option", { value: a.assistant_id }, a.display_name || a.name);
      if (selected.agent === a.assistant_id) option.selected = true;
      select.append(option);
    }
    renderCollections();
    loadDocuments();
  }

  function selectFromHash() {
    const id = location.hash.slice(1);
    selected = collections.find((c) => c.id === id) || null;
    renderSelected();
  }

  async function loadCollections() {
    const data = await attempt(() => api("GET", `${API}/collections`));
    if (!data) return;
    collections = data.collections;
    if (selected) selected = collections.find((c) => c.id === selected.id) || null;
    renderCollections();
  }

  $("collection-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const input = $("c-name");
    attempt(async () => {
      const c = await api("POST", `${API}/collections`, { name: input.value });
      input.value = "";
      await loadCollections();
      location.hash = c.id;
    });
  });

  $("upload-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const input = $("d-files");
    if (!input.files.length) { showError("Choose one or more files first."); return; }
    const form = new FormData();
    for (const file of input.files) form.append("files", file);
    attempt(async () => {
      await api("POST", `${API}/collections/${selected.id}/documents`, form);
      input.value = "";
      await loadDocuments();
    });
  });

  $("url-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const input = $("d-url");
    attempt(async () => {
      await api("POST", `${API}/collections/${selected.id}/documents`, { url: input.value });
      input.value = "";
      await loadDocuments();
    });
  });

  $("share-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const users = $("s-users").value.split(",").map((s) => s.trim()).filter(Boolean);
    attempt(async () => {
      selected = await api("PATCH", `${API}/collections/${selected.id}`, {
        shared_with: users, shared_with_everyone: $("s-everyone").checked, agent: $("s-agent").value || null });
      await loadCollections();
      renderSelected();
    });
  });

  window.addEventListener("hashchange", selectFromHash);

  (async () => {
    const data = await attempt(() => api("GET", "/api/agents"));
    agents = (data && data.agents) || [];
    await loadCollections();
    selectFromHash();
  })();
})();
