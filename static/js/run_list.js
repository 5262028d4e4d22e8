/* The runs list's "Compare selected" form (templates/runs/list.html): the button counts the
 * ticked runs, and a click with fewer than two says so at once (the server says the same).
 */
(function () {
  "use strict";

  var form = document.getElementById("compare-selected");
  if (!form) return;
  var button = form.querySelector("button[name=compare]");

  function ticked() {
    return form.querySelectorAll("input[name=runs]:checked").length;
  }

  function count() {
    var n = ticked();
    var message = document.getElementById("compare-error");
    button.textContent = n ? interpolate(gettext("Compare selected (%(n)s)"), { n: n }, true) : gettext("Compare selected");
    if (message && n >= 2) message.remove();
  }

  function refuse(event) {
    var n = ticked();
    if (n >= 2) return;
    event.preventDefault();
    var message = document.getElementById("compare-error") || document.createElement("p");
    message.id = "compare-error";
    message.className = "error";
    message.setAttribute("role", "alert");
    message.textContent = interpolate(ngettext(
      "Compare selected: tick at least 2 runs to compare (%(n)s is ticked).",
      "Compare selected: tick at least 2 runs to compare (%(n)s are ticked).", n), { n: n }, true);
    button.closest(".row").after(message);
  }

  form.addEventListener("change", count);
  form.addEventListener("submit", refuse);
  count();
})();
