/* The MMLU-Pro run: the running accuracy per question answered, and a row each.
 * Registers itself as the "mmlu-pro" view of RunCharts (the chart is RunCharts' scoreView).
 */
(function () {
  "use strict";

  window.RunCharts.register("mmlu-pro", window.RunCharts.helpers.scoreView({
    lines: [[gettext("accuracy so far"), "accuracy_so_far", "#1e88e5"]],
    row: function (q) {
      return [String(q.question_id) + " (" + q.category + ")", q.target, q.answer || gettext("none"),
              q.correct ? gettext("correct") : (q.budget_hit ? gettext("budget hit before answering") : gettext("wrong"))];
    }
  }));
})();
