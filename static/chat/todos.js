/* The plan panel: the agent's todo list (write_todos in plan mode) with its progress, folded
 * and unfolded from its head. Fed from the run's `values` and `updates`, and from the
 * thread's state when a chat opens. */
(function () {
  "use strict";

  const { h, icon } = window.DFKit;
  const ICONS = { completed: "circle-check", in_progress: "circle-dot", pending: "circle" };
  const $ = (id) => document.getElementById(id);

  function render(todos) {
    const panel = $("todos"), list = $("todo-list");
    if (!Array.isArray(todos) || todos.length === 0) { panel.hidden = true; list.replaceChildren(); return; }
    panel.hidden = false;
    list.replaceChildren(...todos.map((t) => h("li", { class: "todo " + (t.status || "pending"), "data-status": t.status || "pending" },
      h("span", { class: "todo-icon", "aria-hidden": "true" }, icon(ICONS[t.status] || "circle")),
      h("span", { class: "todo-text", text: t.content || "" }),
      h("span", { class: "visually-hidden", text: ` (${(t.status || "pending").replace("_", " ")})` }))));
    const done = todos.filter((t) => t.status === "completed").length;
    $("todos-progress").textContent = `${done}/${todos.length}`;
  }

  function init() {
    const head = $("todos-head");
    head.addEventListener("click", () => {
      const list = $("todo-list");
      const open = list.hidden;
      list.hidden = !open;
      head.setAttribute("aria-expanded", String(open));
    });
  }

  window.DFTodos = { init, render };
})();
