/* Governance in the chat: the approval card and the budget notice.
 *
 * Approval card: the run paused on an `approval` interrupt (harness/governance/gate.py). The
 * card lists each tool call waiting for a yes (tool, rule, arguments as text) and answers
 * with one resume value: approve once, approve always in this chat (the rule stops asking
 * for the rest of the thread), or deny with an optional reason the agent reads.
 *
 * Budget notice: GET /api/budget after load and after every run; from the operator's warning
 * level (80 % by default) a notice above the composer says how much of which cap is used and
 * when it resets. Arguments and reasons are always set as textContent. */
(function () {
  "use strict";

  let ctx = null; // { resume(answer), setNote(text, kind), api(method, path) }

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function argsText(args) {
    if (args && typeof args.command === "string") return args.command;
    try { return JSON.stringify(args, null, 2); } catch (e) { return String(args); }
  }

  function clear() {
    const old = document.getElementById("approval");
    if (old) old.remove();
  }

  function show(value, where) {
    clear();
    const requests = Array.isArray(value.requests) ? value.requests : [];
    const card = el("section", "approval card");
    card.id = "approval";
    card.setAttribute("aria-label", "Approval needed");
    card.append(el("div", "approval-kicker", "Approval needed"));
    card.append(el("p", "approval-lead", requests.length > 1
      ? `The agent wants to run ${requests.length} actions that need your approval.`
      : "The agent wants to run an action that needs your approval."));
    for (const req of requests) {
      const item = el("div", "approval-item");
      const head = el("div", "approval-head");
      head.append(el("strong", "approval-tool", req.tool));
      const rule = req.rule || {};
      head.append(el("span", "approval-rule small muted", `rule “${rule.name}”${rule.source === "user" ? " (yours)" : ""}`));
      item.append(head, el("pre", "approval-args", argsText(req.args)));
      card.append(item);
    }
    const reason = el("input", "approval-reason");
    reason.type = "text";
    reason.maxLength = 2000;
    reason.placeholder = "Reason (optional, for a denial)";
    reason.setAttribute("aria-label", "Reason for denying");
    const actions = el("div", "actions approval-actions");
    const buttons = [
      ["Approve once", "button", "approve"],
      ["Approve always in this chat", "button secondary", "approve_always"],
      ["Deny", "button danger", "deny"],
    ].map(([label, cls, decision]) => {
      const b = el("button", cls, label);
      b.type = "button";
      b.addEventListener("click", () => answer(card, decision, reason.value.trim()));
      return b;
    });
    actions.append(...buttons);
    card.append(reason, actions);
    where.append(card);
    ctx.setNote("The agent is waiting for your approval.");
  }

  // After a decision the card collapses to its outcome: what was decided, on which calls, and
  // the reason of a denial; the question, the arguments and the buttons go.
  function answer(card, decision, reason) {
    const outcome = { approve: "Approved", approve_always: "Approved for this chat", deny: "Denied" }[decision];
    const said = { approve: "You approved this once.", approve_always: "You approved this for the rest of the chat.", deny: "You denied it." }[decision];
    const tools = [...card.querySelectorAll(".approval-tool")].map((n) => n.textContent);
    card.classList.add("answered", decision === "deny" ? "denied" : "approved");
    card.id = "";
    card.setAttribute("aria-label", `Approval: ${outcome.toLowerCase()}`);
    const line = el("p", "approval-answer", said);
    if (tools.length) line.append(" ", el("span", "muted", `(${tools.join(", ")})`));
    if (decision === "deny" && reason) line.append(" ", el("em", "", `Reason: ${reason}`));
    card.replaceChildren(el("div", "approval-kicker", outcome), line);
    ctx.resume(decision === "deny" ? { decision, reason } : { decision });
  }

  function fmt(cap) {
    return cap.kind === "tokens" ? `${Number(cap.used).toLocaleString()} of ${Number(cap.limit).toLocaleString()} tokens`
      : `${Number(cap.used).toFixed(2)} of ${Number(cap.limit).toFixed(2)}`;
  }

  async function refreshBudget() {
    const note = document.getElementById("budget-note");
    if (!note || !ctx) return;
    let status;
    try { status = await ctx.api("GET", "/budget"); } catch (e) { return; }
    const caps = (status && status.caps) || [];
    const worst = caps.slice().sort((a, b) => b.fraction - a.fraction)[0];
    if (!status.enabled || !worst || worst.fraction < status.warn_at) { note.hidden = true; return; }
    const label = `${worst.period === "day" ? "daily" : "monthly"} ${worst.kind === "tokens" ? "token" : "cost"} budget`;
    const when = new Date(worst.resets_at).toLocaleString();
    note.textContent = worst.fraction >= 1
      ? `You have used your ${label} (${fmt(worst)}). New runs start again after ${when}.`
      : `You have used ${Math.floor(worst.fraction * 100)} % of your ${label} (${fmt(worst)}); it resets ${when}.`;
    note.classList.toggle("exhausted", worst.fraction >= 1);
    note.hidden = false;
  }

  window.DFGovernance = {
    init(c) { ctx = c; refreshBudget(); },
    show, clear, refreshBudget,
  };
})();
