// When each message was written, and which model wrote an answer: "3 min ago · gpt-4o" under the
// message, the exact time on hover (and for screen readers, in <time datetime>). History rows
// carry their journal time and the answer's model; a live message is stamped when it arrives.
// The relative times are refreshed once a minute.
(function () {
  "use strict";

  const rtf = typeof Intl !== "undefined" && Intl.RelativeTimeFormat ? new Intl.RelativeTimeFormat(undefined, { numeric: "auto" }) : null;
  const exact = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
  const STEPS = [[60, "second", 1], [3600, "minute", 60], [86400, "hour", 3600], [604800, "day", 86400]];

  function relative(date) {
    const seconds = Math.round((date.getTime() - Date.now()) / 1000);
    const ago = Math.abs(seconds);
    if (ago < 45) return "just now";
    if (!rtf) return exact.format(date);
    for (const [limit, unit, size] of STEPS) {
      if (ago < limit) return rtf.format(Math.round(seconds / size), unit);
    }
    return exact.format(date);
  }

  function paint(time) {
    time.textContent = relative(new Date(time.dateTime));
  }

  /* Stamp an entry once: ``iso`` (default now) and, for an answer, the model's name. */
  function stamp(entry, iso, model) {
    if (!entry || !entry.el || entry.stamped) return;
    const date = iso ? new Date(iso) : new Date();
    if (Number.isNaN(date.getTime())) return;
    entry.stamped = true;
    const time = document.createElement("time");
    time.className = "msg-time";
    time.dateTime = date.toISOString();
    time.title = exact.format(date);
    paint(time);
    const meta = document.createElement("div");
    meta.className = "msg-meta small muted";
    meta.append(time);
    if (model) {
      const who = document.createElement("span");
      who.className = "msg-model";
      who.textContent = model;
      who.title = `Written by ${model}`;
      meta.append(" · ", who);
    }
    const actions = entry.el.querySelector(":scope > .msg-actions");
    entry.el.insertBefore(meta, actions || null);
  }

  setInterval(() => document.querySelectorAll("time.msg-time").forEach(paint), 60_000);

  window.DFStamps = { stamp, relative };
})();
