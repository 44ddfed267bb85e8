// jobtrail dashboard: live updates by short polling. The pages work without this file;
// with it, every element marked data-live is refreshed from the same URL every few
// seconds, unless the operator is typing in a form.
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
    return el && el.form && (el.value || el.tagName === "SELECT");
  }
  function refresh() {
    if (document.hidden || busy()) return schedule();
    fetch(window.location.href, { credentials: "same-origin", cache: "no-store" })
      .then(function (response) {
        if (response.status === 401) { badge.textContent = "signed out"; return null; }
        return response.ok ? response.text() : null;
      })
      .then(function (text) {
        if (text === null) return;
        var fresh = new DOMParser().parseFromString(text, "text/html");
        live.forEach(function (el) {
          var next = fresh.getElementById(el.id);
          if (next && next.innerHTML !== el.innerHTML) el.innerHTML = next.innerHTML;
        });
        badge.textContent = "live · " + new Date().toLocaleTimeString();
        schedule();
      })
      .catch(function () { badge.textContent = "offline"; schedule(); });
  }
  function schedule() { window.setTimeout(refresh, PERIOD_MS); }
  schedule();
})();
