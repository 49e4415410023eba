/* The thread's mode (Fast / Thinking / Plan / Pro) and the model picker.
 *
 * A mode is a bundle of run options (model thinking, plan mode, subagents), stored on the
 * thread as metadata.mode through the thread PATCH, so it follows the thread to a reload
 * and to another browser. A new chat keeps the choice locally until its thread exists,
 * then sends it with the thread's creation. The model choice stays a browser preference. */
(function () {
  "use strict";

  const MODES = {
    fast: { thinking: false, plan: false, subagents: false },
    thinking: { thinking: true, plan: false, subagents: false },
    plan: { thinking: true, plan: true, subagents: false },
    pro: { thinking: true, plan: true, subagents: true },
  };
  const PREFS = "deerflow.prefs";
  let select = null, hint = null, model = null, models = [], deps = null;

  function current() { return MODES[select.value] ? select.value : "fast"; }

  function modelInfo() { return models.find((m) => m.name === (model && model.value)) || null; }

  function showHint() {
    const opt = select.selectedOptions[0];
    let text = (opt && opt.dataset.hint) || "";
    const info = modelInfo();
    if (MODES[current()].thinking && info && !info.supports_thinking) text += " This model does not think out loud, so it answers without a thinking step.";
    hint.textContent = text;
  }

  function setMode(value) {
    select.value = MODES[value] && [...select.options].some((o) => o.value === value) ? value : "fast";
    showHint();
  }

  async function onChange() {
    showHint();
    const threadId = deps.threadId();
    if (!threadId) return; // a new chat: sent with the thread's creation (threadMetadata)
    try {
      await deps.api("PATCH", `/threads/${encodeURIComponent(threadId)}`, { metadata: { mode: current() } });
    } catch (e) {
      deps.setNote("Could not save the mode: " + e.message, "error");
    }
  }

  function init(options) {
    deps = options;
    select = document.getElementById("mode");
    hint = document.getElementById("mode-hint");
    model = document.getElementById("model");
    models = options.models || [];
    const saved = JSON.parse(localStorage.getItem(PREFS) || "{}");
    if (model) {
      if (saved.model && [...model.options].some((o) => o.value === saved.model && !o.disabled)) model.value = saved.model;
      if (model.selectedOptions[0] && model.selectedOptions[0].disabled) {
        const ok = [...model.options].find((o) => !o.disabled);
        if (ok) model.value = ok.value;
      }
      model.addEventListener("change", () => {
        localStorage.setItem(PREFS, JSON.stringify({ ...saved, model: model.value }));
        showHint();
      });
    }
    select.addEventListener("change", onChange);
    setMode("fast");
  }

  window.DFModes = {
    init,
    onThread(thread) { setMode((thread && thread.metadata && thread.metadata.mode) || "fast"); },
    threadMetadata() { return { mode: current() }; },
    /* The run context for the current mode and model; a blocked model is never sent. */
    context() {
      const mode = MODES[current()];
      const info = modelInfo();
      const ctx = { thinking_enabled: mode.thinking && !(info && !info.supports_thinking), is_plan_mode: mode.plan };
      if ([...select.options].some((o) => o.value === "pro")) ctx.subagent_enabled = mode.subagents;
      const picked = model && model.selectedOptions[0];
      if (picked && picked.value && !picked.disabled) ctx.model_name = picked.value;
      return ctx;
    },
  };
})();
