/* The thread websocket as a transport: one socket per thread, messages sent while it is not
 * open wait in an outbox and go out on open (after the caller's hello, which re-subscribes
 * after the last event seen), and a dropped socket reconnects with backoff (0.5 s doubling
 * to 8 s). Close codes 4401 (signed out) and 4404 (no such thread) are final. A socket for
 * another thread id is closed when one for the new id opens. opts.query() adds a query
 * string (a new chat's "?new=1"). What the messages mean is app.js's business. */
(function () {
  "use strict";

  const FINAL = { 4401: "You are signed out. Sign in again to continue.", 4404: "This chat no longer exists." };
  const OFFLINE = "You are offline. What you send waits here and goes out when the connection is back.";

  function create(opts) {
    let ws = null, wanted = false, backoff = 0, timer = null;
    const outbox = [];

    function url() {
      const proto = location.protocol === "https:" ? "wss:" : "ws:";
      return `${proto}//${location.host}${opts.path}${encodeURIComponent(opts.threadId())}/${opts.query ? opts.query() : ""}`;
    }

    function send(msg) {
      if (ws && ws.readyState === WebSocket.OPEN && ws.threadId === opts.threadId()) ws.send(JSON.stringify(msg));
      else { outbox.push(msg); connect(); }
    }

    function connect() {
      if (!opts.threadId()) return;
      if (ws && ws.threadId === opts.threadId() && (ws.readyState === WebSocket.OPEN || ws.readyState === WebSocket.CONNECTING)) return;
      clearTimeout(timer);
      wanted = true;
      if (ws) { const old = ws; ws = null; old.close(1000, "another thread"); }
      const sock = new WebSocket(url());
      sock.threadId = opts.threadId();
      ws = sock;
      sock.onopen = () => {
        backoff = 0;
        opts.onStatus("");
        const hello = opts.hello(outbox.some((m) => m.type === "run"));
        if (hello) sock.send(JSON.stringify(hello));
        for (const m of outbox.splice(0)) sock.send(JSON.stringify(m));
      };
      sock.onmessage = (ev) => {
        let msg;
        try { msg = JSON.parse(ev.data); } catch (e) { return; }
        opts.onMessage(msg);
      };
      sock.onclose = (ev) => {
        if (ws !== sock) return;
        ws = null;
        if (FINAL[ev.code]) { opts.onStatus(FINAL[ev.code], true); opts.onFinal(FINAL[ev.code]); return; }
        if (!wanted) return;
        if (!navigator.onLine) { opts.onStatus(OFFLINE); return; } // "online" reconnects at once
        const delay = Math.min(8000, 500 * Math.pow(2, backoff++));
        opts.onStatus(`Connection lost — reconnecting in ${Math.round(delay / 100) / 10}s…`);
        timer = setTimeout(connect, delay);
      };
    }

    // The browser knows it is offline before the socket does (a dropped socket may take a minute
    // to notice): say so at once, and reconnect the moment the network is back.
    window.addEventListener("offline", () => opts.onStatus(OFFLINE));
    window.addEventListener("online", () => {
      opts.onStatus("");
      if (wanted && !ws) { clearTimeout(timer); backoff = 0; connect(); }
    });
    if (!navigator.onLine) opts.onStatus(OFFLINE);

    return {
      send, connect,
      queued: () => outbox.length,
      drop() { if (ws) ws.close(4000, "dropped"); },
      stop() { wanted = false; },
    };
  }

  window.DFSocket = { create };
})();
