/* Files for the next message: picked with the paperclip or dropped on the chat. Each is
 * checked against the server's limits before any byte is sent (size, count, blocked
 * extensions), then uploaded with a progress bar; the message takes the finished ones. */
(function () {
  "use strict";

  const { h, csrf, formatSize } = window.DFKit;
  let deps = null;
  let list = []; // {file, status, progress, info, error}

  let limits = null;
  async function uploadLimits() {
    if (limits) return limits;
    try {
      limits = await deps.api("GET", `/threads/${encodeURIComponent(deps.threadId())}/uploads/limits`);
    } catch (e) {
      limits = {};
    }
    return limits;
  }

  async function add(fileList) {
    const files = [...fileList];
    if (!files.length) return;
    try { await deps.ensureThread(); } catch (e) { deps.setNote(e.message, "error"); return; }
    const lim = await uploadLimits();
    const blocked = (lim.blocked_extensions || lim.forbidden_extensions || []).map((x) => String(x).toLowerCase().replace(/^\./, ""));
    for (const file of files) {
      const att = { file, status: "uploading", progress: 0, info: null, error: "" };
      const ext = (file.name.match(/\.([^.]+)$/) || [])[1];
      if (lim.max_file_size && file.size > lim.max_file_size) { att.status = "error"; att.error = `too large (max ${formatSize(lim.max_file_size)})`; }
      else if (ext && blocked.includes(ext.toLowerCase())) { att.status = "error"; att.error = `.${ext} files are not allowed`; }
      else if (lim.max_files && list.filter((a) => a.status !== "error").length >= lim.max_files) { att.status = "error"; att.error = `at most ${lim.max_files} files`; }
      list.push(att);
      if (att.status === "uploading") upload(att);
    }
    render();
  }

  function upload(att) {
    const form = new FormData();
    form.append("files", att.file, att.file.name);
    const xhr = new XMLHttpRequest();
    xhr.open("POST", `/api/threads/${encodeURIComponent(deps.threadId())}/uploads`);
    xhr.setRequestHeader("X-CSRFToken", csrf());
    xhr.upload.onprogress = (ev) => { if (ev.lengthComputable) { att.progress = ev.loaded / ev.total; render(); } };
    xhr.onload = () => {
      let data = null;
      try { data = JSON.parse(xhr.responseText); } catch (e) { data = null; }
      if (xhr.status >= 200 && xhr.status < 300 && data && Array.isArray(data.files) && data.files.length) {
        att.status = "done";
        att.info = data.files.find((f) => f.filename === att.file.name) || data.files[0];
        deps.uploaded();
      } else {
        att.status = "error";
        att.error = (data && (data.detail || data.message)) || (xhr.status === 404 ? "uploads are not available on this server" : `upload failed (${xhr.status})`);
        if (data && Array.isArray(data.skipped_files) && data.skipped_files.length) att.error = "skipped by the server: " + (data.message || "not allowed");
      }
      render();
    };
    xhr.onerror = () => { att.status = "error"; att.error = "network error"; render(); };
    xhr.send(form);
  }

  function render() {
    deps.list.replaceChildren(...list.map((att) => {
      const remove = h("button", { type: "button", class: "icon-btn small-btn", "aria-label": "Remove " + att.file.name, onclick: () => {
        list = list.filter((a) => a !== att);
        render();
        if (!list.length) deps.emptied();
      } });
      remove.append(window.dfUI.icon("x"));
      const status = att.status === "uploading" ? h("progress", { max: "1", value: String(att.progress), "aria-label": "Uploading " + att.file.name })
        : att.status === "error" ? h("span", { class: "error-text", text: att.error }) : h("span", { class: "muted", text: formatSize(att.file.size) });
      return h("li", { class: "attachment " + att.status }, h("span", { class: "att-name", text: att.file.name }), status, remove);
    }));
  }

  const hasFiles = (ev) => ev.dataTransfer && [...(ev.dataTransfer.types || [])].includes("Files");

  /* Files dragged anywhere over ``area`` are attached; ``hint`` shows while they hover. */
  function acceptDrops(area, hint) {
    let depth = 0; // dragenter/leave fire for every child crossed: count them
    area.addEventListener("dragenter", (ev) => { if (hasFiles(ev)) { depth++; hint.hidden = false; area.classList.add("dragging"); } });
    area.addEventListener("dragover", (ev) => { if (hasFiles(ev)) ev.preventDefault(); });
    area.addEventListener("dragleave", () => { depth = Math.max(0, depth - 1); if (!depth) { hint.hidden = true; area.classList.remove("dragging"); } });
    area.addEventListener("drop", (ev) => {
      if (!hasFiles(ev)) return;
      ev.preventDefault();
      depth = 0;
      hint.hidden = true;
      area.classList.remove("dragging");
      add(ev.dataTransfer.files);
    });
  }

  /* Files pasted into ``input`` (a screenshot from the clipboard) are attached as a drop is;
     pasted text is left to the textarea. */
  function acceptPaste(input) {
    input.addEventListener("paste", (ev) => {
      const files = ev.clipboardData && ev.clipboardData.files;
      if (!files || !files.length) return;
      ev.preventDefault();
      add(files);
    });
  }

  window.DFAttach = {
    init(options) { deps = options; },
    acceptDrops,
    acceptPaste,
    add,
    ready: () => list.filter((a) => a.status === "done"),
    uploading: () => list.some((a) => a.status === "uploading"),
    clear() { list = []; render(); },
    forgetLimits() { limits = null; }, // a new thread may have other limits
  };
})();
