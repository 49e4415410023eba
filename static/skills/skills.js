// The Skills page: list, enable/disable, read SKILL.md, install (upload or a chat's file),
// roll back and delete custom skills. Everything goes through /api/skills. A skill the agent
// wrote whose install scan found something high is "held": it shows why, and turning it on
// asks the user to confirm they read the findings (acknowledge_findings).
(function () {
  "use strict";

  const { api } = window.DeerFlowPage;

  const API = "/api/skills";
  const $ = (id) => document.getElementById(id);
  const errorBox = $("skills-error");
  let skills = [];

  function h(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "text") node.textContent = v;
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? "" : v);
    }
    for (const c of children) if (c !== null && c !== undefined) node.append(c);
    return node;
  }

  function showError(message) {
    errorBox.textContent = message || "";
    errorBox.hidden = !message;
  }

  async function load() {
    try {
      skills = (await api("GET", API)).skills || [];
      showError("");
    } catch (err) {
      showError(`Could not load skills: ${err.message}`);
      skills = [];
    }
    render();
  }

  function findingsList(findings, label) {
    const list = h("ul", { class: "findings", "aria-label": label || "Findings" });
    for (const f of findings) {
      list.append(h("li", { class: f.severity }, h("span", { class: "sev", text: f.severity }),
        h("code", { text: f.rule }), " ", `${f.file}${f.line ? `:${f.line}` : ""} — ${f.message}`));
    }
    return list;
  }

  function reviewNote(s) {
    const findings = s.review_findings || [];
    if (!findings.length) return null;
    const summary = s.held
      ? `Held: the agent wrote this skill and its scan found ${findings.length} thing${findings.length > 1 ? "s" : ""} to check before it runs`
      : `Turned on after review (${findings.length} finding${findings.length > 1 ? "s" : ""})`;
    return h("details", { class: `review-note${s.held ? " held" : ""}`, open: s.held },
      h("summary", { text: summary }), findingsList(findings, `Findings for ${s.name}`));
  }

  function render() {
    const rows = $("skill-rows");
    rows.replaceChildren();
    $("skills-empty").hidden = skills.length > 0;
    for (const s of skills) {
      const toggle = h("input", { type: "checkbox", checked: s.enabled, "aria-label": `Enable ${s.name}` });
      toggle.addEventListener("change", () => setEnabled(s, toggle));
      const state = s.held ? h("span", { class: "held-badge", text: "Held" }) : h("span", { text: s.enabled ? "On" : "Off" });
      const actions = h("div", { class: "row-actions" },
        h("button", { type: "button", class: "small-button", text: "Read", "aria-label": `Read ${s.name}`, onclick: () => openDetail(s.name) }));
      if (s.editable) {
        actions.append(h("button", { type: "button", class: "small-button danger", text: "Delete", "aria-label": `Delete ${s.name}`, onclick: () => remove(s) }));
      }
      rows.append(h("tr", { "data-skill": s.name },
        h("td", { "data-label": "Skill" }, h("div", { class: "skill-name", text: `/${s.name}` }), h("div", { class: "skill-desc", text: s.description }),
          reviewNote(s)),
        h("td", { "data-label": "Source" }, h("span", { class: `source ${s.category}`, text: s.category })),
        h("td", { "data-label": "Version", text: s.version || "—" }),
        h("td", { "data-label": "Enabled" }, h("label", { class: "switch" }, toggle, state)),
        h("td", {}, actions)));
    }
  }

  async function setEnabled(skill, box) {
    const body = { enabled: box.checked };
    if (box.checked && skill.held) {
      const n = skill.review_findings.length;
      const ok = await window.dfUI.confirm({
        title: `Turn on ${skill.name} anyway?`,
        message: `The agent wrote this skill and its scan found ${n} thing${n > 1 ? "s" : ""} to check (listed under its name). ` +
          "Turn it on only if you have read them and trust what it does.",
        confirmLabel: "Turn on anyway", danger: true });
      if (!ok) { box.checked = false; return; }
      body.acknowledge_findings = true;
    }
    box.disabled = true;
    try {
      const updated = await api("PUT", `${API}/${encodeURIComponent(skill.name)}`, body);
      Object.assign(skill, updated);
      showError("");
    } catch (err) {
      box.checked = !box.checked;
      showError(`Could not change ${skill.name}: ${err.message}`);
    }
    render();
  }

  async function remove(skill) {
    const whose = skill.category === "global" ? " for every user" : "";
    if (!await window.dfUI.confirm({ title: `Delete the skill ${skill.name}${whose}?`, message: "Its earlier versions are removed too.", confirmLabel: "Delete", danger: true })) return;
    try {
      await api("DELETE", `${API}/${encodeURIComponent(skill.name)}`);
      $("skill-detail").hidden = true;
      await load();
    } catch (err) {
      showError(`Could not delete ${skill.name}: ${err.message}`);
    }
  }

  async function openDetail(name) {
    let detail;
    try {
      detail = await api("GET", `${API}/${encodeURIComponent(name)}`);
    } catch (err) {
      showError(`Could not open ${name}: ${err.message}`);
      return;
    }
    $("detail-title").textContent = `${detail.name} — SKILL.md`;
    const meta = [detail.category, detail.version && `version ${detail.version}`, detail.author && `by ${detail.author}`,
      detail.license, detail.container_path,
      detail.allowed_tools && `allowed tools: ${detail.allowed_tools.join(", ")}`,
      detail.required_secrets && detail.required_secrets.length && `secrets: ${detail.required_secrets.join(", ")}`].filter(Boolean);
    $("detail-meta").textContent = meta.join(" · ");
    const body = $("detail-body");
    const text = (detail.content || "").replace(/^---\n[\s\S]*?\n---\n?/, "");
    if (window.DFMarkdown) window.DFMarkdown.render(body, text);
    else body.textContent = text;
    const versions = $("detail-versions");
    versions.replaceChildren();
    versions.hidden = !(detail.versions && detail.versions.length);
    if (!versions.hidden) {
      const latest = detail.versions[0];
      versions.append(h("span", { text: `Earlier versions: ${detail.versions.map((v) => v.version || "unversioned").join(", ")}` }),
        h("button", { type: "button", class: "small-button", text: `Roll back to ${latest.version || "the previous version"}`,
          onclick: () => rollback(detail.name) }));
    }
    renderHistory(detail);
    $("skill-detail").hidden = false;
    $("skill-detail").scrollIntoView({ block: "nearest" });
  }

  // The agent's changes (skill_manage), each with the file's text before and after.
  function renderHistory(detail) {
    const rows = $("history-rows");
    const history = detail.history || [];
    rows.replaceChildren();
    $("detail-history").hidden = !history.length;
    for (const r of history) {
      const when = new Date(r.created_at).toLocaleString();
      const where = r.thread_id ? h("a", { href: `/c/${encodeURIComponent(r.thread_id)}/`, text: "in a chat" }) : "by you";
      const head = h("div", { class: "history-head" },
        h("span", { class: "history-what" }, h("strong", { text: r.action_display }), " ", h("code", { text: r.file_path })),
        h("span", { class: "muted small" }, `${when} · `, where));
      if (r.restorable) {
        head.append(h("button", { type: "button", class: "small-button", text: "Restore",
          "aria-label": `Restore ${r.file_path} as it was before this change`, onclick: () => restore(detail.name, r) }));
      }
      const texts = h("details", { class: "history-texts" }, h("summary", { text: "Before and after" }),
        h("div", { class: "history-diff" },
          h("div", {}, h("p", { class: "muted small", text: "Before" }), h("pre", { text: r.prev_content ?? "(no file)" })),
          h("div", {}, h("p", { class: "muted small", text: "After" }), h("pre", { text: r.new_content ?? "(removed)" }))));
      rows.append(h("li", { class: "history-row" }, head, texts));
    }
  }

  async function restore(name, row) {
    if (!await window.dfUI.confirm({ title: `Restore ${row.file_path}?`, message: `It goes back to its text from before this change (${row.action_display}). The restore is recorded too, so you can undo it.`, confirmLabel: "Restore" })) return;
    try {
      const done = await api("POST", `${API}/${encodeURIComponent(name)}/history/${row.id}/restore`);
      showResult(true, done.message);
      await load();
      await openDetail(name);
    } catch (err) {
      showError(`Could not restore ${row.file_path}: ${err.message}`);
    }
  }

  async function rollback(name) {
    try {
      const done = await api("POST", `${API}/${encodeURIComponent(name)}/rollback`, {});
      showResult(true, done.message);
      await load();
      await openDetail(name);
    } catch (err) {
      showError(`Could not roll back ${name}: ${err.message}`);
    }
  }

  function showResult(ok, message, findings, warn) {
    const box = $("install-result");
    box.replaceChildren(h("p", { class: ok ? (warn ? "notice warn" : "notice") : "alert", role: ok ? "status" : "alert", text: message }));
    if (findings && findings.length) box.append(findingsList(findings));
  }

  async function install(ev) {
    ev.preventDefault();
    const file = $("skill-file").files[0];
    // Only admins get the box; the API refuses the scope for anyone else anyway.
    const everyone = $("install-global") && $("install-global").checked;
    let body;
    if (file) {
      body = new FormData();
      body.append("file", file);
      if (everyone) body.append("scope", "global");
    } else {
      const thread_id = $("install-thread").value.trim();
      const path = $("install-path").value.trim();
      if (!thread_id || !path) {
        showResult(false, "Choose a .skill file, or give a chat id and the path of a file in it.");
        return;
      }
      body = { thread_id, path };
      if (everyone) body.scope = "global";
    }
    $("install-button").disabled = true;
    try {
      const done = await api("POST", `${API}/install`, body);
      showResult(true, done.message + (done.findings.length && !done.held ? " Review these findings:" : ""), done.findings, done.held);
      $("install-form").reset();
      await load();
    } catch (err) {
      showResult(false, `Not installed: ${err.message}`, (err.data && err.data.findings) || []);
    } finally {
      $("install-button").disabled = false;
    }
  }

  $("install-form").addEventListener("submit", install);
  $("detail-close").addEventListener("click", () => { $("skill-detail").hidden = true; });
  load();
})();
