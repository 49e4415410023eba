/* The chat header's Knowledge button: which knowledge collections this chat searches.
 * Your own collections are always searched; collections others share with you are searched
 * in the chats you attach them to (PUT /api/threads/{id}/knowledge). A collection bound to
 * an agent is searched only in that agent's chats, so it is not offered here. */
(function () {
  "use strict";

  const { h, api } = window.DFKit;
  const $ = (id) => document.getElementById(id);
  const icon = (name) => { try { return window.dfUI.icon(name); } catch (e) { return document.createTextNode(""); } };

  function paint(count) {
    const badge = $("kb-attach-count");
    if (!badge) return;
    badge.textContent = String(count);
    badge.hidden = !count;
  }

  async function open(opener) {
    const chat = window.DeerFlowChat;
    let threadId;
    try { threadId = await chat.ensureThread(); } catch (e) { return; }
    threadId = threadId || chat.state().threadId;
    const [all, attached] = await Promise.all([api("GET", "/knowledge/collections"),
      api("GET", `/threads/${encodeURIComponent(threadId)}/knowledge`)]);
    const on = new Set(attached.collections.map((c) => c.id));
    const own = all.collections.filter((c) => c.is_owner && !c.agent);
    const shared = all.collections.filter((c) => !c.is_owner);
    const list = h("ul", { class: "tag-options", "aria-label": "Shared collections" });
    for (const c of shared) {
      const id = "kb-opt-" + c.id;
      list.append(h("li", null, h("input", { type: "checkbox", id, value: c.id, checked: on.has(c.id) }),
        h("label", { for: id }, icon("folder"), h("span", { text: `${c.name} (shared by ${c.owner})` }))));
    }
    const ownText = own.length ? `Always searched here: your ${own.map((c) => c.name).join(", ")}.` : "You have no collections of your own yet.";
    const error = h("p", { class: "error-text small", role: "alert" });
    const save = h("button", { type: "submit", class: "primary", text: "Save" });
    const cancel = h("button", { type: "button", text: "Cancel" });
    const form = h("form", { method: "dialog", class: "tag-form" },
      h("h2", { id: "kb-dialog-title" }, icon("folder"), h("span", { text: "Knowledge for this chat" })),
      h("p", { class: "muted small", text: ownText }),
      shared.length ? list : h("p", { class: "muted small", text: "No one has shared a collection with you." }),
      h("p", { class: "small" }, h("a", { href: "/knowledge/", text: "Manage collections" })),
      error,
      h("div", { class: "df-dialog-actions" }, cancel, save));
    const dialog = h("dialog", { class: "df-dialog tag-dialog kb-dialog", "aria-labelledby": "kb-dialog-title" }, form);
    const done = () => {
      if (dialog.open) dialog.close();
      dialog.remove();
      if (opener && opener.isConnected) opener.focus();
    };
    cancel.addEventListener("click", done);
    dialog.addEventListener("cancel", (ev) => { ev.preventDefault(); done(); });
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      save.disabled = true;
      try {
        const ids = [...list.querySelectorAll("input:checked")].map((b) => b.value);
        const result = await api("PUT", `/threads/${encodeURIComponent(threadId)}/knowledge`, { collection_ids: ids });
        paint(result.collections.length);
      } catch (e) {
        error.textContent = "Could not save: " + e.message;
        save.disabled = false;
        return;
      }
      done();
    });
    document.body.append(dialog);
    dialog.showModal();
    (list.querySelector("input") || save).focus();
  }

  function init() {
    const btn = $("kb-attach-btn");
    if (btn) btn.addEventListener("click", () => open(btn).catch(() => {}));
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init); else init();
})();
