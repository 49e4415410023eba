/* A shared chat's page: the answers' Markdown (kept as text in the page, so it reads without
 * scripts too) is drawn by the chat's own renderer (static/chat/markdown.js: sanitized,
 * highlighted code, tables that scroll in their box). */
(function () {
  "use strict";
  document.querySelectorAll("[data-markdown]").forEach((node) => window.DFMarkdown.render(node, node.textContent));
  document.body.dataset.ready = "1";
})();
