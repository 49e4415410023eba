// The MCP settings page: status and tools per server, enable/disable, test connection, and
// the masked configuration as JSON. Everything goes through /api/mcp; errors show {"detail"}.
(function () {
  "use strict";

  const { api } = window.DeerFlowPage;

  const $ = (id) => document.getElementById(id);
  const errorBox = $("mcp-error");

  function showError(message) {
    errorBox.textContent = message || "";
    errorBox.hidden = !message;
  }

  function cell(row, label, content) {
    const td = document.createElement("td");
    td.dataset.label = label;
    if (content instanceof Node) td.append(content); else td.textContent = content;
    row.append(td);
    return td;
  }

  function button(text, onClick, extra) {
    const b = document.createElement("button");
    b.type = "button";
    b.className = "small-button" + (extra ? " " + extra : "");
    b.textContent = text;
    b.addEventListener("click", onClick);
    return b;
  }

  function render(servers) {
    const rows = $("mcp-rows");
    rows.replaceChildren();
    $("mcp-empty").hidden = servers.length > 0;
    for (const s of servers) {
      const tr = document.createElement("tr");
      tr.dataset.server = s.name;
      const name = document.createElement("strong");
      name.textContent = s.name;
      cell(tr, "Server", name);
      cell(tr, "Transport", s.type);
      const badge = document.createElement("span");
      badge.className = "status " + s.status;
      badge.textContent = s.status.replace("_", " ");
      const status = document.createElement("span");
      status.append(badge);
      if (s.session_scope === "thread") {
        // One process per user and thread: say how many are open in this process.
        const scope = document.createElement("small");
        scope.className = "muted session-scope";
        const n = s.thread_sessions || 0;
        scope.textContent = `per thread · ${n} open`;
        scope.title = "Each conversation gets its own server process, started in its workspace";
        status.append(scope);
      }
      cell(tr, "Status", status);
      const list = document.createElement("ul");
      list.className = "tool-list";
      for (const t of s.tools) {
        const li = document.createElement("li");
        li.textContent = t.name;
        li.title = t.description;
        list.append(li);
      }
      cell(tr, "Tools", s.tools.length ? list : "—");
      const err = document.createElement("span");
      err.className = s.last_error ? "last-error" : "muted";
      err.textContent = s.last_error ? `${s.last_error}${s.error_at ? " (" + new Date(s.error_at).toLocaleString() + ")" : ""}` : "—";
      cell(tr, "Last error", err);
      const actions = document.createElement("div");
      actions.className = "row-actions";
      if (s.enabled) actions.append(button("Test connection", () => test(s.name)));
      actions.append(button(s.enabled ? "Disable" : "Enable", () => toggle(s.name, !s.enabled), s.enabled ? "danger" : ""));
      cell(tr, "Actions", actions);
      rows.append(tr);
    }
  }

  async function load() {
    try {
      const [status, config] = await Promise.all([api("GET", "/api/mcp/status"), api("GET", "/api/mcp/config")]);
      render(status.servers);
      $("mcp-json").value = JSON.stringify(config.mcp_servers, null, 2);
      showError("");
    } catch (e) { showError(e.message); }
  }

  async function test(name) {
    const row = document.querySelector(`tr[data-server="${CSS.escape(name)}"] .status`);
    if (row) { row.textContent = "testing…"; row.className = "status connecting"; }
    try { await api("POST", `/api/mcp/servers/${encodeURIComponent(name)}/test`); } catch (e) { showError(e.message); return; }
    await load();
  }

  async function toggle(name, enabled) {
    try { await api("PATCH", "/api/mcp/config", { server_name: name, enabled }); } catch (e) { showError(e.message); return; }
    await load();
  }

  $("mcp-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    let servers;
    try { servers = JSON.parse($("mcp-json").value || "{}"); } catch (e) { showError("invalid JSON: " + e.message); return; }
    try { await api("PUT", "/api/mcp/config", { mcp_servers: servers }); } catch (e) { showError(e.message); return; }
    await load();
  });

  load();
})();
