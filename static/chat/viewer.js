/* The files panel (outputs, uploads with their Markdown versions grouped under them, the
 * storage quota) and the file viewer: a side panel that can go full width, full screen on
 * a phone. What it shows depends on the file: Markdown (rendered or raw), code
 * (highlighted), images, PDF (framed: artifact responses allow same-origin framing), CSV
 * as a table, and office documents and spreadsheets through their `.md` conversion. */
(function () {
  "use strict";

  const K = () => window.DFKit;
  const md = () => window.DFMarkdown;
  const $ = (id) => document.getElementById(id);
  const PREVIEW_BYTES = 1024 * 1024; // text previews read the first MiB (a Range request)
  const MAX_ROWS = 500;
  const IMAGE = /\.(png|jpe?g|gif|webp|bmp|svg|avif)$/i;
  const MARKDOWN = /\.(md|markdown)$/i;
  const TABLE = /\.(csv|tsv)$/i;
  const CONVERTED = /\.(docx?|pptx?|xlsx?|odt|epub)$/i; // shown through the upload's .md companion
  const TEXT = /\.(txt|py|js|mjs|ts|tsx|jsx|json|ya?ml|toml|html?|css|scss|sh|bash|sql|xml|log|ini|cfg|conf|rs|go|java|kt|c|h|cc|cpp|hpp|rb|php|r|tex|swift|lua|pl|diff|patch)$/i;

  let deps = null, artifacts = [], uploads = [], quota = null, presentingRun = null;
  let current = null, opener = null;
  const el = {};

  function threadId() { return deps.threadId(); }

  function artifactUrl(path, download) {
    const clean = String(path).replace(/^\/+/, "").split("/").map(encodeURIComponent).join("/");
    return `/api/threads/${encodeURIComponent(threadId())}/artifacts/${clean}${download ? "?download=true" : ""}`;
  }

  function archiveUrl(runId) {
    return `/api/threads/${encodeURIComponent(threadId())}/runs/${encodeURIComponent(runId)}/artifacts/archive`;
  }

  // ------------------------------------------------------------------ the files panel

  function fileButton(path, label, title) {
    return K().h("button", { type: "button", class: "link-button file-open", text: label, title: title || path,
      "aria-label": "Open " + label, onclick: (ev) => open(path, { opener: ev.currentTarget }) });
  }

  function renderLists() {
    const { h, basename, formatSize, icon } = K();
    el.artifactList.replaceChildren(...artifacts.map((p) => h("li", { class: "file-row" },
      fileButton(p, basename(p)),
      h("a", { href: artifactUrl(p, true), class: "icon-link", title: "Download", "aria-label": "Download " + basename(p) }, icon("download")))));
    el.artifactEmpty.hidden = artifacts.length > 0;
    el.downloadAll.hidden = !(presentingRun && artifacts.length > 1);
    if (presentingRun) el.downloadAll.href = archiveUrl(presentingRun);
    // a converted document's .md companion is listed under its original, not beside it
    const companions = new Set(uploads.map((f) => f.markdown_file).filter(Boolean));
    el.uploadList.replaceChildren(...uploads.filter((f) => !companions.has(f.filename)).map((f) => {
      const path = f.virtual_path || f.path;
      const del = h("button", { type: "button", class: "icon-btn small-btn", title: "Delete", "aria-label": "Delete " + f.filename,
        onclick: () => removeUpload(f) }, icon("trash"));
      const row = h("li", { class: "file-row" }, fileButton(path, f.filename), h("span", { class: "muted small", text: formatSize(f.size) }), del);
      if (f.markdown_file) {
        row.append(h("div", { class: "file-companion small" }, "Markdown version: ",
          fileButton(f.markdown_virtual_path || f.markdown_path, f.markdown_file, "The text the agent reads")));
      }
      return row;
    }));
    el.uploadEmpty.hidden = uploads.length > 0;
    el.filesCount.hidden = artifacts.length === 0;
    el.filesCount.textContent = String(artifacts.length);
  }

  async function removeUpload(f) {
    const extra = f.markdown_file ? ` Its Markdown version (${f.markdown_file}) goes with it.` : "";
    const ok = await K().confirm({ title: `Delete ${f.filename}?`, message: "The agent can no longer read it in this chat." + extra,
      confirmLabel: "Delete", danger: true });
    if (!ok) return;
    try {
      await deps.api("DELETE", `/threads/${encodeURIComponent(threadId())}/uploads/${encodeURIComponent(f.filename)}`);
    } catch (e) {
      deps.setNote(e.message, "error");
      return;
    }
    if (current && (current.path === (f.virtual_path || f.path) || current.path === f.markdown_virtual_path)) close();
    await refresh();
  }

  async function refresh() {
    if (!threadId()) return;
    try {
      const data = await deps.api("GET", `/threads/${encodeURIComponent(threadId())}/uploads/list`);
      uploads = data.files || [];
      quota = data.quota || null;
    } catch (e) { /* keep what is shown */ }
    renderLists();
    renderQuota();
  }

  // The sandbox's disk quota (sandbox.thread_quota_mb / user_quota_mb); a limit of 0 is "none".
  function renderQuota() {
    const { formatSize } = K();
    const rows = [["thread", "This chat"], ["user", "All your chats"]];
    let shown = false;
    const full = [];
    for (const [key, label] of rows) {
      const used = (quota && quota[key + "_bytes"]) || 0, limit = (quota && quota[key + "_limit"]) || 0;
      const row = $(`storage-${key}-row`), meter = $(`storage-${key}`);
      row.hidden = meter.hidden = !limit;
      if (!limit) continue;
      shown = true;
      meter.value = Math.min(used / limit, 1);
      $(`storage-${key}-text`).textContent = `${formatSize(used)} of ${formatSize(limit)}`;
      meter.setAttribute("aria-valuetext", `${formatSize(used)} of ${formatSize(limit)} used`);
      if (used >= limit) full.push(label.toLowerCase());
    }
    el.storage.hidden = !shown;
    el.storageFull.hidden = full.length === 0;
    el.storageFull.textContent = full.length
      ? `Storage is full (${full.join(", ")}): commands that write files stop and uploads are refused until files are deleted.`
      : "";
  }

  function openFiles(show) {
    if (show && el.panel.hidden) refresh(); // the agent may have written since
    el.panel.hidden = !show;
    el.toggle.setAttribute("aria-expanded", String(show));
    document.body.classList.toggle("files-open", show);
  }

  // ------------------------------------------------------------------ the viewer

  function kindOf(path) {
    if (IMAGE.test(path)) return "image";
    if (/\.pdf$/i.test(path)) return "pdf";
    if (MARKDOWN.test(path)) return "markdown";
    if (TABLE.test(path)) return "table";
    if (CONVERTED.test(path)) return "converted";
    if (TEXT.test(path) || !/\.[a-z0-9]+$/i.test(K().basename(path))) return "code";
    return "none";
  }

  async function readText(url) {
    const res = await fetch(url, { credentials: "same-origin", headers: { Range: `bytes=0-${PREVIEW_BYTES - 1}` } });
    if (!res.ok) throw new Error(`could not open the file (${res.status})`);
    const total = Number(((res.headers.get("Content-Range") || "").split("/")[1]) || 0);
    return { text: await res.text(), cut: res.status === 206 && total > PREVIEW_BYTES };
  }

  function parseDelimited(text, sep) {
    const rows = [];
    let row = [], field = "", quoted = false;
    for (let i = 0; i < text.length; i++) {
      const c = text[i];
      if (quoted) {
        if (c === '"' && text[i + 1] === '"') { field += '"'; i++; } else if (c === '"') quoted = false; else field += c;
      } else if (c === '"' && field === "") quoted = true;
      else if (c === sep) { row.push(field); field = ""; }
      else if (c === "\n" || c === "\r") {
        if (c === "\r" && text[i + 1] === "\n") i++;
        row.push(field); rows.push(row); row = []; field = "";
        if (rows.length > MAX_ROWS) break;
      } else field += c;
    }
    if (field !== "" || row.length) { row.push(field); rows.push(row); }
    return rows;
  }

  function tableOf(rows, cut) {
    const { h } = K();
    const [head, ...body] = rows;
    const shown = body.slice(0, MAX_ROWS);
    const table = h("table", { class: "viewer-table" },
      h("thead", {}, h("tr", {}, ...(head || []).map((c) => h("th", { scope: "col", text: c })))),
      h("tbody", {}, ...shown.map((r) => h("tr", {}, ...r.map((c) => h("td", { text: c }))))));
    const out = [h("div", { class: "table-wrap" }, table)];
    if (cut || body.length > MAX_ROWS) out.push(h("p", { class: "muted small", text: `Showing the first ${shown.length} rows: download the file for all of it.` }));
    return out;
  }

  function codeBox(text, path) {
    const ext = (path.match(/\.([a-z0-9]+)$/i) || [])[1] || "";
    const box = K().h("div", { class: "md viewer-code" });
    md().render(box, "```" + ext + "\n" + text.replace(/```/g, "``\u200b`") + "\n```");
    return box;
  }

  function companionOf(path) {
    const f = uploads.find((u) => (u.virtual_path || u.path) === path);
    return f && f.markdown_file ? (f.markdown_virtual_path || f.markdown_path) : null;
  }

  function setBody(...nodes) { el.vBody.replaceChildren(...nodes.filter(Boolean)); }

  async function render(path, raw) {
    const { h, basename } = K();
    const url = artifactUrl(path, false);
    const kind = kindOf(path);
    el.vRawToggle.hidden = kind !== "markdown" && kind !== "converted";
    el.vRawToggle.setAttribute("aria-pressed", String(!!raw));
    el.vRawToggle.textContent = raw ? "Rendered" : "Raw";
    el.viewer.dataset.kind = kind;
    if (kind === "image") return setBody(h("img", { src: url, alt: basename(path), class: "viewer-image" }));
    if (kind === "pdf") return setBody(h("iframe", { src: url, title: basename(path), class: "viewer-pdf" }));
    if (kind === "none") return setBody(h("p", { class: "muted", text: "No preview for this kind of file: download it or open it in a new tab." }));
    let source = path;
    if (kind === "converted") {
      source = companionOf(path);
      if (!source) return setBody(h("p", { class: "muted", text: "No preview: this document has no Markdown version (uploads are converted; files the agent wrote are not)." }));
    }
    setBody(h("p", { class: "muted", text: "Loading…" }));
    const { text, cut } = await readText(artifactUrl(source, false));
    if (current && current.path !== path) return; // another file was opened meanwhile
    const note = cut ? h("p", { class: "muted small", text: "Showing the first 1 MB: download the file for all of it." }) : null;
    if (kind === "table") {
      const rows = parseDelimited(text, /\.tsv$/i.test(path) ? "\t" : ",");
      return setBody(...tableOf(rows, cut));
    }
    if (kind === "markdown" || kind === "converted") {
      if (raw) return setBody(h("pre", { class: "viewer-raw", text }), note);
      const box = h("div", { class: "md viewer-md" });
      md().render(box, text);
      const intro = kind === "converted" ? h("p", { class: "muted small", text: "Shown through its Markdown conversion, the text the agent reads." }) : null;
      return setBody(intro, box, note);
    }
    return setBody(codeBox(text, path), note);
  }

  async function open(path, opts) {
    const { basename } = K();
    opener = (opts && opts.opener) || document.activeElement;
    current = { path, raw: false };
    el.viewer.hidden = false;
    document.body.classList.add("viewer-open");
    el.vName.textContent = basename(path);
    el.vName.title = path;
    el.vTab.href = artifactUrl(path, false);
    el.vDownload.href = artifactUrl(path, true);
    el.vDownload.setAttribute("download", basename(path));
    el.vClose.focus();
    try { await render(path, false); } catch (e) { setBody(K().h("p", { class: "error-text", text: e.message })); }
  }

  function close() {
    if (el.viewer.hidden) return;
    el.viewer.hidden = true;
    el.viewer.classList.remove("wide");
    el.vWide.setAttribute("aria-pressed", "false");
    document.body.classList.remove("viewer-open");
    setBody();
    current = null;
    if (opener && opener.isConnected) opener.focus();
    opener = null;
  }

  function init(options) {
    deps = options;
    Object.assign(el, {
      panel: $("files-panel"), toggle: $("files-toggle"), filesCount: $("files-count"), artifactList: $("artifact-list"),
      artifactEmpty: $("artifact-empty"), uploadList: $("upload-list"), uploadEmpty: $("upload-empty"), downloadAll: $("download-all"),
      storage: $("storage"), storageFull: $("storage-full"), viewer: $("viewer"), vName: $("viewer-name"), vBody: $("viewer-body"),
      vTab: $("viewer-tab"), vDownload: $("viewer-download"), vWide: $("viewer-wide"), vClose: $("viewer-close"), vRawToggle: $("viewer-raw"),
    });
    el.toggle.addEventListener("click", () => openFiles(el.panel.hidden));
    $("files-close").addEventListener("click", () => openFiles(false));
    el.vClose.addEventListener("click", close);
    el.vWide.addEventListener("click", () => {
      const wide = el.viewer.classList.toggle("wide");
      el.vWide.setAttribute("aria-pressed", String(wide));
    });
    el.vRawToggle.addEventListener("click", () => {
      if (!current) return;
      current.raw = !current.raw;
      render(current.path, current.raw).catch((e) => setBody(K().h("p", { class: "error-text", text: e.message })));
    });
    el.viewer.addEventListener("keydown", (ev) => {
      if (ev.key === "Escape") { ev.preventDefault(); ev.stopPropagation(); close(); }
    });
  }

  window.DFViewer = {
    init, open, close, refresh, openFiles, artifactUrl, archiveUrl,
    isOpen: () => !el.viewer.hidden,
    filesOpen: () => !el.panel.hidden,
    setArtifacts(list) { artifacts = list || []; renderLists(); },
    /* The thread is gone (a discarded draft): nothing to list. */
    clear() { artifacts = []; uploads = []; quota = null; presentingRun = null; close(); renderLists(); renderQuota(); },
    /* The latest run that presented files: "Download all" packs its files. */
    presentedBy(runId) { if (runId) { presentingRun = runId; renderLists(); } },
  };
})();
