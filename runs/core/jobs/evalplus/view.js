/* The HumanEval+ / MBPP+ run: pass@1 on the plus and the base tests per problem graded, and a row each.
 * Registers itself as the "evalplus" view of RunCharts (the chart is RunCharts' scoreView).
 */
(function () {
  "use strict";

  // EvalPlus's own statuses, said in the reader's language; any other as EvalPlus wrote it.
  var STATUS_TEXT = { pass: gettext("pass"), fail: gettext("fail"), timeout: gettext("timeout") };
  function status(s) { return STATUS_TEXT[s] || s; }

  window.RunCharts.register("evalplus", window.RunCharts.helpers.scoreView({
    lines: [[gettext("pass@1 plus so far"), "pass_at_1_plus_so_far", "#43a047"],
            [gettext("pass@1 base so far"), "pass_at_1_base_so_far", "#9e9e9e"]],
    row: function (q) {
      var statuses = interpolate(gettext("base: %(base)s, plus: %(plus)s"), { base: status(q.base_status), plus: status(q.plus_status) }, true);
      return [q.task_id, gettext("pass"), statuses,
              q.budget_hit ? gettext("budget hit before answering") :
                (q.passed_plus ? gettext("pass") : (q.passed_base ? gettext("base only") : gettext("fail")))];
    }
  }));
})();
