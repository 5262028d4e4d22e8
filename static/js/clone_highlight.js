// Clone and change: outline each field whose value differs from the config it was copied from
// (its data-source attribute, set by the server), as the user types and after a refused save.
(function () {
  "use strict";
  function current(field) {
    if (field.type === "checkbox") return field.checked ? "on" : "off";
    return field.value;
  }
  function mark(field) {
    var from = field.getAttribute("data-source");
    var same = from === current(field) || Number(from) === Number(current(field)) && current(field) !== "";
    field.classList.toggle("changed-from-source", !same);
  }
  document.querySelectorAll("[data-source]").forEach(function (field) {
    mark(field);
    field.addEventListener("input", function () { mark(field); });
    field.addEventListener("change", function () { mark(field); });
  });
})();
