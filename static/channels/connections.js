// Settings → Connections: the user's connected chat accounts (revoke), and one-time codes to
// connect a new one. Everything goes through /api/channels/*.
(function () {
  "use strict";

  const { api, el, button } = window.DeerFlowPage;
  const $ = (id) => document.getElementById(id);
  const errorBox = $("conn-error");
  let countdown = null;
  let pendingProvider = null;
  let knownIds = new Set();
  // What the channels worker last reported, in words for people.
  const STATE_LABELS = { connected: "online", stopped: "offline", starting: "starting", retrying: "reconnecting", disabled: "off",
    login: "waiting for login" };
  let waitingForLogin = false;

  function showError(message) {
    errorBox.textContent = message || "";
    errorBox.hidden = !message;
  }

  function when(iso) {
    return iso ? new Date(iso).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" }) : "—";
  }

  // Provider → display name ("wecom" → "WeCom"), from the providers list.
  const names = {};

  function title(provider) {
    return names[provider] || provider.charAt(0).toUpperCase() + provider.slice(1);
  }

  async function loadConnections() {
    const data = await api("GET", "/api/channels/connections");
    const rows = $("conn-rows");
    rows.replaceChildren();
    const connections = data.connections || [];
    $("conn-empty").hidden = connections.length > 0;
    $("conn-table").hidden = connections.length === 0;
    for (const c of connections) {
      rows.append(el("tr", { "data-connection": String(c.id) },
        el("td", {}, el("strong", {}, title(c.provider))),
        el("td", { "data-label": "Account" }, c.display_name || c.external_id, c.display_name ? el("span", { class: "muted" }, ` (${c.external_id})`) : ""),
        el("td", { "data-label": "Connected" }, when(c.created_at)),
        el("td", { "data-label": "Last used" }, when(c.last_used_at)),
        el("td", {}, el("div", { class: "row-actions" }, button("Revoke", () => revoke(c), "danger")))));
    }
    // A code was sent to the bot and a new connection appeared: the code did its job.
    const ids = new Set(connections.map((c) => c.id));
    const added = connections.find((c) => !knownIds.has(c.id) && c.provider === pendingProvider);
    knownIds = ids;
    if (added && pendingProvider) connected(added);
  }

  async function loadProviders() {
    const data = await api("GET", "/api/channels/providers");
    for (const p of data.providers || []) names[p.provider] = p.display_name;
    const list = $("provider-list");
    list.replaceChildren();
    const providers = (data.providers || []).filter((p) => p.enabled || p.configured);
    $("provider-empty").hidden = providers.length > 0;
    waitingForLogin = false;
    for (const p of providers) {
      const get = button("Get a code", () => getCode(p));
      if (!p.connectable) get.disabled = true;
      list.append(el("li", { "data-provider": p.provider },
        el("div", {}, el("strong", {}, p.display_name), " ", el("span", { class: "status " + p.connection_status }, STATE_LABELS[p.connection_status] || p.connection_status),
          p.detail ? el("div", { class: "why" }, p.detail) : "", p.login_qr ? loginQr(p) : ""),
        get));
      if (p.connection_status === "login") waitingForLogin = true;
    }
  }

  // Administrators only (the API sends it to them alone): the code the platform wants scanned
  // to log the bot in (WeChat). Scanning it logs the bot in as the scanner's bot account.
  function loginQr(p) {
    return el("figure", { class: "login-qr" },
      el("img", { src: p.login_qr.image, alt: `${p.display_name} login QR code`, width: "200", height: "200" }),
      el("figcaption", {}, `Scan with ${p.display_name} to log the bot in. Only administrators see this code.`,
        p.login_qr.link ? el("span", {}, " On the phone itself: ", el("a", { href: p.login_qr.link, target: "_blank", rel: "noopener" }, "open the login link"), ".") : ""));
  }

  async function getCode(provider) {
    showError("");
    try {
      const code = await api("POST", `/api/channels/${encodeURIComponent(provider.provider)}/connect`);
      pendingProvider = provider.provider;
      const box = $("code-box");
      box.classList.remove("expired");
      box.hidden = false;
      $("code-provider").textContent = provider.display_name;
      $("code-value").textContent = code.code;
      $("code-instruction").textContent = code.instruction;
      const link = $("code-link");
      link.hidden = !code.url;
      if (code.url) { link.href = code.url; link.textContent = `Open ${provider.display_name}`; }
      startCountdown(Date.now() + code.expires_in * 1000);
    } catch (err) {
      showError(err.message);
    }
  }

  function startCountdown(deadline) {
    clearInterval(countdown);
    const tick = () => {
      const left = Math.max(0, Math.round((deadline - Date.now()) / 1000));
      const expiry = $("code-expiry");
      if (left === 0) {
        clearInterval(countdown);
        pendingProvider = null;
        $("code-box").classList.add("expired");
        expiry.textContent = "This code has expired. Get a new one.";
        return;
      }
      const m = Math.floor(left / 60), s = String(left % 60).padStart(2, "0");
      expiry.textContent = `Expires in ${m}:${s}. It works once.`;
    };
    tick();
    countdown = setInterval(tick, 1000);
  }

  function connected(connection) {
    clearInterval(countdown);
    pendingProvider = null;
    const box = $("code-box");
    box.classList.add("expired");
    $("code-link").hidden = true;
    $("code-expiry").textContent = `Connected: ${connection.display_name || connection.external_id}. You can talk to the agent there now.`;
  }

  async function revoke(connection) {
    if (!window.confirm(`Disconnect ${title(connection.provider)} account ${connection.display_name || connection.external_id}? Its messages will no longer reach the agent.`)) return;
    showError("");
    try {
      await api("DELETE", `/api/channels/connections/${connection.id}`);
      await loadConnections();
    } catch (err) {
      showError(err.message);
    }
  }

  async function refresh() {
    try {
      await loadConnections();
    } catch (err) {
      showError(err.message);
    }
  }

  async function init() {
    try {
      await loadProviders();  // first: the connection rows use the providers' display names
      await loadConnections();
    } catch (err) {
      showError(err.message);
    }
    // While a code is out, look for the connection it makes (the bot binds it, not this page).
    setInterval(() => { if (pendingProvider && !document.hidden) refresh(); }, 2000);
    // While a bot waits for its QR login, follow it: a new code replaces an expired one, and
    // the code goes away once it is scanned.
    setInterval(() => { if (waitingForLogin && !document.hidden) loadProviders().catch((err) => showError(err.message)); }, 3000);
  }

  init();
})();
