// jobtrail dashboard: live updates by short polling. The pages work without this file;
// with it, every element marked data-live is refreshed from the same URL every few
// seconds, unless the operator is typing in a form or has ticked boxes in a list. The
// badge says when the page is not being updated (an error answer, offline, signed out).
(function () {
  "use strict";
  var PERIOD_MS = 3000;
  var live = document.querySelectorAll("[data-live][id]");
  if (!live.length || !window.fetch || !window.DOMParser) return;
  var badge = document.createElement("div");
  badge.className = "live";
  badge.textContent = "live";
  document.body.appendChild(badge);
  function busy() {
    var el = document.activeElement;
    if (el && el.form && (el.value || el.tagName === "SELECT")) return true;
    return document.querySelector("[data-live] input[type=checkbox]:checked") !== null;
  }
  function stale(why) {
    badge.textContent = "not updating: " + why;
    badge.className = "live stale";
  }
  function refresh() {
    if (document.hidden || busy()) return schedule();
    fetch(window.location.href, { credentials: "same-origin", cache: "no-store" })
      .then(function (response) {
        if (response.status === 401) { stale("signed out"); return null; }
        if (!response.ok) { stale("HTTP " + response.status); schedule(); return null; }
        return response.text();
      })
      .then(function (text) {
        if (text === null) return;
        var fresh = new DOMParser().parseFromString(text, "text/html");
        live.forEach(function (el) {
          var next = fresh.getElementById(el.id);
          if (next && next.innerHTML !== el.innerHTML) el.innerHTML = next.innerHTML;
        });
        badge.className = "live";
        badge.textContent = "live · " + new Date().toLocaleTimeString();
        schedule();
      })
      .catch(function () { stale("offline"); schedule(); });
  }
  function schedule() { window.setTimeout(refresh, PERIOD_MS); }
  schedule();
})();
