// The config form: the speculative method's suggestions are those of the chosen engine's kind
// (a datalist per kind, rendered by the server; engine id -> kind in #engine-kinds).
(function () {
  "use strict";
  var kinds = document.getElementById("engine-kinds");
  var engine = document.getElementById("id_engine");
  var method = document.getElementById("id_speculative_method");
  if (!kinds || !engine || !method) return;
  var byEngine = JSON.parse(kinds.textContent);
  function follow() {
    var kind = byEngine[engine.value];
    method.setAttribute("list", kind ? "methods-" + kind : "methods-none");
  }
  engine.addEventListener("change", follow);
  follow();
})();
