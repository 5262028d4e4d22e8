/* The "Start a run" form (templates/engines/_start_job.html): only the chosen job's parameters
 * are shown and sent; each one's label and help text are the chosen job's (data-labels and
 * data-help: job -> text, as JSON).
 */
(function () {
  "use strict";

  var form = document.getElementById("start-job");
  if (!form) return;
  var select = form.elements.job;

  function show() {
    form.querySelectorAll("[data-jobs]").forEach(function (label) {
      var on = label.getAttribute("data-jobs").split(" ").indexOf(select.value) !== -1;
      label.hidden = !on;
      label.querySelectorAll("input").forEach(function (input) { input.disabled = !on; });
      label.querySelector("small.help").textContent = JSON.parse(label.getAttribute("data-help"))[select.value] || "";
      var name = JSON.parse(label.getAttribute("data-labels"))[select.value];
      if (name) label.querySelector(".param-label").textContent = name;
    });
  }

  select.addEventListener("change", show);
  show();
})();
