// The scheduled-tasks page: list, create, edit, pause/resume, run now, delete, run history.
// Everything goes through /api/scheduled-tasks; errors show the API's {"detail": ...}.
(function () {
  "use strict";

  const { api, el, button } = window.DeerFlowPage;

  const API = "/api/scheduled-tasks";
  const $ = (id) => document.getElementById(id);
  const pageData = JSON.parse($("schedule-page-data").textContent);
  const form = $("task-form");
  const errorBox = $("schedule-error");
  let tasks = [];
  let historyTaskId = null;

  function showError(message) {
    errorBox.textContent = message || "";
    errorBox.hidden = !message;
  }

  function when(iso) {
    if (!iso) return "—";
    const d = new Date(iso);
    return d.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
  }

  // -- the list ---------------------------------------------------------------------------

  async function load() {
    try {
      tasks = await api("GET", API);
      render();
      if (historyTaskId) await showHistory(historyTaskId);
    } catch (err) {
      showError(err.message);
    }
  }

  function render() {
    const rows = $("task-rows");
    rows.replaceChildren();
    $("task-empty").hidden = tasks.length > 0;
    $("task-table").hidden = tasks.length === 0;
    for (const task of tasks) {
      const paused = task.status === "paused";
      const done = task.status === "completed" || task.status === "failed";
      const schedule = task.schedule_type === "once" ? `once · ${task.timezone}` : `${task.cron} · ${task.timezone}`;
      rows.append(el("tr", {},
        el("td", {}, el("strong", {}, task.title), el("br"), el("span", { class: "muted" }, task.prompt.length > 90 ? task.prompt.slice(0, 90) + "…" : task.prompt)),
        el("td", {}, task.schedule_description || task.cron, el("br"), el("code", {}, schedule)),
        el("td", { "data-label": "Status" }, el("span", { class: "status " + task.status }, task.status), task.last_error ? el("div", { class: "muted", title: task.last_error }, "last error") : ""),
        el("td", { "data-label": "Next run" }, when(task.next_run_at)),
        el("td", { "data-label": "Last run" }, when(task.last_run_at)),
        el("td", {}, el("div", { class: "row-actions" },
          button("Run now", () => act(task, "trigger")),
          done ? "" : button(paused ? "Resume" : "Pause", () => act(task, paused ? "resume" : "pause")),
          button("Edit", () => edit(task)),
          button("Runs", () => { historyTaskId = task.id; load(); }),
          button("Delete", () => remove(task), "danger"))),
      ));
    }
  }

  async function act(task, action) {
    showError("");
    try {
      await api("POST", `${API}/${encodeURIComponent(task.id)}/${action}`);
      if (action === "trigger") historyTaskId = task.id;
      await load();
    } catch (err) {
      showError(`${task.title}: ${err.message}`);
    }
  }

  async function remove(task) {
    if (!window.confirm(`Delete the scheduled task “${task.title}” and its run history?`)) return;
    try {
      await api("DELETE", `${API}/${encodeURIComponent(task.id)}`);
      if (historyTaskId === task.id) { historyTaskId = null; $("history").hidden = true; }
      await load();
    } catch (err) {
      showError(err.message);
    }
  }

  async function showHistory(taskId) {
    historyTaskId = taskId;
    const task = tasks.find((t) => t.id === taskId);
    const runs = await api("GET", `${API}/${encodeURIComponent(taskId)}/runs?limit=50`);
    $("history").hidden = false;
    $("history-title").textContent = `Runs of “${task ? task.title : taskId}”`;
    const rows = $("history-rows");
    rows.replaceChildren();
    if (!runs.length) rows.append(el("tr", {}, el("td", { colspan: "5", class: "muted" }, "No runs yet.")));
    for (const run of runs) {
      rows.append(el("tr", {},
        el("td", {}, when(run.created_at)),
        el("td", { "data-label": "Trigger" }, run.trigger),
        el("td", { "data-label": "Status" }, el("span", { class: "status " + run.status }, run.status)),
        el("td", { "data-label": "Thread" }, run.thread_id && run.run_id ? el("a", { href: `/c/${encodeURIComponent(run.thread_id)}/` }, "open") : "—"),
        el("td", {}, run.error || ""),
      ));
    }
  }

  // -- the form -----------------------------------------------------------------------------

  function resetForm() {
    form.reset();
    form.elements.id.value = "";
    form.elements.timezone.value = Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
    $("form-title").textContent = "New scheduled task";
    $("save-button").textContent = "Create task";
    $("cancel-edit").hidden = true;
    toggleThread();
    toggleType();
    preview();
  }

  // A datetime-local value ("2026-12-24T09:00") for an ISO instant, on the task's wall clock.
  function localInput(iso, zone) {
    const parts = new Intl.DateTimeFormat("en-CA", { timeZone: zone, year: "numeric", month: "2-digit", day: "2-digit",
      hour: "2-digit", minute: "2-digit", hourCycle: "h23" }).formatToParts(new Date(iso));
    const get = (type) => parts.find((p) => p.type === type).value;
    return `${get("year")}-${get("month")}-${get("day")}T${get("hour")}:${get("minute")}`;
  }

  function edit(task) {
    form.elements.id.value = task.id;
    form.elements.title.value = task.title;
    form.elements.prompt.value = task.prompt;
    form.elements.schedule_type.value = task.schedule_type;
    form.elements.cron.value = task.cron || "0 8 * * 1-5";
    form.elements.run_at.value = task.run_at ? localInput(task.run_at, task.timezone) : "";
    form.elements.timezone.value = task.timezone;
    form.elements.context_mode.value = task.context_mode;
    form.elements.thread_id.value = task.thread_id || "";
    form.elements.model_name.value = (task.options && task.options.model_name) || "";
    form.elements.approval_policy.value = (task.options && task.options.approval_policy) || "deny";
    form.elements.enabled.checked = task.enabled;
    form.elements.deliver_to.value = task.deliver_to ? String(task.deliver_to) : "";
    $("form-title").textContent = `Edit “${task.title}”`;
    $("save-button").textContent = "Save changes";
    $("cancel-edit").hidden = false;
    toggleThread();
    toggleType();
    preview();
    form.scrollIntoView({ behavior: "smooth" });
    form.elements.title.focus();
  }

  function toggleThread() {
    $("thread-field").hidden = form.elements.context_mode.value !== "reuse_thread";
  }

  function toggleType() {
    const once = form.elements.schedule_type.value === "once";
    $("cron-field").hidden = once;
    $("run-at-field").hidden = !once;
    form.elements.cron.required = !once;
    form.elements.run_at.required = once;
  }

  // The schedule as the API takes it: the cron, or the wall-clock time read in the task's zone.
  function scheduleBody() {
    const f = form.elements;
    if (f.schedule_type.value === "once") return { schedule_type: "once", schedule_spec: { run_at: f.run_at.value }, timezone: f.timezone.value };
    return { schedule_type: "cron", schedule_spec: { cron: f.cron.value }, timezone: f.timezone.value };
  }

  async function save(event) {
    event.preventDefault();
    showError("");
    const f = form.elements;
    const body = {
      title: f.title.value, prompt: f.prompt.value, ...scheduleBody(),
      context_mode: f.context_mode.value, enabled: f.enabled.checked,
      // approval_policy: what a scheduled run does with a tool call the approval rules cover
      options: Object.assign(f.model_name.value ? { model_name: f.model_name.value } : {},
        f.approval_policy.value === "auto_approve" ? { approval_policy: "auto_approve" } : {}),
    };
    body.thread_id = body.context_mode === "reuse_thread" ? f.thread_id.value : "";
    body.deliver_to = f.deliver_to.value ? Number(f.deliver_to.value) : null;
    try {
      if (f.id.value) await api("PATCH", `${API}/${encodeURIComponent(f.id.value)}`, body);
      else await api("POST", API, body);
      resetForm();
      await load();
    } catch (err) {
      showError(err.message);
    }
  }

  let previewTimer = null;
  let previewSeq = 0;
  function preview() {
    clearTimeout(previewTimer);
    previewTimer = setTimeout(async () => {
      const box = $("cron-preview");
      const seq = ++previewSeq;
      try {
        const schedule = scheduleBody();
        const result = await api("POST", `${API}/preview`, { ...schedule.schedule_spec, schedule_type: schedule.schedule_type, timezone: schedule.timezone });
        if (seq !== previewSeq) return; // an answer to an older form: a newer preview is on its way
        box.className = "notice";
        box.replaceChildren(el("strong", {}, result.description), ` (${result.timezone}). ${result.next_runs.length > 1 ? "Next runs" : "Runs"}:`,
          el("ol", {}, ...result.next_runs.map((iso) => el("li", {}, `${iso.replace("T", " ").slice(0, 16)} ${result.timezone} — ${when(iso)} your time`))));
      } catch (err) {
        if (seq !== previewSeq) return;
        box.className = "alert";
        box.textContent = err.message;
      }
    }, 250);
  }

  function init() {
    const zones = typeof Intl.supportedValuesOf === "function" ? Intl.supportedValuesOf("timeZone") : ["UTC"];
    $("tz-list").replaceChildren(...["UTC", ...zones].map((z) => el("option", { value: z })));
    for (const model of pageData.models || []) form.elements.model_name.append(el("option", { value: model.name }, model.label));
    // Channel connections (Settings → Connections) a task's result can be posted to.
    api("GET", "/api/channels/connections").then((data) => {
      for (const c of data.connections || []) {
        const label = `${c.provider.charAt(0).toUpperCase()}${c.provider.slice(1)} · ${c.display_name || c.external_id}`;
        form.elements.deliver_to.append(el("option", { value: String(c.id) }, label));
      }
    }).catch(() => {});
    form.addEventListener("submit", save);
    form.elements.cron.addEventListener("input", preview);
    form.elements.run_at.addEventListener("input", preview);
    form.elements.schedule_type.addEventListener("change", () => { toggleType(); preview(); });
    form.elements.timezone.addEventListener("input", preview);
    form.elements.context_mode.addEventListener("change", toggleThread);
    $("cancel-edit").addEventListener("click", resetForm);
    resetForm();
    load();
    // Runs finish in the background: refresh while the page is open.
    setInterval(() => { if (!document.hidden) load(); }, 10000);
  }

  init();
})();
