/* The run page's chart and table helpers, and the registry of job views (run_detail.js feeds them).
 *
 * Each job's view lives in its folder, runs/core/jobs/<kind>/view.js (served as js/jobs/<job>.js), and registers itself:
 * RunCharts.register("speed", function view(run) {...}). A view has add(sample) (true when the
 * sample changed a chart), draw() (update("none"), then data-points on the job's charts: x
 * points drawn) and applyRun(run) (summary tables once the run has ended). Figures are
 * formatted by format.js (SparkFormat), as runs/templatetags/run_format.py writes them. The
 * acceptance-by-position chart is shared: drawn live from request samples, then from the summary.
 */
window.RunCharts = (function () {
  "use strict";

  var DASH = "\u2014";
  var NOT_EXPOSED = gettext("not exposed by this engine");
  var NOT_YET = gettext("no data yet");
  var TYPE_COLORS = { "tool-call": "#1e88e5", table: "#43a047", "prose-en": "#fb8c00", "prose-ja": "#8e24aa" };
  var SPARE_COLORS = ["#00897b", "#6d4c41", "#c0ca33", "#5e35b1"];
  var CEILING_COLOR = "#455a64";
  var VIEWS = {};

  // ---- numbers and table cells ----

  function present(values) { return values.filter(function (v) { return v !== null && v !== undefined; }); }

  function median(values) {
    var v = present(values).slice().sort(function (a, b) { return a - b; });
    if (!v.length) return null;
    var mid = Math.floor(v.length / 2);
    return v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
  }

  function orNull(value) { return value === undefined ? null : value; }

  /** A 0..1 fraction as a percentage; null stays null. */
  function percent(fraction) { return fraction === null || fraction === undefined ? null : fraction * 100; }

  function missing(title) {
    var span = document.createElement("span");
    span.className = "missing";
    span.title = title || NOT_YET;
    span.textContent = DASH;
    return span;
  }

  function text(content) {
    var span = document.createElement("span");
    span.textContent = content;
    return span;
  }

  /** A spread as a span, its interval and percentiles in its hover (`counted`: what n counts, default
   * requests); "—" (with why) when there is none. */
  function spread(stats, unit, digits, scale, absentTitle, counted) {
    if (!stats) return missing(absentTitle);
    var span = text(SparkFormat.spread(stats, unit, digits, scale));
    var more = SparkFormat.interval(stats, unit, digits, scale, counted);
    if (more) span.title = more;
    return span;
  }

  /** A spread with its interval and percentiles on a small line below it (the run's summary table). */
  function spreadWithInterval(stats, unit, digits, scale, absentTitle) {
    var span = spread(stats, unit, digits, scale, absentTitle);
    if (!stats || !span.title) return span;
    var both = document.createElement("span");
    var small = document.createElement("small");
    small.className = "interval";
    small.textContent = span.title;
    span.removeAttribute("title");
    both.append(span, document.createElement("br"), small);
    return both;
  }

  /** While the run goes, the run with its summary so far (sent with each update, no intervals) in
   * place of its summary, which is empty until the end, and the page's note saying so shown; the
   * run itself once its summary is in. */
  function soFar(run) {
    var note = document.getElementById("summary-so-far");
    var provisional = !(run.summary && Object.keys(run.summary).length) && run.summary_so_far;
    if (note) {
      note.hidden = !provisional;
      if (provisional) {
        note.textContent = interpolate(gettext("So far: %(n)s of %(total)s requests, provisional and without intervals; the final figures replace these when the run ends."), {
          n: run.progress.done, total: run.progress.total
        }, true);
      }
    }
    return provisional ? Object.assign({}, run, { summary: run.summary_so_far }) : run;
  }

  var CATALOG = null;

  /** A catalogue metric's declaration (measure.catalog, rendered into the page as "metric-catalog"). */
  function metric(key) {
    if (!CATALOG) {
      CATALOG = {};
      var node = document.getElementById("metric-catalog");
      JSON.parse(node ? node.textContent : "[]").forEach(function (m) { CATALOG[m.key] = m; });
    }
    if (!CATALOG[key]) throw new Error("metric " + key + " is not in the page's catalogue");
    return CATALOG[key];
  }

  /** A catalogue metric's spread (or pooled figure), in its declared unit, digits and scale. */
  function figure(stats, key, absentTitle, counted) {
    var m = metric(key);
    return spread(stats, m.unit, m.digits, m.scale, absentTitle, counted);
  }

  function value(v, unit, digits) {
    return v === null || v === undefined ? missing(NOT_EXPOSED) : text(SparkFormat.value(v, unit, digits));
  }

  function cell(tag, content) {
    var td = document.createElement(tag);
    if (content === null || content === undefined) td.appendChild(missing());
    else if (typeof content === "string") td.textContent = content;
    else td.appendChild(content);
    return td;
  }

  /** Replace a tbody's rows; each row is a list of cells (strings or nodes), first one a th. */
  function fillRows(tbody, rows, headerFirst) {
    if (!tbody || !rows.length) return;
    tbody.replaceChildren();
    rows.forEach(function (cells) {
      var tr = document.createElement("tr");
      cells.forEach(function (c, i) { tr.appendChild(cell(headerFirst && i === 0 ? "th" : "td", c)); });
      tbody.appendChild(tr);
    });
  }

  function tbodyOf(id) {
    var table = document.getElementById(id);
    return table ? table.tBodies[0] : null;
  }

  // ---- charts ----

  function merged(base, extra) {
    Object.keys(extra || {}).forEach(function (k) { base[k] = extra[k]; });
    return base;
  }

  function dataset(label, color, axis, extra) {
    return merged({
      label: label, data: [], yAxisID: axis, borderColor: color, backgroundColor: color,
      borderWidth: 1.5, pointRadius: 3, tension: 0, spanGaps: false
    }, extra);
  }

  function axis(title, extra) {
    return merged({ beginAtZero: true, title: { display: true, text: title } }, extra);
  }

  function rightAxis(title, extra) {
    return merged(axis(title, { position: "right", grid: { drawOnChartArea: false } }), extra);
  }

  function chart(canvas, xTitle, datasets, scales, type) {
    scales.x = { title: { display: true, text: xTitle }, ticks: { maxTicksLimit: 24 } };
    return new Chart(canvas, {
      type: type || "line",
      data: { labels: [], datasets: datasets },
      options: {
        animation: false, responsive: true, maintainAspectRatio: false,
        interaction: { mode: "index", intersect: false }, scales: scales,
        // Each legend entry shows its dataset's point style: circle, triangle, rect (bars), line (ceiling).
        plugins: { legend: { labels: { usePointStyle: true, boxHeight: 7 } } }
      }
    });
  }

  function rooflineOf(run) {
    return (run.summary && run.summary.roofline) || (run.provenance && run.provenance.roofline) || null;
  }

  function ceilingOf(run) {
    var r = rooflineOf(run);
    return r && r.ceiling_tps ? r.ceiling_tps : null;
  }

  function ceilingLine(ceiling, yAxis) {
    var label = interpolate(gettext("roofline ceiling %(tps)s tok/s"), { tps: SparkFormat.number(ceiling, 1) }, true);
    return dataset(label, CEILING_COLOR, yAxis || "y", {
      isCeiling: true, ceiling: ceiling, borderDash: [8, 4], borderWidth: 2, pointRadius: 0,
      pointHitRadius: 0, pointStyle: "line"
    });
  }

  /** The roofline ceiling as a dashed horizontal line on the decode axis (removed when unknown). */
  function setCeiling(c, ceiling, yAxis) {
    var old = c.data.datasets.filter(function (d) { return d.isCeiling; })[0];
    var sets = c.data.datasets.filter(function (d) { return !d.isCeiling; });
    if (ceiling !== null) {
      // The same line is kept while the ceiling holds, so a live chart only adds its new points.
      var line = old && old.ceiling === ceiling ? old : ceilingLine(ceiling, yAxis);
      line.data.length = Math.min(line.data.length, c.data.labels.length);
      while (line.data.length < c.data.labels.length) line.data.push(ceiling);
      sets.push(line);
    }
    c.data.datasets = sets;
  }

  function markPoints(canvas, n) { canvas.setAttribute("data-points", String(n)); }

  // A view's `add` for jobs that sample per step: keeps the steps in step order, whatever the arrival order.
  function stepAdder(steps) {
    return function (sample) {
      if (sample.kind !== "step" || !sample.values) return false;
      steps.push(sample.values);
      steps.sort(function (a, b) { return a.step - b.step; });
      return true;
    };
  }

  function typeColor(outputType, index) {
    return TYPE_COLORS[outputType] || SPARE_COLORS[index % SPARE_COLORS.length];
  }

  /** Insert `x` into the sorted number list `list` unless it is there already. */
  function addSorted(list, x) {
    if (list.indexOf(x) === -1) { list.push(x); list.sort(function (a, b) { return a - b; }); }
  }

  // ---- acceptance by draft position (speed.js, lookahead.js; docs/metrics.md, Per-position acceptance) ----

  var POSITION_COLORS = ["#1e88e5", "#43a047", "#fb8c00", "#8e24aa", "#00897b", "#e53935", "#6d4c41", "#5e35b1"];
  var NO_POSITIONS = gettext("not exposed by this engine (Ollama), or no drafting");

  function seriesColor(index) { return POSITION_COLORS[index % POSITION_COLORS.length]; }

  /** Per series key: drafts whose i-th token was accepted, and drafts, summed over request samples. */
  function positionTally() {
    var byKey = {};
    return {
      /** One request's counts; false when it has none (its engine gives no per-request counts). */
      add: function (key, accepted, drafts) {
        if (!accepted || !accepted.length || !drafts) return false;
        var at = byKey[key] = byKey[key] || { accepted: [], drafts: 0 };
        accepted.forEach(function (n, i) { at.accepted[i] = (at.accepted[i] || 0) + n; });
        at.drafts += drafts;
        return true;
      },
      /** Key -> acceptance at each position (0..1), as runs/core/request_figures.py sums a run's rows. */
      rates: function () {
        var out = {};
        Object.keys(byKey).forEach(function (k) {
          out[k] = byKey[k].accepted.map(function (n) { return n / byKey[k].drafts; });
        });
        return out;
      }
    };
  }

  function positionLabel(ctx) { return ctx.dataset.label + ": " + SparkFormat.number(ctx.parsed.y, 1) + " %"; }

  /** The "acceptance by draft position" bars (#positions-chart, x: position 1..k, y: %), and its note. */
  function positionChart() {
    var canvas = document.getElementById("positions-chart");
    var note = document.getElementById("positions-note");
    var y = axis(gettext("drafts accepted at the position (%)"), { min: 0, max: 100 });
    var c = chart(canvas, gettext("draft position"), [], { y: y }, "bar");
    c.options.plugins.tooltip = { callbacks: { label: positionLabel } };
    var settled = false;

    // series: [{label, color, rates: [0..1 per position]}]; `why` shows when there is none.
    function show(series, why) {
      var k = series.reduce(function (most, s) { return Math.max(most, s.rates.length); }, 0);
      c.data.labels = Array.from({ length: k }, function (_, i) { return String(i + 1); });
      c.data.datasets = series.map(function (s) {
        return dataset(s.label, s.color, "y", { data: s.rates.map(percent), borderWidth: 0, pointStyle: "rect" });
      });
      c.update("none");
      markPoints(canvas, k);
      canvas.parentNode.hidden = !k;
      note.hidden = k > 0;
      note.textContent = k ? "" : why;
    }

    return {
      /** From the samples so far; ignored once the run's summary has been drawn. */
      live: function (series) { if (!settled) show(series, NOT_YET); },
      /** From the run's summary, the final figures. */
      settle: function (series) { settled = true; show(series, NO_POSITIONS); }
    };
  }

  // ---- a running score per question (the quality jobs: mmlu-pro.js, evalplus.js) ----

  /** A view factory: spec.lines [label, sample field, color] plotted in %, spec.row(q) the table's cells. */
  function scoreView(spec) {
    return function () {
      var canvas = document.getElementById("quality-chart");
      var rows = [];
      var c = chart(canvas, gettext("questions answered"), [], { y: axis(gettext("score (%)"), { max: 100 }) });

      function tableRow(r) {
        var seconds = r.seconds !== undefined ? r.seconds : r.generation_s;
        return [String(r.done)].concat(spec.row(r), [value(seconds, "s", 1)]);
      }

      function draw() {
        c.data.labels = rows.map(function (r) { return r.done; });
        c.data.datasets = spec.lines.map(function (line) {
          return dataset(line[0], line[2], "y", { data: rows.map(function (r) { return 100 * r[line[1]]; }) });
        });
        c.update("none");
        markPoints(canvas, rows.length);
        fillRows(tbodyOf("job-summary"), rows.map(tableRow));
      }

      return {
        add: function (sample) {
          if (sample.kind !== "question" || !sample.values) return false;
          rows.push(sample.values);
          return true;
        },
        draw: draw,
        applyRun: function () {}
      };
    };
  }

  // ---- the registry ----

  // A page whose job has no view still shows its status, progress and provenance.
  var NO_VIEW = { add: function () { return false; }, draw: function () {}, applyRun: function () {} };

  function create(job, run) {
    if (!VIEWS[job]) {
      console.error("no run view registered for job " + job);
      return NO_VIEW;
    }
    return VIEWS[job](run);
  }

  return {
    create: create,
    register: function (job, view) { VIEWS[job] = view; },
    NOT_EXPOSED: NOT_EXPOSED,
    helpers: {
      chart: chart, axis: axis, rightAxis: rightAxis, dataset: dataset, markPoints: markPoints,
      setCeiling: setCeiling, ceilingOf: ceilingOf, rooflineOf: rooflineOf, typeColor: typeColor,
      fillRows: fillRows, tbodyOf: tbodyOf, missing: missing, spread: spread, spreadWithInterval: spreadWithInterval, value: value,
      metric: metric, figure: figure,
      orNull: orNull, percent: percent, median: median, addSorted: addSorted, scoreView: scoreView,
      stepAdder: stepAdder, seriesColor: seriesColor, positionTally: positionTally, positionChart: positionChart,
      soFar: soFar
    }
  };
})();
