// "/" completion in the composer: while the message is "/" plus part of a name, a list of the
// user's enabled skills (from /api/skills) is offered; ↑/↓ move, Enter or Tab picks, Escape
// closes. Runs in the capture phase so the composer's own Enter-to-send waits while it is open.
(function () {
  "use strict";

  const input = document.getElementById("input");
  const composer = document.getElementById("composer");
  if (!input || !composer) return;
  let skills = null;
  let matches = [];
  let active = 0;
  const list = document.createElement("ul");
  list.id = "skill-suggestions";
  list.className = "skill-suggestions";
  list.setAttribute("role", "listbox");
  list.setAttribute("aria-label", "Skills");
  list.hidden = true;
  composer.prepend(list);
  input.setAttribute("aria-controls", list.id);
  input.setAttribute("aria-autocomplete", "list");

  async function loadSkills() {
    if (skills !== null) return skills;
    try {
      const response = await fetch("/api/skills", { credentials: "same-origin", headers: { Accept: "application/json" } });
      const data = response.ok ? await response.json() : { skills: [] };
      skills = (data.skills || []).filter((s) => s.enabled);
    } catch (err) {
      skills = [];
    }
    return skills;
  }

  function close() {
    list.hidden = true;
    matches = [];
    input.removeAttribute("aria-activedescendant");
    input.setAttribute("aria-expanded", "false");
  }

  function render() {
    list.replaceChildren();
    matches.forEach((s, i) => {
      const item = document.createElement("li");
      item.id = `skill-option-${i}`;
      item.setAttribute("role", "option");
      item.setAttribute("aria-selected", String(i === active));
      const name = document.createElement("strong");
      name.textContent = `/${s.name}`;
      const desc = document.createElement("span");
      desc.textContent = s.description;
      item.append(name, " ", desc);
      item.addEventListener("mousedown", (ev) => { ev.preventDefault(); pick(i); });
      list.append(item);
    });
    list.hidden = matches.length === 0;
    input.setAttribute("aria-expanded", String(!list.hidden));
    if (!list.hidden) input.setAttribute("aria-activedescendant", `skill-option-${active}`);
  }

  function pick(i) {
    const s = matches[i];
    if (!s) return;
    input.value = `/${s.name} `;
    input.dispatchEvent(new Event("input", { bubbles: true }));
    close();
    input.focus();
  }

  async function update() {
    const m = /^\/([a-z0-9-]*)$/.exec(input.value);
    if (!m) { close(); return; }
    const all = await loadSkills();
    const prefix = m[1];
    matches = all.filter((s) => s.name.startsWith(prefix)).slice(0, 8);
    active = 0;
    render();
  }

  input.addEventListener("input", update);
  input.addEventListener("blur", () => setTimeout(close, 100));
  input.addEventListener("keydown", (ev) => {
    if (list.hidden) return;
    if (ev.key === "ArrowDown" || ev.key === "ArrowUp") {
      ev.preventDefault();
      active = (active + (ev.key === "ArrowDown" ? 1 : matches.length - 1)) % matches.length;
      render();
    } else if ((ev.key === "Enter" && !ev.shiftKey) || ev.key === "Tab") {
      ev.preventDefault();
      ev.stopImmediatePropagation();
      pick(active);
    } else if (ev.key === "Escape") {
      ev.preventDefault();
      ev.stopImmediatePropagation();
      close();
    }
  }, true);
})();
