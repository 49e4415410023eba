/* Markdown → safe DOM for chat messages.
 * marked parses (raw HTML in the source is escaped, never passed through), DOMPurify
 * sanitizes what marked produced, then code blocks get highlighting and a copy button and
 * links open in a new tab without access to this page. */
(function () {
  "use strict";

  let configured = false;
  function configure() {
    if (configured || !window.marked || !window.DOMPurify) return;
    // Raw HTML inside a message is shown as text: a message is content, never markup.
    window.marked.use({
      gfm: true,
      breaks: false,
      renderer: {
        html(token) { return escapeHtml(typeof token === "string" ? token : token.text || token.raw || ""); },
      },
    });
    window.DOMPurify.addHook("afterSanitizeAttributes", function (node) {
      if (node.tagName === "A") {
        const href = node.getAttribute("href") || "";
        if (!/^(https?:|mailto:|#|\/)/i.test(href)) node.removeAttribute("href");
        node.setAttribute("target", "_blank");
        node.setAttribute("rel", "noopener noreferrer nofollow");
      }
      if (node.tagName === "IMG") {
        const src = node.getAttribute("src") || "";
        // images only from this server: a message cannot make the browser call out
        if (!/^\/(?!\/)/.test(src)) node.removeAttribute("src");
        node.setAttribute("loading", "lazy");
      }
    });
    configured = true;
  }

  function escapeHtml(text) {
    return String(text).replace(/[&<>"']/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c];
    });
  }

  function render(target, text) {
    configure();
    if (!configured) { target.textContent = text; return; }
    const html = window.marked.parse(String(text || ""), { async: false });
    const clean = window.DOMPurify.sanitize(html, {
      FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select", "iframe", "object", "embed"],
      FORBID_ATTR: ["style"],
    });
    target.innerHTML = clean;
    linkCitations(target);
    enhanceCode(target);
    target.querySelectorAll("table").forEach(function (table) {
      if (table.parentElement && table.parentElement.classList.contains("table-wrap")) return;
      const wrap = document.createElement("div");
      wrap.className = "table-wrap";
      table.replaceWith(wrap);
      wrap.appendChild(table);
    });
  }

  // A knowledge citation ("[kb-0123456789ab-4]", harness/knowledge/types.py) becomes a link that
  // opens its document at the passage; the server checks the reader may see it.
  const CITATION = /\[(kb-[0-9a-f]{12}-\d{1,6})\]/g;
  const HAS_CITATION = /\[kb-[0-9a-f]{12}-\d{1,6}\]/;
  function linkCitations(root) {
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
      acceptNode(node) {
        return node.parentElement.closest("a, code, pre") || !HAS_CITATION.test(node.nodeValue)
          ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT;
      },
    });
    const found = [];
    while (walker.nextNode()) found.push(walker.currentNode);
    for (const node of found) {
      const parts = document.createDocumentFragment();
      let last = 0;
      node.nodeValue.replace(CITATION, function (match, id, at) {
        parts.append(node.nodeValue.slice(last, at));
        const link = document.createElement("a");
        link.className = "kb-cite";
        link.href = "/knowledge/cite/" + id;
        link.target = "_blank";
        link.rel = "noopener";
        link.title = "Open the cited passage";
        link.textContent = "[" + id + "]";
        parts.append(link);
        last = at + match.length;
        return match;
      });
      parts.append(node.nodeValue.slice(last));
      node.replaceWith(parts);
    }
  }

  function enhanceCode(root) {
    root.querySelectorAll("pre > code").forEach(function (code) {
      const pre = code.parentElement;
      if (pre.dataset.enhanced) return;
      pre.dataset.enhanced = "1";
      const lang = (code.className.match(/language-([\w+#.-]+)/) || [])[1] || "";
      if (window.hljs) {
        try {
          if (lang && window.hljs.getLanguage(lang)) window.hljs.highlightElement(code);
          else if (code.textContent.length < 20000) {
            const r = window.hljs.highlightAuto(code.textContent);
            code.innerHTML = r.value; // hljs escapes the text it wraps
            code.classList.add("hljs");
          }
        } catch (e) { /* leave the code plain */ }
      }
      const bar = document.createElement("div");
      bar.className = "code-bar";
      const label = document.createElement("span");
      label.textContent = lang || "code";
      const copy = document.createElement("button");
      copy.type = "button";
      copy.className = "copy-code";
      copy.textContent = "Copy";
      copy.setAttribute("aria-label", "Copy code");
      copy.addEventListener("click", function () {
        copyText(code.textContent).then(function () {
          copy.textContent = "Copied";
          setTimeout(function () { copy.textContent = "Copy"; }, 1500);
        });
      });
      bar.append(label, copy);
      pre.before(bar);
      const wrap = document.createElement("div");
      wrap.className = "code-block";
      bar.before(wrap);
      wrap.append(bar, pre);
    });
  }

  function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text);
    const area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.style.position = "fixed";
    area.style.opacity = "0";
    document.body.appendChild(area);
    area.select();
    try { document.execCommand("copy"); } finally { area.remove(); }
    return Promise.resolve();
  }

  window.DFMarkdown = { render: render, escapeHtml: escapeHtml, copyText: copyText };
})();
