/* The replay run: each recorded request's decode speed and E2E (medians over passes) with the
 * roofline ceiling, the generation time of each pass, and the totals and per-request tables.
 * Registers itself as the "replay" view of RunCharts.
 */
(function () {
  "use strict";
  var h = window.RunCharts.helpers;

  function generationS(v) {
    var tps = v.decode_tps_client || v.decode_tps_engine;
    return tps && v.output_tokens ? v.output_tokens / tps : null;
  }

  function totalsRows(s) {
    return [
      [gettext("recorded requests"), h.value(s.requests, "", 0)],
      [pgettext("replay passes", "passes"), h.value(s.reps, "", 0)],
      [gettext("wall time per pass"), h.spread(s.wall_s, "s", 2, 1, undefined, "passes")],
      [gettext("generation time per pass"), h.spread(s.generation_s, "s", 2, 1, gettext("unknown: some request has no decode speed"), "passes")],
      [gettext("output tokens per pass"), h.spread(s.output_tokens, gettext("tokens"), 0, 1, undefined, "passes")]
    ];
  }

  function requestRow(r) {
    return ["#" + (r.index + 1), h.value(r.decode_tps, "tok/s", 1), h.value(r.e2e_s, "s", 2),
      h.value(r.ttft_s, "s", 3), h.value(r.ttft_engine_s, "s", 3), h.value(r.output_tokens, "", 0),
      h.value(r.generation_s, "s", 2), h.value(r.finish_reason, "", 0)];
  }

  function add(s, sample) {
    var v = sample.values || {};
    if (sample.kind !== "request" || v.index === undefined) return false;
    var at = s.byIndex[v.index] = s.byIndex[v.index] || { tps: [], e2e: [] };
    at.tps.push(v.decode_tps_client || h.orNull(v.decode_tps_engine));
    at.e2e.push(h.orNull(v.e2e_s));
    s.perPass[v.rep] = (s.perPass[v.rep] || 0) + (generationS(v) || 0);
    return true;
  }

  function drawRequests(s, ceiling) {
    var indexes = [];
    s.byIndex.forEach(function (at, i) { if (at) indexes.push(i); });
    s.requests.data.labels = indexes.map(function (i) { return "#" + (i + 1); });
    s.requests.data.datasets = [
      h.dataset(gettext("decode (median over passes), tok/s"), "#1e88e5", "y", {
        data: indexes.map(function (i) { return h.median(s.byIndex[i].tps); }), pointRadius: 4
      }),
      h.dataset(gettext("E2E (median over passes), s"), "#e53935", "e2e", {
        data: indexes.map(function (i) { return h.median(s.byIndex[i].e2e); }), borderDash: [5, 3],
        pointStyle: "rect", pointRadius: 4
      })
    ];
    h.setCeiling(s.requests, ceiling, "y");
    s.requests.update("none");
    h.markPoints(s.canvas, indexes.length);
  }

  function drawPasses(s) {
    var reps = Object.keys(s.perPass);
    s.passes.data.labels = reps.map(function (r) { return interpolate(gettext("pass %(n)s"), { n: Number(r) + 1 }, true); });
    s.passes.data.datasets = [h.dataset(gettext("generation time (output tokens / decode speed, summed), s"), "#00897b", "y", {
      data: reps.map(function (r) { return s.perPass[r]; }), borderWidth: 0, pointStyle: "rect"
    })];
    s.passes.update("none");
    h.markPoints(s.passCanvas, reps.length);
  }

  function replayView() {
    var canvas = document.getElementById("replay-chart");
    var passCanvas = document.getElementById("passes-chart");
    var s = {
      canvas: canvas, passCanvas: passCanvas,
      byIndex: [],  // index -> {tps: [], e2e: []}
      perPass: [],  // rep -> generation seconds so far
      requests: h.chart(canvas, gettext("recorded request"), [], {
        y: h.axis(gettext("decode (tok/s)")), e2e: h.rightAxis(gettext("E2E (s)"))
      }),
      passes: h.chart(passCanvas, pgettext("a replay pass", "pass"), [], { y: h.axis(gettext("generation time (s)")) }, "bar")
    };
    var ceiling = null;
    function draw() { drawRequests(s, ceiling); drawPasses(s); }
    return {
      add: function (sample) { return add(s, sample); },
      draw: draw,
      applyRun: function (run) {
        var summary = run.summary || {};
        if (summary.per_request) {
          h.fillRows(h.tbodyOf("job-totals"), totalsRows(summary), true);
          h.fillRows(h.tbodyOf("job-summary"), summary.per_request.map(requestRow));
        }
        var next = h.ceilingOf(run);
        if (next !== ceiling) { ceiling = next; draw(); }
      }
    };
  }

  window.RunCharts.register("replay", replayView);
})();
