/* Quality runs (MMLU-Pro, HumanEval+/MBPP+): the running score per question answered, and a row each.
 * Registers itself as the "mmlu-pro" and "evalplus" views of RunCharts. */
(function () {
  "use strict";
  var h = window.RunCharts.helpers;

  // Each job's sample fields: the running figures to plot, and a row of the questions table.
  var JOBS = {
    "mmlu-pro": {
      lines: [["accuracy so far", "accuracy_so_far", "#1e88e5"]],
      row: function (q) {
        return [String(q.question_id) + " (" + q.category + ")", q.target, q.answer || "none",
                q.correct ? "correct" : "wrong"];
      }
    },
    evalplus: {
      lines: [["pass@1 plus so far", "pass_at_1_plus_so_far", "#43a047"],
              ["pass@1 base so far", "pass_at_1_base_so_far", "#9e9e9e"]],
      row: function (q) {
        return [q.task_id, "pass", "base: " + q.base_status + ", plus: " + q.plus_status,
                q.passed_plus ? "pass" : (q.passed_base ? "base only" : "fail")];
      }
    }
  };

  function qualityView(job) {
    return function () {
      var spec = JOBS[job];
      var canvas = document.getElementById("quality-chart");
      var rows = [];
      var c = h.chart(canvas, "questions answered", [], { y: h.axis("score (%)", { max: 100 }) });
      return {
        add: function (sample) {
          if (sample.kind !== "question" || !sample.values) return false;
          rows.push(sample.values);
          return true;
        },
        draw: function () {
          c.data.labels = rows.map(function (r) { return r.done; });
          c.data.datasets = spec.lines.map(function (line) {
            return h.dataset(line[0], line[2], "y", { data: rows.map(function (r) { return 100 * r[line[1]]; }) });
          });
          c.update("none");
          h.markPoints(canvas, rows.length);
          h.fillRows(h.tbodyOf("job-summary"), rows.map(function (r) {
            var seconds = r.seconds !== undefined ? r.seconds : r.generation_s;
            return [String(r.done)].concat(spec.row(r), [h.value(seconds, "s", 1)]);
          }));
        },
        applyRun: function () {}
      };
    };
  }

  window.RunCharts.register("mmlu-pro", qualityView("mmlu-pro"));
  window.RunCharts.register("evalplus", qualityView("evalplus"));
})();
