/* The chat header's Share button (templates/shares/_share_button.html): POST
 * /api/threads/{id}/shares makes a read-only link to a snapshot of the chat as it is now. */
(function () {
  "use strict";

  const open = document.getElementById("share-open");
  const dialog = document.getElementById("share-dialog");
  if (!open || !dialog) return;
  const $ = (id) => document.getElementById(id);

  function threadId() {
    const m = location.pathname.match(/^\/c\/([^/]+)\/$/); // kept current by app.js
    return m ? decodeURIComponent(m[1]) : null;
  }

  function csrf() {
    const meta = document.querySelector('meta[name="csrf-token"]');
    return meta ? meta.content : "";
  }

  function refresh() { open.hidden = !threadId(); }

  function reset() {
    $("share-result").hidden = true;
    $("share-error").hidden = true;
    $("share-create").hidden = false;
    $("share-create").disabled = false;
    $("share-include-files").disabled = false;
  }

  open.addEventListener("click", () => { reset(); dialog.showModal(); $("share-include-files").focus(); });
  $("share-close").addEventListener("click", () => dialog.close());

  $("share-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const id = threadId();
    if (!id) return;
    $("share-create").disabled = true;
    $("share-error").hidden = true;
    const includeFiles = $("share-include-files").checked;
    let share;
    try {
      const response = await fetch(`/api/threads/${encodeURIComponent(id)}/shares`, {
        method: "POST", credentials: "same-origin",
        headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": csrf() },
        body: JSON.stringify({ include_files: includeFiles }),
      });
      share = await response.json().catch(() => ({}));
      if (!response.ok) throw new Error(share.detail || `${response.status} ${response.statusText}`);
    } catch (e) {
      $("share-error").textContent = "Could not create the link: " + e.message;
      $("share-error").hidden = false;
      $("share-create").disabled = false;
      return;
    }
    $("share-url").value = share.url;
    const files = share.include_files ? `${share.file_count} file${share.file_count === 1 ? "" : "s"} included` : "no files";
    $("share-result-note").textContent = `A snapshot of ${share.message_count} message${share.message_count === 1 ? "" : "s"}, ${files}.`;
    $("share-result").hidden = false;
    $("share-create").hidden = true;
    $("share-include-files").disabled = true;
    $("share-url").focus();
    $("share-url").select();
  });

  $("share-copy").addEventListener("click", async () => {
    const text = $("share-url").value;
    try { await navigator.clipboard.writeText(text); }
    catch (e) { $("share-url").select(); document.execCommand("copy"); }
    $("share-copy").textContent = "Copied";
    setTimeout(() => { $("share-copy").textContent = "Copy"; }, 1500);
  });

  // The URL changes when a new chat gets its thread (history.replaceState): follow it.
  for (const name of ["replaceState", "pushState"]) {
    const original = history[name].bind(history);
    history[name] = (...args) => { const out = original(...args); refresh(); return out; };
  }
  refresh();
})();
