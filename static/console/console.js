// Usage and Console pages: days are cut in the reader's time zone. Without a tz in the
// address the server used UTC; ask again once in the browser's zone.
(function () {
  "use strict";
  const params = new URLSearchParams(location.search);
  let zone = "";
  try { zone = Intl.DateTimeFormat().resolvedOptions().timeZone || ""; } catch (e) { zone = ""; }
  if (!params.has("tz") && zone && zone !== "UTC" && zone !== "Etc/UTC") {
    params.set("tz", zone);
    location.replace(location.pathname + "?" + params.toString() + location.hash);
  }
})();
