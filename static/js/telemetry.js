/* The run page's hardware telemetry chart, every job: "telemetry" samples (10 Hz) over run time.
 *
 * Lines: CPU load (%) and host memory used (GB) always; GPU power (W), SM clock (MHz) and GPU
 * temperature (°C) where the samples hold them. The run's phases before the job (load,
 * baseline, preheat) are shaded grey with their name, throttled spans (a non-empty `throttle`
 * list) red with their reasons. Fed by run_detail.js like a job's view (add, draw, applyRun);
 * when the run's summary brings its telemetry, the Telemetry table is read again from the page.
 * Test hooks on #telemetry-chart: data-points (readings drawn), data-throttle-spans, data-phases.
 */
window.RunTelemetry = (function () {
  "use strict";

  var PHASE_FILL = "rgba(120, 120, 120, 0.12)";
  var THROTTLE_FILL = "rgba(229, 57, 53, 0.18)";
  var MARKED_POINTS = 300;
  // [label, value of a sample's values (null when absent), color, axis]
  var LINES = [
    [gettext("CPU load, %"), function (v) { return v.cpu_load === undefined ? null : 100 * v.cpu_load; }, "#1e88e5", "y"],
    [gettext("host memory used, GB"), function (v) { return scaled(v.mem_used_bytes, 1e-9); }, "#43a047", "gb"],
    [gettext("GPU power, W"), function (v) { return scaled(v.power_w, 1); }, "#fb8c00", "w"],
    [gettext("SM clock, MHz"), function (v) { return scaled(v.sm_clock_mhz, 1); }, "#8e24aa", "mhz"],
    [gettext("GPU temperature, \u00b0C"), function (v) { return scaled(v.temperature_c, 1); }, "#e53935", "y"]
  ];
  // The phases' names on the chart; data-phases keeps the phase keys.
  var PHASE_TEXT = { load: gettext("load"), baseline: gettext("baseline"), preheat: gettext("preheat"),
                     done: pgettext("telemetry phase", "done") };
  var CPU_AXIS = gettext("CPU load (%)");
  var CPU_AND_TEMPERATURE_AXIS = gettext("CPU load (%) \u00b7 temperature (\u00b0C)");

  function scaled(x, factor) { return x === undefined || x === null ? null : x * factor; }

  /** Runs of consecutive readings with the same key: [{key, from, to}] in run time. */
  function spans(points, keyOf) {
    var out = [];
    points.forEach(function (p, i) {
      var key = keyOf(p), last = out[out.length - 1];
      var next = points[i + 1] ? points[i + 1].t : p.t;
      if (last && last.key === key) last.to = next;
      else out.push({ key: key, from: p.t, to: next });
    });
    return out;
  }

  function phaseSpans(points) {
    return spans(points, function (p) { return p.phase || "job"; }).filter(function (s) { return s.key !== "job"; });
  }

  function throttleSpans(points) {
    return spans(points, function (p) { return p.throttle.join(", "); }).filter(function (s) { return s.key; });
  }

  function pixels(chart, span) {
    var x = chart.scales.x, area = chart.chartArea;
    var left = Math.max(x.getPixelForValue(span.from), area.left);
    var right = Math.min(x.getPixelForValue(span.to), area.right);
    return { left: left, right: Math.max(right, left + 2) };  // a single reading still shows
  }

  function shade(chart, span, fill) {
    var at = pixels(chart, span), area = chart.chartArea;
    chart.ctx.fillStyle = fill;
    chart.ctx.fillRect(at.left, area.top, at.right - at.left, area.bottom - area.top);
  }

  // Over the lines, on a white box: the lines would hide a label drawn under them.
  function label(chart, span, text) {
    var ctx = chart.ctx, left = pixels(chart, span).left + 3, top = chart.chartArea.top + 3;
    ctx.font = "11px sans-serif";
    ctx.fillStyle = "rgba(255, 255, 255, 0.85)";
    ctx.fillRect(left - 2, top, ctx.measureText(text).width + 4, 14);
    ctx.fillStyle = "#333";
    ctx.fillText(text, left, top + 11);
  }

  function eachSpan(state, draw) {
    phaseSpans(state.points).forEach(function (s) { draw(s, PHASE_FILL, PHASE_TEXT[s.key] || s.key); });
    throttleSpans(state.points).forEach(function (s) {
      draw(s, THROTTLE_FILL, interpolate(gettext("throttled: %(reasons)s"), { reasons: s.key }, true));
    });
  }

  /** A Chart.js plugin: the phase and throttle spans shaded under the lines, their names over them. */
  function spanPlugin(state) {
    function around(chart, draw) {
      chart.ctx.save();
      eachSpan(state, draw);
      chart.ctx.restore();
    }
    return {
      id: "telemetrySpans",
      beforeDatasetsDraw: function (chart) { around(chart, function (s, fill) { shade(chart, s, fill); }); },
      afterDatasetsDraw: function (chart) { around(chart, function (s, _, text) { label(chart, s, text); }); }
    };
  }

  function axes(h) {
    // Room above the highest reading for the span names; an axis without a line is left out.
    var hidden = { display: "auto", grace: "15%" };
    return {
      x: { type: "linear", title: { display: true, text: gettext("run time (s)") }, ticks: { maxTicksLimit: 24 } },
      y: h.axis(CPU_AND_TEMPERATURE_AXIS, hidden),
      gb: h.rightAxis(gettext("memory (GB)"), hidden),
      w: h.rightAxis(gettext("power (W)"), hidden),
      mhz: h.rightAxis(gettext("clock (MHz)"), hidden)
    };
  }

  function newChart(canvas, state) {
    var h = window.RunCharts.helpers;
    state.sets = LINES.map(function (line) {
      return h.dataset(line[0], line[2], line[3], { data: [], pointRadius: 0 });
    });
    return new Chart(canvas, {
      type: "line",
      data: { datasets: [] },
      options: {
        animation: false, responsive: true, maintainAspectRatio: false, parsing: true,
        interaction: { mode: "nearest", axis: "x", intersect: false }, scales: axes(h),
        plugins: { legend: { labels: { usePointStyle: true, boxHeight: 7 } } }
      },
      plugins: [spanPlugin(state)]
    });
  }

  /** The datasets whose field some reading holds (the GPU lines only on a machine that reads a GPU). */
  function present(state) {
    return state.sets.filter(function (d) { return d.data.some(function (p) { return p.y !== null; }); });
  }

  function draw(state) {
    var n = state.points.length;
    state.chart.data.datasets = present(state);
    var hot = state.chart.data.datasets.indexOf(state.sets[4]) !== -1;
    state.chart.options.scales.y.title.text = hot ? CPU_AND_TEMPERATURE_AXIS : CPU_AXIS;
    state.chart.data.datasets.forEach(function (d) { d.pointRadius = n > MARKED_POINTS ? 0 : 2; });
    state.chart.update("none");
    state.canvas.setAttribute("data-points", String(n));
    state.canvas.setAttribute("data-throttle-spans", String(throttleSpans(state.points).length));
    state.canvas.setAttribute("data-phases", phaseSpans(state.points).map(function (s) { return s.key; }).join(","));
    state.note.hidden = n > 0;
  }

  function add(state, sample) {
    if (sample.kind !== "telemetry" || !sample.values) return false;
    var v = sample.values;
    state.points.push({ t: sample.t, phase: v.phase, throttle: v.throttle || [] });
    LINES.forEach(function (line, i) { state.sets[i].data.push({ x: sample.t, y: line[1](v) }); });
    return true;
  }

  /** Read the Telemetry table again from the page once the run's summary holds its telemetry. */
  function refreshTable(run) {
    var table = document.getElementById("telemetry-summary");
    if (!table || table.getAttribute("data-pending") !== "1") return;
    if (!run.summary || !run.summary.telemetry) return;
    table.setAttribute("data-pending", "loading");
    fetch(location.href, { credentials: "same-origin" })
      .then(function (response) { return response.text(); })
      .then(function (html) {
        var fresh = new DOMParser().parseFromString(html, "text/html").getElementById("telemetry-summary");
        if (fresh) table.replaceWith(fresh);
      })
      .catch(function () { table.setAttribute("data-pending", "1"); });
  }

  function create() {
    var canvas = document.getElementById("telemetry-chart");
    if (!canvas) return null;
    var state = { canvas: canvas, note: document.getElementById("telemetry-note"), points: [] };
    state.chart = newChart(canvas, state);
    return {
      add: function (sample) { return add(state, sample); },
      draw: function () { draw(state); },
      applyRun: refreshTable
    };
  }

  return { create: create };
})();
