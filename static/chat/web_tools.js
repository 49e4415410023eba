/* Web tool cards and the sources list under an answer.
 *
 * web_search, web_fetch and image_search results carry a structured `artifact` (the
 * ToolMessage's, see harness/tools/web/tools.py). The card shows what was asked (query or
 * URL, through app.js), then the result list as plain links: titles only, no favicons or
 * remote images, so rendering a result never makes the browser contact the site. URLs the
 * agent saw are remembered per thread; an answer that cites one gets a Sources list. */
(function () {
  "use strict";

  const WEB_TOOLS = new Set(["web_search", "web_fetch", "image_search"]);
  const seen = new Map(); // url -> title, from search results and fetched pages

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function hostOf(url) {
    try { return new URL(url).host; } catch (e) { return ""; }
  }

  function link(url, text, cls) {
    // only http(s) becomes a link: a result cannot smuggle a javascript: URL into the page
    const ok = typeof url === "string" && /^https?:\/\//i.test(url);
    const node = el(ok ? "a" : "span", cls, text || url || "");
    if (ok) {
      node.href = url;
      node.target = "_blank";
      node.rel = "noopener noreferrer nofollow";
      node.title = url;
    }
    return node;
  }

  function remember(url, title) {
    if (typeof url !== "string" || !/^https?:\/\//i.test(url)) return;
    if (title || !seen.has(url)) seen.set(url, title || seen.get(url) || "");
  }

  function headline(card, content) {
    let slot = card.querySelector(".web-headline");
    if (!slot) {
      slot = el("span", "web-headline");
      card.querySelector("summary").insertBefore(slot, card.querySelector(".tool-status"));
    }
    slot.replaceChildren(content);
  }

  function searchList(results) {
    const list = el("ol", "web-results");
    for (const r of results) {
      remember(r.url, r.title);
      const item = el("li", "web-result");
      const top = el("div", "web-result-top");
      top.append(link(r.url, r.title || r.url, "web-result-title"), el("span", "web-host", hostOf(r.url)));
      item.append(top);
      if (r.date) item.append(el("span", "web-date", String(r.date).slice(0, 10)));
      if (r.snippet) item.append(el("p", "web-snippet", r.snippet));
      list.append(item);
    }
    return list;
  }

  function imageList(results) {
    const list = el("ol", "web-results web-images");
    for (const r of results) {
      const item = el("li", "web-result");
      const size = r.width && r.height ? ` · ${r.width}×${r.height}` : "";
      const top = el("div", "web-result-top");
      top.append(link(r.image_url, r.title || "image", "web-result-title"), el("span", "web-host", hostOf(r.image_url) + size));
      item.append(top);
      if (r.source_url) {
        const src = el("span", "web-source", "from ");
        src.append(link(r.source_url, hostOf(r.source_url) || r.source_url));
        item.append(src);
      }
      list.append(item);
    }
    return list;
  }

  function fetchedPage(art) {
    remember(art.final_url, art.title);
    if (art.url !== art.final_url) remember(art.url, art.title);
    const box = el("div", "web-page");
    box.append(link(art.final_url, art.title || art.final_url, "web-result-title"));
    const meta = [hostOf(art.final_url), art.content_type, art.chars ? `${Number(art.chars).toLocaleString()} chars` : "",
      art.truncated ? "cut to fit" : "", art.fetched_at ? "fetched " + String(art.fetched_at).replace("T", " ").slice(0, 16) : ""];
    box.append(el("span", "web-host", meta.filter(Boolean).join(" · ")));
    return box;
  }

  function onResult(card, msg, failed) {
    const name = card.dataset.tool;
    if (!WEB_TOOLS.has(name)) return;
    card.classList.add("web-card");
    const extra = card.querySelector(".tool-extra");
    const raw = card.querySelector(".web-raw");
    if (raw) raw.hidden = false;
    const art = msg && msg.artifact;
    if (failed || !art || typeof art !== "object") return;
    let view = null;
    if (art.kind === "web_search" && Array.isArray(art.results)) {
      headline(card, el("span", null, `${art.results.length} result${art.results.length === 1 ? "" : "s"}`));
      view = searchList(art.results);
    } else if (art.kind === "image_search" && Array.isArray(art.results)) {
      headline(card, el("span", null, `${art.results.length} image${art.results.length === 1 ? "" : "s"}`));
      view = imageList(art.results);
    } else if (art.kind === "web_fetch") {
      headline(card, link(art.final_url, art.title || hostOf(art.final_url)));
      view = fetchedPage(art);
    }
    if (!view) return;
    let slot = card.querySelector(".web-view");
    if (!slot) {
      slot = el("div", "web-view");
      card.querySelector(".tool-body").insertBefore(slot, card.querySelector(".tool-body").firstChild);
    }
    slot.replaceChildren(view);
    if (extra) extra.hidden = false;
    if (!card.querySelector(".web-raw")) {
      // the list says it better; the text the model read stays one click away
      const raw = el("details", "web-raw");
      raw.append(el("summary", null, "Text given to the model"), card.querySelector(".tool-result"));
      card.querySelector(".result-label").hidden = true;
      card.querySelector(".result-label").after(raw);
    }
  }

  function sources(entry) {
    if (!entry || !entry.el || entry.type === "human") return;
    const text = entry.text || "";
    const cited = [];
    for (const [url, title] of seen) if (text.includes(url)) cited.push([url, title]);
    let box = entry.el.querySelector(":scope > .sources");
    if (!cited.length) { if (box) box.remove(); return; }
    if (!box) {
      box = el("nav", "sources");
      box.setAttribute("aria-label", "Sources");
      entry.body.after(box);
    }
    const list = el("ol", "sources-list");
    for (const [url, title] of cited) {
      const item = el("li");
      item.append(link(url, title || hostOf(url) || url), el("span", "web-host", hostOf(url)));
      list.append(item);
    }
    box.replaceChildren(el("div", "sources-label", "Sources"), list);
  }

  function reset() { seen.clear(); }

  window.DFWebTools = { onResult, sources, reset };
})();
