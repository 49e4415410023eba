/* The Approvals page: operator rules (read only), the user's own rules (add, delete) and the
 * audit of decisions, from /api/approvals/*. Text from the server is set as text, never markup. */
(function () {
  "use strict";

  const { api, el, button } = window.DeerFlowPage;
  const $ = (id) => document.getElementById(id);
  const LABEL = { ask: "Ask", deny: "Deny", allow: "Allow" };

  function showError(err) {
    $("gov-error").hidden = !err;
    $("gov-error").textContent = err ? err.message : "";
  }

  function ruleRow(rule, actions) {
    const cells = [el("td", {}, rule.name), el("td", {}, (rule.tools || rule.tool || []).join(", ")),
      el("td", {}, el("code", {}, rule.match || "any arguments")), el("td", {}, LABEL[rule.action] || rule.action)];
    if (actions) cells.push(el("td", {}, actions));
    return el("tr", {}, ...cells);
  }

  async function loadRules() {
    const data = await api("GET", "/api/approvals/rules");
    $("operator-rows").replaceChildren(...data.operator_rules.map((r) => ruleRow(r)));
    $("operator-empty").hidden = data.operator_rules.length > 0;
    $("rule-rows").replaceChildren(...data.rules.map((r) => ruleRow(r, button("Delete", () => removeRule(r), "danger"))));
    $("rule-empty").hidden = data.rules.length > 0;
    $("user-rules-off").hidden = data.user_rules_enabled;
  }

  async function removeRule(rule) {
    try { await api("DELETE", `/api/approvals/rules/${rule.id}`); showError(null); await loadRules(); } catch (e) { showError(e); }
  }

  async function loadDecisions() {
    const all = $("all-users") && $("all-users").checked;
    const data = await api("GET", "/api/approvals/decisions" + (all ? "?all=1" : ""));
    $("decision-rows").replaceChildren(...data.decisions.map((d) => el("tr", {},
      el("td", {}, new Date(d.created_at).toLocaleString()), el("td", {}, d.tool), el("td", {}, `${d.rule} (${d.rule_source})`),
      el("td", { class: "decision-" + d.decision }, d.decision.replace(/_/g, " ")), el("td", {}, d.decided_by), el("td", {}, d.reason || ""),
      el("td", {}, d.thread_id ? el("a", { href: `/c/${encodeURIComponent(d.thread_id)}/` }, "open") : ""))));
    $("decision-empty").hidden = data.decisions.length > 0;
  }

  $("rule-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const f = ev.target.elements;
    try {
      await api("POST", "/api/approvals/rules", { name: f.name.value, tool: f.tool.value, match: f.match.value, action: f.action.value });
      ev.target.reset();
      showError(null);
      await loadRules();
    } catch (e) { showError(e); }
  });
  if ($("all-users")) $("all-users").addEventListener("change", () => loadDecisions().catch(showError));

  Promise.all([loadRules(), loadDecisions()]).catch(showError).finally(() => { document.body.dataset.ready = "1"; });
})();
