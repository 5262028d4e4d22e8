/* Copy buttons (the launch recipe's, templates/engines/_recipe.html): a button with
 * data-copy="<id>" copies that element's text. A script file, not an onclick attribute, so the
 * Content-Security-Policy needs no inline script.
 */
(function () {
  "use strict";

  document.addEventListener("click", function (event) {
    var button = event.target.closest("button[data-copy]");
    if (!button) return;
    var source = document.getElementById(button.dataset.copy);
    if (source && navigator.clipboard) navigator.clipboard.writeText(source.innerText);
  });
})();
