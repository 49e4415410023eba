/* The agent picker in the chat header, and the line saying which agent a chat talks to.
 *
 * A new chat may pick any agent the user can see (own and shared ones, from the page's boot
 * data); a chat that has started keeps its agent (the thread's assistant_id) and the picker
 * only shows it. "/?agent=<id>" preselects an agent; "/?new_agent=1" opens the bootstrap chat
 * in which DeerFlow interviews the user and saves a new agent with setup_agent. */
(function () {
  "use strict";

  const boot = JSON.parse(document.getElementById("boot").textContent);
  const agents = boot.agents || [];
  const select = document.getElementById("agent");
  const badge = document.getElementById("agent-badge");
  const params = new URLSearchParams(location.search);
  const NEW = "__new__";
  let bootstrap = params.get("new_agent") === "1";

  function find(id) { return agents.find((a) => a.assistant_id === id || a.name === id); }
  function label(a) { return (a.avatar ? a.avatar + " " : "") + a.display_name + (a.editable ? "" : ` (${a.owner})`); }

  function option(value, text) {
    const o = document.createElement("option");
    o.value = value;
    o.textContent = text;
    return o;
  }

  function render() {
    select.replaceChildren(option("lead_agent", "DeerFlow"), ...agents.map((a) => option(a.assistant_id, label(a))), option(NEW, "+ New agent…"));
  }

  // An agent's own model and thinking setting become the chat's controls.
  function applyDefaults(agent) {
    const model = document.getElementById("model");
    const thinking = document.getElementById("thinking");
    if (agent && agent.model && model && [...model.options].some((o) => o.value === agent.model && !o.disabled)) model.value = agent.model;
    if (agent && thinking) thinking.checked = !!agent.thinking_enabled;
  }

  function showBadge() {
    const agent = find(select.value);
    if (bootstrap) {
      badge.textContent = "Creating a new agent: describe what it should do, and DeerFlow will ask what it needs and save it.";
    } else if (select.value === "lead_agent") {
      badge.textContent = "";
    } else if (agent) {
      badge.textContent = `Talking to ${label(agent)}`;
    } else {
      badge.textContent = "This chat's agent was deleted; the conversation stays readable.";
    }
    badge.hidden = !badge.textContent;
    select.dataset.bootstrap = bootstrap ? "1" : "";
  }

  function choose(id) {
    if (!find(id) && id !== "lead_agent") {
      select.append(option(id, "Deleted agent"));
    }
    select.value = id;
    applyDefaults(find(id));
    showBadge();
  }

  select.addEventListener("change", () => {
    if (select.value === NEW) { location.href = "/?new_agent=1"; return; }
    bootstrap = false;
    choose(select.value);
  });

  render();
  const wanted = params.get("agent");
  choose(bootstrap ? "lead_agent" : (wanted && find(wanted) ? find(wanted).assistant_id : "lead_agent"));

  window.DFAgentPicker = {
    assistantId() { return bootstrap ? "lead_agent" : (select.value === NEW ? "lead_agent" : select.value); },
    // Run context additions: the bootstrap flag binds setup_agent for this chat's runs.
    context(ctx) { if (bootstrap) ctx.is_bootstrap = true; return ctx; },
    threadMetadata() { return bootstrap ? { deerflow_bootstrap: true } : {}; },
    // A loaded thread: show its agent, and keep it (one agent per chat).
    onThread(thread) {
      bootstrap = !!(thread.metadata && thread.metadata.deerflow_bootstrap);
      choose(thread.assistant_id || "lead_agent");
      select.disabled = true;
    },
    lock() { select.disabled = true; },
    unlock() { select.disabled = false; }, // the new chat's first message was refused: nothing was created
    bootstrap() { return bootstrap; },
    // The sidebar's mark for a thread of a custom agent (null for the built-in one).
    tagFor(id) {
      if (!id || id === "lead_agent") return null;
      const agent = find(id);
      return agent ? { mark: agent.avatar || "🤖", title: "with " + agent.display_name } : { mark: "∅", title: "with a deleted agent" };
    },
  };
})();
