/* The agent API-table run: time and tokens per step (tool steps and the answer marked),
 * and the graded outcome. Registers itself as the "agent-table" view of RunCharts. */
(function () {
  "use strict";
  var h = window.RunCharts.helpers;

  function share(v) { return typeof v === "number" ? (v * 100).toFixed(1) + " %" : "—"; }

  function precision(s) {
    if (s.answer_rows === undefined) return share(s.precision);
    if (!s.answer_rows) return "— (no rows answered)";
    return share(s.precision) + " (" + s.score + " of " + s.answer_rows + " rows answered)";
  }

  // The watchdog's steps, in words: "noted at read 12 (step 12), tools withdrawn at read 20 (step 20)".
  function readLoop(s) {
    var loop = s.read_loop;
    if (!loop) return s.read_loop === undefined ? null : "none caught";
    var said = [];
    if (loop.noted_at_step) said.push("noted at read " + loop.note_at + " (step " + loop.noted_at_step + ")");
    if (loop.withdrawn_at_step) {
      said.push("tools withdrawn at read " + loop.withdraw_at + " (step " + loop.withdrawn_at_step + ")");
    }
    return loop.file + ": " + said.join(", ");
  }

  function label(r) { return r.tool ? [String(r.step), r.tool] : [String(r.step), "answer"]; }

  // Summaries stored before F1, precision and exact lack them: those rows show as not reported.
  function summaryRows(s) {
    return [
      ["outcome", s.outcome + (s.stop_reason ? " (" + s.stop_reason + ")" : "")],
      ["table F1", share(s.f1)],
      ["score (correct rows)", s.score + " / " + s.rows + (s.exact ? " (exact)" : "")],
      ["precision (correct of rows answered)", precision(s)],
      ["exact", s.exact === undefined ? null : (s.exact ? "yes" : "no")],
      ["steps", String(s.steps)], ["task time", h.value(s.task_s, "s", 1)],
      ["most reads of one file", String(s.max_reads)],
      ["read loop", readLoop(s)]
    ];
  }

  function agentView() {
    var canvas = document.getElementById("agent-chart");
    var steps = [];
    var c = h.chart(canvas, "step", [], { y: h.axis("step time (s)"), tokens: h.rightAxis("output tokens") });

    return {
      add: h.stepAdder(steps),
      draw: function () {
        c.data.labels = steps.map(label);
        c.data.datasets = [
          h.dataset("step time, s", "#1e88e5", "y", { data: steps.map(function (r) { return h.orNull(r.step_s); }) }),
          h.dataset("output tokens", "rgba(67, 160, 71, 0.55)", "tokens", {
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
