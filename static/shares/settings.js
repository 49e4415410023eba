/* Settings → Shared links: copy a link, revoke it (DELETE /api/shares/{id}). The list itself
 * is drawn by the server (apps/shares/pages.py). */
(function () {
  "use strict";

  const { api } = window.DeerFlowPage;
  const list = document.getElementById("share-list");
  const error = document.getElementById("shares-error");
  if (!list) return;

  list.addEventListener("click", async (ev) => {
    const row = ev.target.closest("[data-share]");
    if (!row) return;
    if (ev.target.closest("[data-copy]")) {
      const input = row.querySelector(".share-url");
      try { await navigator.clipboard.writeText(input.value); } catch (e) { input.select(); document.execCommand("copy"); }
      ev.target.textContent = "Copied";
      setTimeout(() => { ev.target.textContent = "Copy link"; }, 1500);
      return;
    }
    if (!ev.target.closest("[data-revoke]")) return;
    const title = row.querySelector(".share-title").textContent;
    const ok = await window.dfUI.confirm({ title: "Revoke this link?", message: `“${title}” will no longer open for anyone who has the link. This cannot be undone; you can share the chat again with a new link.`, confirmLabel: "Revoke", danger: true });
    if (!ok) return;
    try {
      await api("DELETE", `/api/shares/${encodeURIComponent(row.dataset.share)}`);
    } catch (e) {
      error.textContent = "Could not revoke the link: " + e.message;
      error.hidden = false;
      return;
    }
    row.classList.add("revoked");
    row.querySelector("[data-state]").textContent = "Revoked just now";
    row.querySelector(".share-actions").remove();
  });
})();
