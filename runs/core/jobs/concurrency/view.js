/* The concurrency sweep: the box's total tok/s and each answer's time to finish per level, a
 * summary row per level (with its J per output token, from summary.telemetry.energy.by_concurrency
 * once the run has finished; "—" with the energy note where no power was read) and the scaling line. Registers itself as the "concurrency" view of RunCharts.
 */
(function () {
  "use strict";
  var h = window.RunCharts.helpers;

  function take(s, level) {
    h.addSorted(s.levels, level.concurrency);
    s.byLevel[level.concurrency] = level;
  }

  function med(s, n, key) { return s.byLevel[n] && s.byLevel[n][key] ? s.byLevel[n][key].median : null; }

  function scalingLine(summary) {
    var text = gettext("%(from)s \u2192 %(to)s requests at once: %(scaling)s\u00d7 the total tok/s, each answer takes %(ratio)s\u00d7 as long (%(tokens)s-token answers).");
    return interpolate(text, {
      from: summary.baseline, to: summary.max_concurrency, scaling: SparkFormat.number(summary.scaling, 2),
      ratio: SparkFormat.number(summary.finish_s_ratio, 2), tokens: summary.answer_tokens
    }, true);
  }

  /** A level's J per output token: a value, or "—" titled with why there is none. */
  function energyCell(summary, n) {
    var telemetry = (summary && summary.telemetry) || {};
    var level = telemetry.energy && (telemetry.energy.by_concurrency || {})[String(n)];
    if (level && level.j_per_token !== null && level.j_per_token !== undefined) {
      return h.value(level.j_per_token, h.metric("j_per_token").unit, h.metric("j_per_token").digits);
    }
    return h.missing(gettext(telemetry.energy_note || "no energy reading for this level"));
  }

  function renderTable(s, summary) {
    var done = s.levels.filter(function (n) { return s.byLevel[n]; });
    if (summary) s.summary = summary;
    h.fillRows(h.tbodyOf("job-summary"), done.map(function (n) {
      var l = s.byLevel[n];
      return [String(n), h.figure(l.total_tps, "total_tps", undefined, "bursts"), h.figure(l.finish_s, "finish_s"),
        h.figure(l.ttft_s, "ttft_s"), h.figure(l.decode_tps_client, "decode_tps_client"),
        interpolate(gettext("%(short)s of %(n)s"), { short: l.short_answers, n: l.requests }, true), energyCell(s.summary, n)];
    }), true);
    var line = document.getElementById("scaling");
    if (summary && summary.scaling && line) line.textContent = scalingLine(summary);
  }

  function draw(s) {
    s.chart.data.labels = s.levels.map(String);
    s.chart.data.datasets = [
      h.dataset(gettext("total of the box, tok/s"), "#1e88e5", "y", {
        data: s.levels.map(function (n) { return med(s, n, "total_tps"); }), pointRadius: 4
      }),
      h.dataset(gettext("time to finish per answer (median), s"), "#e53935", "finish", {
        data: s.levels.map(function (n) { return med(s, n, "finish_s"); }), borderDash: [5, 3],
        pointStyle: "rect", pointRadius: 4
      })
    ];
    s.chart.update("none");
    h.markPoints(s.canvas, s.levels.filter(function (n) { return s.byLevel[n]; }).length);
    renderTable(s, null);
  }

  function concurrencyView(run) {
    var canvas = document.getElementById("concurrency-chart");
    var s = {
      canvas: canvas, byLevel: {},  // concurrency -> summarize_level(...) of that level
      levels: ((run.params && run.params.levels) || []).slice(),
      chart: h.chart(canvas, gettext("requests at once"), [], {
        y: h.axis(gettext("total (tok/s)")), finish: h.rightAxis(gettext("time to finish (s)"))
      })
    };
    return {
      add: function (sample) {
        if (sample.kind !== "level" || !sample.values) return false;
        take(s, sample.values);
        return true;
      },
      draw: function () { draw(s); },
      applyRun: function (run) {
        var summary = run.summary || {};
        if (!summary.levels) return;
        Object.keys(summary.levels).forEach(function (k) { take(s, summary.levels[k]); });
        draw(s);
        renderTable(s, summary);
      }
    };
  }

  window.RunCharts.register("concurrency", concurrencyView);
})();
