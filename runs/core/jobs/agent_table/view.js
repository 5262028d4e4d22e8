/* The agent API-table run: time and tokens per step (tool steps and the answer marked),
 * and the graded outcome. Registers itself as the "agent-table" view of RunCharts. */
(function () {
  "use strict";
  var h = window.RunCharts.helpers;

  function share(v) { return typeof v === "number" ? SparkFormat.number(v, 1, 100) + " %" : "—"; }

  function precision(s) {
    if (s.answer_rows === undefined) return share(s.precision);
    if (!s.answer_rows) return gettext("— (no rows answered)");
    return interpolate(gettext("%(share)s (%(score)s of %(rows)s rows answered)"),
      { share: share(s.precision), score: s.score, rows: s.answer_rows }, true);
  }

  // The watchdog's steps, in words: "noted at read 12 (step 12), tools withdrawn at read 20 (step 20)".
  function readLoop(s) {
    var loop = s.read_loop;
    if (!loop) return s.read_loop === undefined ? null : gettext("none caught");
    var said = [];
    if (loop.noted_at_step) {
      said.push(interpolate(gettext("noted at read %(read)s (step %(step)s)"), { read: loop.note_at, step: loop.noted_at_step }, true));
    }
    if (loop.withdrawn_at_step) {
      said.push(interpolate(gettext("tools withdrawn at read %(read)s (step %(step)s)"),
        { read: loop.withdraw_at, step: loop.withdrawn_at_step }, true));
    }
    return loop.file + ": " + said.join(", ");
  }

  function label(r) { return r.tool ? [String(r.step), r.tool] : [String(r.step), gettext("answer")]; }

  // Summaries stored before F1, precision and exact lack them: those rows show as not reported.
  function summaryRows(s) {
    return [
      [gettext("outcome"), gettext(s.outcome) + (s.stop_reason ? " (" + gettext(s.stop_reason) + ")" : "")],
      [gettext("table F1"), share(s.f1)],
      [gettext("score (correct rows)"), s.score + " / " + s.rows + (s.exact ? " " + gettext("(exact)") : "")],
      [gettext("precision (correct of rows answered)"), precision(s)],
      [gettext("exact"), s.exact === undefined ? null : (s.exact ? gettext("yes") : gettext("no"))],
      [gettext("steps"), String(s.steps)], [gettext("task time"), h.value(s.task_s, "s", 1)],
      [gettext("most reads of one file"), String(s.max_reads)],
      [gettext("read loop"), readLoop(s)]
    ];
  }

  function agentView() {
    var canvas = document.getElementById("agent-chart");
    var steps = [];
    var c = h.chart(canvas, gettext("step"), [], {
      y: h.axis(gettext("step time (s)")), tokens: h.rightAxis(gettext("output tokens"))
    });

    return {
      add: h.stepAdder(steps),
      draw: function () {
        c.data.labels = steps.map(label);
        c.data.datasets = [
          h.dataset(gettext("step time, s"), "#1e88e5", "y", { data: steps.map(function (r) { return h.orNull(r.step_s); }) }),
          h.dataset(gettext("output tokens"), "rgba(67, 160, 71, 0.55)", "tokens", {
            type: "bar", pointStyle: "rect", data: steps.map(function (r) { return h.orNull(r.output_tokens); })
          })
        ];
        c.update("none");
        h.markPoints(canvas, steps.length);
      },
      applyRun: function (run) {
        var s = run.summary || {};
        if (s.outcome === undefined) return;
        h.fillRows(h.tbodyOf("job-summary"), summaryRows(s), true);
      }
    };
  }

  window.RunCharts.register("agent-table", agentView);
})();
