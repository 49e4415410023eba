/* Thumbs up/down under an answer, with an optional comment.
 *
 * One rating per answer (message id) per user: PUT /api/threads/{tid}/runs/{rid}/feedback
 * {rating, comment?, message_id} saves or replaces it, DELETE ?message_id= removes it
 * (pressing the same thumb again). The history page brings each answer's saved rating back
 * (`feedback` on the message row); a live answer gets its bar when its run has ended, once
 * the answer is in the run's journal. */
(function () {
  "use strict";

  let ctx = null; // { api, threadId }

  function node(tag, attrs, text) {
    const n = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") n.className = v;
      else if (k.startsWith("on")) n.addEventListener(k.slice(2), v);
      else n.setAttribute(k, v);
    }
    if (text !== undefined) n.textContent = text;
    return n;
  }

  // Drawn, not an emoji: a machine without an emoji font would show empty boxes.
  const THUMB = "M2 21h3V9H2v12zm19-10c0-1.1-.9-2-2-2h-6.3l1-4.6v-.3c0-.4-.2-.8-.4-1.1L12.2 2 5.6 8.6C5.2 8.9 5 9.4 5 10v9c0 1.1.9 2 2 2h9c.8 0 1.5-.5 1.8-1.2l3-7.1c.1-.2.2-.5.2-.7v-2z";

  function thumb(down) {
    const ns = "http://www.w3.org/2000/svg";
    const svg = document.createElementNS(ns, "svg");
    svg.setAttribute("viewBox", "0 0 24 24");
    svg.setAttribute("width", "16");
    svg.setAttribute("height", "16");
    svg.setAttribute("aria-hidden", "true");
    if (down) svg.setAttribute("transform", "rotate(180)");
    const path = document.createElementNS(ns, "path");
    path.setAttribute("d", THUMB);
    path.setAttribute("fill", "currentColor");
    svg.append(path);
    return svg;
  }

  function paint(bar) {
    const rating = bar.feedback ? bar.feedback.rating : 0;
    bar.up.setAttribute("aria-pressed", String(rating === 1));
    bar.down.setAttribute("aria-pressed", String(rating === -1));
    bar.commentToggle.hidden = !rating;
    bar.saved.textContent = bar.feedback && bar.feedback.comment ? "“" + bar.feedback.comment + "”" : "";
    bar.saved.hidden = !bar.saved.textContent;
  }

  function url(bar) {
    return `/threads/${encodeURIComponent(ctx.threadId())}/runs/${encodeURIComponent(bar.runId)}/feedback`;
  }

  async function save(bar, rating, comment) {
    bar.error.hidden = true;
    try {
      if (!rating) {
        await ctx.api("DELETE", url(bar) + "?message_id=" + encodeURIComponent(bar.messageId));
        bar.feedback = null;
      } else {
        const body = { rating, message_id: bar.messageId };
        if (comment !== undefined) body.comment = comment;
        else if (bar.feedback && bar.feedback.rating === rating) body.comment = bar.feedback.comment;
        bar.feedback = await ctx.api("PUT", url(bar), body);
      }
    } catch (err) {
      bar.error.textContent = "Feedback not saved: " + err.message;
      bar.error.hidden = false;
    }
    paint(bar);
  }

  function press(bar, rating) {
    const current = bar.feedback ? bar.feedback.rating : 0;
    save(bar, current === rating ? 0 : rating);
  }

  /* Give an answer its bar. entry: the chat's message entry ({el, text}); feedback: the
   * saved rating from the history page, or null. */
  function attach(entry, runId, messageId, feedback) {
    if (!ctx || !runId || !messageId || !entry || !entry.el) return;
    if (entry.feedbackBar) {
      if (feedback !== undefined) { entry.feedbackBar.feedback = feedback; paint(entry.feedbackBar); }
      return;
    }
    if (!(entry.text || "").trim()) return; // a tool step, not an answer
    const bar = node("div", { class: "feedback-bar", role: "group", "aria-label": "Rate this answer" });
    Object.assign(bar, { runId, messageId, feedback: feedback || null });
    bar.up = node("button", { type: "button", class: "thumb up", "aria-label": "Good answer", title: "Good answer", onclick: () => press(bar, 1) });
    bar.down = node("button", { type: "button", class: "thumb down", "aria-label": "Bad answer", title: "Bad answer", onclick: () => press(bar, -1) });
    bar.up.append(thumb(false));
    bar.down.append(thumb(true));
    bar.commentToggle = node("button", { type: "button", class: "link-button small", onclick: () => {
      bar.form.hidden = !bar.form.hidden;
      if (!bar.form.hidden) { bar.text.value = (bar.feedback && bar.feedback.comment) || ""; bar.text.focus(); }
    } }, "Add a comment");
    bar.saved = node("span", { class: "feedback-comment small muted" });
    bar.error = node("span", { class: "error-text small", role: "alert" });
    bar.error.hidden = true;
    bar.form = node("form", { class: "feedback-form" });
    const id = "fb-" + messageId.replace(/[^A-Za-z0-9_-]/g, "");
    bar.text = node("textarea", { id, rows: "2", maxlength: "4000", placeholder: "What was good or wrong?" });
    bar.form.append(node("label", { for: id, class: "visually-hidden" }, "Comment on this answer"), bar.text,
      node("button", { type: "submit", class: "button secondary small" }, "Send feedback"));
    bar.form.hidden = true;
    bar.form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      await save(bar, (bar.feedback && bar.feedback.rating) || 1, bar.text.value);
      if (bar.error.hidden) bar.form.hidden = true;
    });
    bar.append(bar.up, bar.down, bar.commentToggle, bar.saved, bar.error, bar.form);
    entry.feedbackBar = bar;
    entry.el.append(bar);
    paint(bar);
  }

  function init(options) { ctx = options; }

  window.DFFeedback = { init, attach };
})();
