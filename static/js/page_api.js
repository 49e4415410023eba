// What the pages around the chat (schedules, memory, skills, MCP settings) share: calls to the
// API with the session's CSRF token, failures as Errors carrying the API's {"detail": ...}
// (and the whole answer as err.data), and a small element builder.
(function () {
  "use strict";

  function csrf() {
    const meta = document.querySelector('meta[name="csrf-token"]');
    return meta ? meta.content : "";
  }

  // body: undefined (none), FormData (sent as is), a string (already JSON) or a value to encode.
  async function api(method, path, body) {
    const opts = { method, credentials: "same-origin", headers: { Accept: "application/json", "X-CSRFToken": csrf() } };
    if (body instanceof FormData) opts.body = body;
    else if (body !== undefined) {
      opts.headers["Content-Type"] = "application/json";
      opts.body = typeof body === "string" ? body : JSON.stringify(body);
    }
    const response = await fetch(path, opts);
    const data = response.status === 204 ? {} : await response.json().catch(() => ({}));
    if (!response.ok) {
      const err = new Error(data.detail || `${response.status} ${response.statusText}`);
      err.data = data;
      throw err;
    }
    return data;
  }

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (key === "class") node.className = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value);
    }
    for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(child ?? ""));
    return node;
  }

  function button(label, onclick, extra) {
    return el("button", { type: "button", class: "small-button" + (extra ? " " + extra : ""), onclick }, label);
  }

  window.DeerFlowPage = { csrf, api, el, button };
})();
