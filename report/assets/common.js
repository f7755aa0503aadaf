// arbor pages' shared helpers (report.js and capacity.js both start from
// them): the page's failure (title and banner, which
// scripts/check-report.sh reads), elements, and numbers as the pages
// print them. Exposed as window.arborPage; inlined before each page's own
// script by report/src/page/html.rs.
(function () {
  "use strict";
  var DASH = "–";
  var failed = false;
  // The page could not draw what it should: its title says so (the
  // browser check reads it) and a banner on top.
  function fail(message) {
    failed = true;
    document.title = "arbor report: error: " + message;
    var app = document.getElementById("app");
    if (app) {
      var b = document.createElement("div");
      b.className = "banner";
      b.textContent = "report error: " + message;
      app.insertBefore(b, app.firstChild);
    }
  }
  window.addEventListener("error", function (e) { fail(e.message || String(e)); });
  // An element with attributes ("text" and "class" set those) and children
  // (strings become text).
  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === "text") e.textContent = attrs[k];
      else if (k === "class") e.className = attrs[k];
      else e.setAttribute(k, attrs[k]);
    });
    (children || []).forEach(function (c) {
      e.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    });
    return e;
  }
  // A number with `digits` decimals and thousands separators; "–" for none.
  function num(v, digits) {
    if (v == null || !isFinite(v)) return DASH;
    return Number(v).toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });
  }
  function pct(share) { return share == null ? DASH : num(share * 100, 1) + " %"; }
  window.arborPage = {
    DASH: DASH, fail: fail, failed: function () { return failed; }, el: el, num: num, pct: pct
  };
})();
