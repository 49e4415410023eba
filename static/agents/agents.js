// The Agents gallery: cards with search, and an editor (with a live SOUL.md preview) to create,
// edit, duplicate and delete custom agents. Everything goes through /api/agents.
(function () {
  "use strict";

  const { api, el } = window.DeerFlowPage;
  const boot = JSON.parse(document.getElementById("agents-boot").textContent);
  const $ = (id) => document.getElementById(id);
  const API = "/api/agents";
  let agents = [];
  let skills = [];
  let editing = null; // the agent being edited, or null for a new one
  let searchTimer = null;

  function showError(box, message) {
    box.textContent = message || "";
    box.hidden = !message;
  }

  async function load() {
    const q = $("agent-search").value.trim();
    try {
      agents = (await api("GET", API + (q ? "?q=" + encodeURIComponent(q) : ""))).agents || [];
      showError($("agents-error"), "");
    } catch (err) {
      showError($("agents-error"), "Could not load agents: " + err.message);
      agents = [];
    }
    render();
  }

  function card(agent) {
    const title = agent.display_name || agent.name;
    const tags = el("div", { class: "tags" },
      el("span", { class: "tag" }, agent.model || "default model"),
      agent.shared ? el("span", { class: "tag shared" }, agent.editable ? "shared" : "shared by " + agent.owner) : "",
      agent.memory_enabled ? el("span", { class: "tag" }, "memory") : "");
    const actions = el("div", { class: "card-actions" },
      el("a", { class: "small-button", href: "/?agent=" + encodeURIComponent(agent.assistant_id), "aria-label": "Chat with " + title }, "Chat"));
    if (agent.editable) actions.append(el("button", { type: "button", class: "small-button", "aria-label": "Edit " + title, onclick: () => openEditor(agent) }, "Edit"));
    actions.append(el("button", { type: "button", class: "small-button", "aria-label": "Duplicate " + title, onclick: () => duplicate(agent) }, "Duplicate"));
    if (agent.editable) actions.append(el("button", { type: "button", class: "small-button danger", "aria-label": "Delete " + title, onclick: () => remove(agent) }, "Delete"));
    const item = el("li", { class: "agent-card", "data-agent": agent.name },
      el("div", { class: "title" }, el("span", { class: "avatar", "aria-hidden": "true" }, agent.avatar || "🤖"),
        el("div", {}, el("h3", {}, title), el("div", { class: "name" }, agent.name))),
      el("p", { class: "desc" }, agent.description || ""), tags, actions);
    if (agent.color) item.style.setProperty("--agent-color", agent.color);
    return item;
  }

  function render() {
    $("agent-grid").replaceChildren(...agents.map(card));
    $("agents-empty").hidden = agents.length > 0;
  }

  async function duplicate(agent) {
    try {
      const copy = await api("POST", `${API}/${encodeURIComponent(agent.assistant_id)}/duplicate`, {});
      await load();
      openEditor(copy);
    } catch (err) {
      showError($("agents-error"), "Could not duplicate: " + err.message);
    }
  }

  async function remove(agent) {
    if (!await window.dfUI.confirm({ title: `Delete the agent ${agent.display_name || agent.name}?`, message: "Its chats stay readable.", confirmLabel: "Delete", danger: true })) return;
    try {
      await api("DELETE", `${API}/${encodeURIComponent(agent.name)}`);
      if (editing && editing.name === agent.name) closeEditor();
      await load();
    } catch (err) {
      showError($("agents-error"), "Could not delete: " + err.message);
    }
  }

  // ------------------------------------------------------------------ editor

  function options(select, items, chosen) {
    select.replaceChildren(...items.map(([value, label]) => {
      const o = el("option", { value }, label);
      if (value === (chosen || "")) o.selected = true;
      return o;
    }));
  }

  function checks(box, names, chosen, prefix) {
    box.replaceChildren(...names.map((name) => {
      const input = el("input", { type: "checkbox", value: name, id: prefix + name });
      input.checked = Array.isArray(chosen) && chosen.includes(name);
      return el("label", { class: "check", for: prefix + name }, input, name);
    }));
    if (!names.length) box.append(el("span", { class: "small muted" }, "none configured"));
  }

  function ticked(box) {
    const values = [...box.querySelectorAll("input:checked")].map((i) => i.value);
    return values.length ? values : null;
  }

  async function openEditor(agent) {
    editing = agent && agent.editable ? agent : null;
    const a = editing || {};
    $("editor-title").textContent = editing ? "Edit " + (a.display_name || a.name) : "New agent";
    $("f-name").value = a.name || "";
    $("f-display").value = a.display_name || "";
    $("f-description").value = a.description || "";
    $("f-avatar").value = a.avatar || "";
    $("f-color").value = a.color || "#2f6fed";
    options($("f-model"), [["", "Default model"], ...boot.models.map((m) => [m.name, m.display_name || m.name])], a.model);
    options($("f-effort"), [["", "Default"], ...boot.reasoning_efforts.map((e) => [e, e])], a.reasoning_effort);
    const settings = a.model_settings || {};
    $("f-temperature").value = settings.temperature ?? "";
    $("f-max-tokens").value = settings.max_tokens ?? "";
    $("f-thinking").checked = !!a.thinking_enabled;
    $("f-memory").checked = a.memory_enabled !== false;
    $("f-shared").checked = !!a.shared;
    $("f-soul").value = a.soul || "";
    checks($("f-tool-groups"), boot.tool_groups, a.tool_groups, "tg-");
    try {
      skills = (await api("GET", "/api/skills")).skills || [];
    } catch (err) {
      skills = [];
    }
    checks($("f-skills"), skills.map((s) => s.name), a.skills, "sk-");
    showGithub(a.github);
    $("editor-version").textContent = editing ? `version ${a.version}` : "";
    $("name-hint").textContent = "Lowercase letters, digits, - and _.";
    await loadHistory();
    showError($("form-error"), "");
    preview();
    $("editor").hidden = false;
    $("f-name").focus();
  }

  // Every saved change is a version; restoring one saves its settings as a new version.
  async function loadHistory() {
    const box = $("history");
    box.hidden = !editing;
    if (!editing) return;
    let versions = [];
    try {
      versions = (await api("GET", `${API}/${encodeURIComponent(editing.name)}/versions`)).versions || [];
    } catch (err) {
      versions = [];
    }
    $("history-list").replaceChildren(...versions.map((v) => {
      const when = new Date(v.created_at).toLocaleString();
      const item = el("li", { "data-version": String(v.version) }, el("span", {}, `Version ${v.version} · ${when}`));
      if (v.version !== editing.version) {
        item.append(" ", el("button", { type: "button", class: "small-button", "aria-label": `Restore version ${v.version}`,
          onclick: () => restore(v) }, "Restore"));
      } else {
        item.append(" ", el("span", { class: "small muted" }, "(current)"));
      }
      return item;
    }));
  }

  async function restore(version) {
    const settings = Object.assign({}, version.settings);
    delete settings.name; // a rename since then stays
    try {
      const saved = await api("PUT", `${API}/${encodeURIComponent(editing.name)}`, settings);
      await load();
      await openEditor(saved);
      $("editor-version").textContent = `Restored version ${version.version} · now version ${saved.version}`;
    } catch (err) {
      showError($("form-error"), "Could not restore: " + err.message);
    }
  }

  function closeEditor() {
    $("editor").hidden = true;
    editing = null;
  }

  function preview() {
    const text = $("f-soul").value;
    const target = $("soul-preview");
    if (window.DFMarkdown && text.trim()) window.DFMarkdown.render(target, text);
    else target.textContent = text.trim() ? text : "The persona appears here as you type.";
  }

  // The github block as the controls show it: every listed repository gets the ticked events.
  // Settings the controls do not show (recursion_limit, installation_id) are kept as they were.
  let githubBase = null;

  function showGithub(block) {
    githubBase = block || null;
    const bindings = (block && block.bindings) || [];
    const has = (event, action) => bindings.some((b) => {
      const t = (b.triggers || {})[event];
      return t && (!action || (t.actions || []).includes(action));
    });
    $("f-gh-repos").value = bindings.map((b) => b.repo).join("\n");
    $("gh-issue-opened").checked = has("issues", "opened");
    $("gh-pr-opened").checked = has("pull_request", "opened");
    $("gh-pr-sync").checked = has("pull_request", "synchronize");
    $("gh-review-comment").checked = has("pull_request_review_comment");
    $("gh-comment").checked = has("issue_comment");
    $("gh-labeled").checked = has("issues", "labeled") || has("pull_request", "labeled");
    const labels = new Set();
    bindings.forEach((b) => Object.values(b.triggers || {}).forEach((t) => (t.labels || []).forEach((l) => labels.add(l))));
    $("f-gh-labels").value = [...labels].join(", ");
    $("f-gh-login").value = (block && block.bot_login) || "";
  }

  function githubBody() {
    const repos = $("f-gh-repos").value.split(/[\s,]+/).map((r) => r.trim()).filter(Boolean);
    if (!repos.length) return null;
    const labels = $("f-gh-labels").value.split(",").map((l) => l.trim()).filter(Boolean);
    const labeled = $("gh-labeled").checked;
    const triggers = {};
    const issueActions = [$("gh-issue-opened").checked && "opened", labeled && "labeled"].filter(Boolean);
    const prActions = [$("gh-pr-opened").checked && "opened", $("gh-pr-sync").checked && "synchronize", labeled && "labeled"].filter(Boolean);
    if (issueActions.length) triggers.issues = labels.length && labeled ? { actions: issueActions, labels } : { actions: issueActions };
    if (prActions.length) triggers.pull_request = labels.length && labeled ? { actions: prActions, labels } : { actions: prActions };
    if ($("gh-review-comment").checked) triggers.pull_request_review_comment = { require_mention: true };
    if ($("gh-comment").checked) triggers.issue_comment = { require_mention: true };
    const block = { ...(githubBase || {}), bindings: repos.map((repo) => ({ repo, triggers })) };
    const login = $("f-gh-login").value.trim();
    if (login) block.bot_login = login; else delete block.bot_login;
    return block;
  }

  function number(id) {
    const raw = $(id).value.trim();
    return raw === "" ? null : Number(raw);
  }

  function formBody() {
    return {
      name: $("f-name").value.trim(),
      display_name: $("f-display").value.trim(),
      description: $("f-description").value.trim(),
      avatar: $("f-avatar").value.trim(),
      color: $("f-color").value,
      model: $("f-model").value || null,
      reasoning_effort: $("f-effort").value || null,
      model_settings: { temperature: number("f-temperature"), max_tokens: number("f-max-tokens") },
      thinking_enabled: $("f-thinking").checked,
      memory_enabled: $("f-memory").checked,
      shared: $("f-shared").checked,
      tool_groups: ticked($("f-tool-groups")),
      skills: ticked($("f-skills")),
      soul: $("f-soul").value,
      github: githubBody(),
    };
  }

  async function save(ev) {
    ev.preventDefault();
    const body = formBody();
    try {
      const saved = editing
        ? await api("PUT", `${API}/${encodeURIComponent(editing.name)}`, body)
        : await api("POST", API, body);
      editing = saved;
      showGithub(saved.github);
      $("editor-title").textContent = "Edit " + (saved.display_name || saved.name);
      $("editor-version").textContent = `Saved · version ${saved.version}`;
      showError($("form-error"), "");
      await load();
      await loadHistory();
    } catch (err) {
      showError($("form-error"), err.message);
    }
  }

  async function checkName() {
    const name = $("f-name").value.trim();
    const hint = $("name-hint");
    if (!name || (editing && editing.name === name.toLowerCase())) { hint.textContent = "Lowercase letters, digits, - and _."; return; }
    try {
      const answer = await api("GET", `${API}/check?name=${encodeURIComponent(name)}`);
      hint.textContent = answer.available ? `${answer.name} is available.` : `You already have an agent called ${answer.name}.`;
    } catch (err) {
      hint.textContent = err.message;
    }
  }

  $("agent-search").addEventListener("input", () => { clearTimeout(searchTimer); searchTimer = setTimeout(load, 200); });
  $("create-by-form").addEventListener("click", () => openEditor(null));
  $("editor-close").addEventListener("click", closeEditor);
  $("f-soul").addEventListener("input", preview);
  $("f-name").addEventListener("change", checkName);
  $("agent-form").addEventListener("submit", save);
  load().then(() => { document.body.dataset.ready = "1"; });
})();
