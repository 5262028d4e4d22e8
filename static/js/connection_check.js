// A connection check that waits for its machine's worker: ask for it every second until it has
// finished, then show what answered (or why nothing did), as the server renders a finished one.
(function () {
  "use strict";
  var box = document.getElementById("connection-check");
  if (!box || box.getAttribute("data-finished")) return;
  function part(name) { return box.querySelector('[data-part="' + name + '"]'); }
  function field(name) { return box.querySelector('[data-field="' + name + '"]'); }
  function show(result) {
    part("waiting").hidden = true;
    if (!result.reachable) {
      field("error").textContent = result.error || "";
      part("unreachable").hidden = false;
      return;
    }
    field("api").textContent = result.api || "";
    field("models").textContent = (result.models || []).join(", ") || "—";
    field("version").textContent = result.version || "—";
    var counters = field("spec_counters");
    var key = result.spec_counters === null ? "data-none" : result.spec_counters ? "data-yes" : "data-no";
    counters.textContent = counters.getAttribute(key);
    part("reachable").hidden = false;
  }
  function poll() {
    fetch(box.getAttribute("data-url"), { credentials: "same-origin" })
      .then(function (r) { return r.json(); })
      .then(function (check) {
        if (check.finished) { box.setAttribute("data-finished", "1"); show(check.result); }
        else { setTimeout(poll, 1000); }
      })
      .catch(function () { setTimeout(poll, 3000); });
  }
  poll();
})();
