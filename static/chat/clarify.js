/* The card for the agent's question (ask_clarification): a text box, choices with "Other",
 * or a form of typed fields, by the question's human_input.mode. It places the card in the
 * conversation and hands the answer to app.js, which resumes the run with it. */
(function () {
  "use strict";

  const { h } = window.DFKit;
  const md = () => window.DFMarkdown;

  function card(value, onAnswer, onEmpty) {
    const req = value.human_input || { question: value.text, mode: "free_text" };
    const card = h("section", { class: "clarify card", id: "clarify", "aria-label": "The agent asks" });
    card.append(h("div", { class: "clarify-kicker", text: "The agent needs your input" }));
    if (req.context) card.append(h("p", { class: "muted", text: req.context }));
    const q = h("div", { class: "md clarify-question" });
    md().render(q, req.question || value.text || "");
    card.append(q);
    const form = h("form", { class: "clarify-form" });
    let collect;
    if (req.mode === "choice_with_other" && Array.isArray(req.options)) {
      const name = "clarify-choice";
      const list = h("div", { class: "choices", role: "radiogroup", "aria-label": "Options" });
      req.options.forEach((opt, i) => list.append(h("label", { class: "choice" },
        h("input", { type: "radio", name, value: opt, required: true, ...(i === 0 ? {} : {}) }), " ", opt)));
      const other = h("input", { type: "text", class: "other-text", placeholder: "Your own answer", "aria-label": "Other answer" });
      list.append(h("label", { class: "choice" }, h("input", { type: "radio", name, value: "__other__" }), " Other: ", other));
      other.addEventListener("focus", () => { list.querySelector('input[value="__other__"]').checked = true; });
      form.append(list);
      collect = () => {
        const picked = form.querySelector(`input[name="${name}"]:checked`);
        if (!picked) return null;
        return picked.value === "__other__" ? other.value.trim() || null : picked.value;
      };
    } else if (req.mode === "form" && Array.isArray(req.fields)) {
      const inputs = [];
      for (const f of req.fields) {
        const id = "clarify-" + f.name;
        let input;
        if (f.type === "textarea") input = h("textarea", { id, rows: 3 });
        else if (f.type === "select" || f.type === "multi_select") {
          input = h("select", { id, multiple: f.type === "multi_select" }, f.type === "select" ? h("option", { value: "", text: "—" }) : null,
            ...(f.options || []).map((o) => h("option", { value: o, text: o })));
        } else if (f.type === "checkbox") input = h("input", { id, type: "checkbox" });
        else input = h("input", { id, type: f.type === "number" ? "number" : f.type === "date" ? "date" : "text" });
        if (f.required && f.type !== "checkbox") input.required = true;
        inputs.push([f, input]);
        form.append(h("p", { class: "field" }, h("label", { for: id, text: f.label + (f.required ? " *" : "") }), input,
          f.description ? h("span", { class: "small muted", text: f.description }) : null));
      }
      collect = () => {
        const out = {};
        for (const [f, input] of inputs) {
          if (f.type === "checkbox") out[f.name] = input.checked;
          else if (f.type === "multi_select") out[f.name] = [...input.selectedOptions].map((o) => o.value);
          else if (f.type === "number") out[f.name] = input.value === "" ? null : Number(input.value);
          else out[f.name] = input.value;
        }
        return out;
      };
    } else {
      const area = h("textarea", { rows: 2, class: "clarify-text", "aria-label": "Your answer", placeholder: "Your answer" });
      form.append(area);
      collect = () => area.value.trim() || null;
    }
    const submit = h("button", { type: "submit", class: "button", text: "Send answer" });
    form.append(h("div", { class: "actions" }, submit));
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      const answer = collect();
      if (answer === null || answer === "") { onEmpty(); return; }
      onAnswer(answer);
    });
    card.append(form);
    return card;
  }

  function markAnswered(card, answer) {
    if (!card) return;
    card.querySelectorAll("input, textarea, select, button").forEach((n) => { n.disabled = true; });
    card.classList.add("answered");
    card.id = "";
    card.append(h("p", { class: "clarify-answer" }, "You answered: ", h("strong", { text: typeof answer === "string" ? answer : JSON.stringify(answer) })));
  }

  // -- the waiting question in the conversation (app.js hands over the chat's state)

  let deps = null; // { state, list, setNote, updateWelcome, resume(answer) }
  const gov = () => window.DFGovernance; // an approval request is the governance card instead

  function init(options) { deps = options; }

  function markWaiting(value) {
    const callCard = value.tool_call_id && deps.state.toolCards.get(value.tool_call_id);
    if (callCard) window.DFToolCards.setStatus(callCard, "waiting");
    deps.updateWelcome();
    window.DFScroll.follow(true);
  }

  function show(value) {
    window.DFWorking.done();
    if (value && value.type === "approval" && gov()) {
      clear();
      deps.state.interrupt = value;
      gov().show(value, deps.list);
      markWaiting(value);
      return;
    }
    if (!value || value.type !== "clarification") return;
    clear();
    deps.state.interrupt = value;
    deps.list.append(card(value, answer, () => deps.setNote("Choose or type an answer first.", "error")));
    deps.setNote("The agent is waiting for your answer — you can also type it below.");
    markWaiting(value);
  }

  function clear() {
    const old = document.getElementById("clarify");
    if (old) old.remove();
    if (gov()) gov().clear();
    deps.state.interrupt = null;
  }

  function answer(text) {
    markAnswered(document.getElementById("clarify"), text);
    deps.state.interrupt = null;
    deps.setNote("");
    deps.resume(text);
  }

  window.DFClarify = { card, markAnswered, init, show, clear, answer };
})();
