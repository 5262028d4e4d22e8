/* The speed run: decode speed (client and engine) and TTFT per request with the roofline
 * ceiling, acceptance per request, and the summary tables (overall, by output type, roofline).
 * Registers itself as the "speed" view of RunCharts.
 */
(function () {
  "use strict";
  var h = window.RunCharts.helpers;
  var NOT_EXPOSED = window.RunCharts.NOT_EXPOSED;
  // Beyond this many points a line chart drops its point markers: they hide the line and cost the most to draw.
  var MARKED_POINTS = 300;

  /** The summary figure of `key` in `summary`, formatted as the page's metrics table says. */
  function figurer() {
    var metricByKey = {};
    JSON.parse(document.getElementById("summary-metrics").textContent).forEach(function (m) {
      metricByKey[m.key] = m;
    });
    return function figure(summary, key) {
      var m = metricByKey[key];
      var title = summary && key in summary ? NOT_EXPOSED : "no data yet";
      return h.spread(summary ? summary[key] : undefined, m.unit, m.digits, m.scale, title);
    };
  }

  function renderRoofline(run) {
    var r = h.rooflineOf(run);
    var td = document.getElementById("roofline");
    if (!r || !td) return;
    var text = "ceiling " + r.ceiling_tps.toFixed(1) + " tok/s (" + r.bandwidth_gbps + " GB/s \u00f7 " +
      (r.bytes_per_token / 1e9).toFixed(2) + " GB per token, " + r.bytes_source + ")";
    if (r.efficiency !== null && r.efficiency !== undefined) {
      text += "; measured " + r.measured_tps.toFixed(1) + " tok/s = " + (100 * r.efficiency).toFixed(0) +
        " % efficiency";
    }
    td.replaceChildren(document.createTextNode(text));
  }

  function renderTables(run, figure) {
    document.querySelectorAll("[data-metric]").forEach(function (td) {
      td.replaceChildren(figure(run.summary, td.getAttribute("data-metric")));
    });
    var byType = run.summary && run.summary.by_output_type;
    if (byType && Object.keys(byType).length) {
      h.fillRows(document.getElementById("by-type"), Object.keys(byType).sort().map(function (t) {
        return [t, figure(byType[t], "decode_tps_client"), figure(byType[t], "acceptance_rate")];
      }));
    }
    renderRoofline(run);
  }

  /** The two charts and the arrays their datasets keep across draws. */
  function charts() {
    var s = { decode: [], engine: [], ttft: [], acceptance: [], numbers: [] };
    s.speedCanvas = document.getElementById("speed-chart");
    s.acceptanceCanvas = document.getElementById("acceptance-chart");
    s.speed = h.chart(s.speedCanvas, "request", [], { y: h.axis("decode (tok/s)"), ttft: h.rightAxis("TTFT (s)") });
    s.accept = h.chart(s.acceptanceCanvas, "request", [], { y: h.axis("acceptance (%)", { min: 0, max: 100 }) });
    s.speedSets = [
      h.dataset("decode (client), tok/s", "#1e88e5", "y", { data: s.decode }),
      h.dataset("decode (engine), tok/s", "#43a047", "y", { data: s.engine, borderDash: [5, 3] }),
      h.dataset("TTFT, s", "#e53935", "ttft", { data: s.ttft })
    ];
    s.acceptSets = [h.dataset("acceptance rate, %", "#8e24aa", "y", { data: s.acceptance })];
    s.speed.data.labels = s.numbers;
    s.speed.data.datasets = s.speedSets.slice();
    s.accept.data.labels = s.numbers;
    s.accept.data.datasets = s.acceptSets;
    return s;
  }

  function add(s, sample) {
    if (sample.kind !== "request") return false;
    var v = sample.values || {};
    // A thinned series (a long run's stored samples) numbers its requests ("n"); live ones follow on.
    s.numbers.push(sample.n || (s.numbers.length ? s.numbers[s.numbers.length - 1] + 1 : 1));
    s.decode.push(h.orNull(v.decode_tps_client));
    s.engine.push(h.orNull(v.decode_tps_engine));
    s.ttft.push(h.orNull(v.ttft_s));
    s.acceptance.push(h.percent(v.acceptance_rate));
    return true;
  }

  function draw(s, ceiling) {
    // The datasets keep their arrays across draws (Chart.js follows the pushes); building new
    // datasets each time made Chart.js rebuild every point's element on every live sample.
    var n = s.numbers.length, radius = n > MARKED_POINTS ? 0 : 2;
    s.speedSets.concat(s.acceptSets).forEach(function (d) { d.pointRadius = radius; });
    h.setCeiling(s.speed, ceiling, "y");
    s.speed.update("none");
    s.accept.update("none");
    h.markPoints(s.speedCanvas, n);
    h.markPoints(s.acceptanceCanvas, n);
  }

  function speedView() {
    var figure = figurer();
    var s = charts();
    var ceiling = null;
    return {
      add: function (sample) { return add(s, sample); },
      draw: function () { draw(s, ceiling); },
      applyRun: function (run) {
        renderTables(run, figure);
        var next = h.ceilingOf(run);
        if (next !== ceiling) { ceiling = next; draw(s, ceiling); }
      }
    };
  }

  window.RunCharts.register("speed", speedView);
})();
