// Export this chat (the header's Export menu): Markdown and JSON come from
// GET /api/threads/{id}/export; PDF is the browser's print to PDF with the print stylesheet
// (chat.css @media print: the conversation alone, tool cards open, nothing interactive).
(function () {
  "use strict";

  const menu = document.getElementById("export-menu");
  if (!menu) return;
  const links = { markdown: document.getElementById("export-md"), json: document.getElementById("export-json") };

  function threadId() {
    const m = location.pathname.match(/^\/c\/([^/]+)\/$/); // kept current by app.js
    return m ? decodeURIComponent(m[1]) : null;
  }

  function refresh() {
    const id = threadId();
    menu.hidden = !id;
    if (!id) { menu.open = false; return; }
    for (const [format, a] of Object.entries(links)) a.href = `/api/threads/${encodeURIComponent(id)}/export?as=${format}`;
  }

  document.getElementById("export-pdf").addEventListener("click", () => { menu.open = false; window.print(); });
  for (const a of Object.values(links)) a.addEventListener("click", () => { menu.open = false; });
  document.addEventListener("click", (ev) => { if (menu.open && !menu.contains(ev.target)) menu.open = false; });
  menu.addEventListener("keydown", (ev) => { if (ev.key === "Escape" && menu.open) { ev.stopPropagation(); menu.open = false; menu.querySelector("summary").focus(); } });
  // The URL changes when a new chat gets its thread (history.replaceState): follow it.
  for (const name of ["replaceState", "pushState"]) {
    const original = history[name].bind(history);
    history[name] = (...args) => { const out = original(...args); refresh(); return out; };
  }
  refresh();
})();
