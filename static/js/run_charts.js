/* Charts and summary tables of the run page, one view per job (run_detail.js feeds them).
 *
 * RunCharts.create(job, run) returns a view with add(sample) (true when the sample changed a
 * chart), draw() (update("none"), then data-points on the job's main canvas: x points drawn)
 * and applyRun(run) (summary tables, roofline ceiling). Points are computed from the samples as
 * they arrive, so a chart grows live; the tables come from run.summary once the run has ended
 * (the concurrency table also from its "level" samples). Figures read "median [min–max] unit
 * (n=N)", as runs/templatetags/run_format.py writes them.
 */
window.RunCharts = (function () {
  "use strict";

  var EN_DASH = "\u2013";
  var DASH = "\u2014";
  var NOT_EXPOSED = "not exposed by this engine";
  var NOT_YET = "no data yet";
  var TYPE_COLORS = { "tool-call": "#1e88e5", table: "#43a047", "prose-en": "#fb8c00", "prose-ja": "#8e24aa" };
  var SPARE_COLORS = ["#00897b", "#6d4c41", "#c0ca33", "#5e35b1"];
  var CEILING_COLOR = "#455a64";
  // Beyond this many points a line chart drops its point markers: they hide the line and cost the most to draw.
  var MARKED_POINTS = 300;

  // ---- numbers and table cells ----

  function present(values) { return values.filter(function (v) { return v !== null && v !== undefined; }); }

  function median(values) {
    var v = present(values).slice().sort(function (a, b) { return a - b; });
    if (!v.length) return null;
    var mid = Math.floor(v.length / 2);
    return v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
  }

  function orNull(value) { return value === undefined ? null : value; }

  function missing(title) {
    var span = document.createElement("span");
    span.className = "missing";
    span.title = title || NOT_YET;
    span.textContent = DASH;
    return span;
  }

  /** A {median, min, max, n} spread as a span; "—" (with why) when there is none. */
  function spread(stats, unit, digits, scale, absentTitle) {
    if (!stats) return missing(absentTitle);
    var k = scale || 1;
    function num(v) { return (v * k).toFixed(digits); }
    var span = document.createElement("span");
    span.textContent = num(stats.median) + " [" + num(stats.min) + EN_DASH + num(stats.max) + "] " +
      unit + " (n=" + stats.n + ")";
    return span;
  }

  function value(v, unit, digits) {
    if (v === null || v === undefined) return missing(NOT_EXPOSED);
    var span = document.createElement("span");
    span.textContent = (typeof v === "number" ? v.toFixed(digits) : String(v)) + (unit ? " " + unit : "");
    return span;
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

  function dataset(label, color, axis, extra) {
    var d = {
      label: label, data: [], yAxisID: axis, borderColor: color, backgroundColor: color,
      borderWidth: 1.5, pointRadius: 3, tension: 0, spanGaps: false
    };
    Object.keys(extra || {}).forEach(function (k) { d[k] = extra[k]; });
    return d;
  }

  function axis(title, extra) {
    var a = { beginAtZero: true, title: { display: true, text: title } };
    Object.keys(extra || {}).forEach(function (k) { a[k] = extra[k]; });
    return a;
  }

  function rightAxis(title, extra) {
    var a = axis(title, { position: "right", grid: { drawOnChartArea: false } });
    Object.keys(extra || {}).forEach(function (k) { a[k] = extra[k]; });
    return a;
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

  function ceilingOf(run) {
    var r = (run.summary && run.summary.roofline) || (run.provenance && run.provenance.roofline);
    return r && r.ceiling_tps ? r.ceiling_tps : null;
  }

  /** The roofline ceiling as a dashed horizontal line on the decode axis (removed when unknown). */
  function setCeiling(c, ceiling, yAxis) {
    var old = c.data.datasets.filter(function (d) { return d.isCeiling; })[0];
    var sets = c.data.datasets.filter(function (d) { return !d.isCeiling; });
    if (ceiling !== null) {
      // The same line is kept while the ceiling holds, so a live chart only adds its new points.
      var line = old && old.ceiling === ceiling ? old : dataset(
        "roofline ceiling " + ceiling.toFixed(1) + " tok/s", CEILING_COLOR, yAxis || "y", {
          isCeiling: true, ceiling: ceiling, borderDash: [8, 4], borderWidth: 2, pointRadius: 0,
          pointHitRadius: 0, pointStyle: "line"
        });
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

  // ---- speed: per request ----

  function speedView() {
    var metrics = JSON.parse(document.getElementById("summary-metrics").textContent);
    var metricByKey = {};
    metrics.forEach(function (m) { metricByKey[m.key] = m; });
    var speedCanvas = document.getElementById("speed-chart");
    var acceptanceCanvas = document.getElementById("acceptance-chart");
    var decode = [], engine = [], ttft = [], acceptance = [], numbers = [];
    var ceiling = null;
    var speed = chart(speedCanvas, "request", [], {
      y: axis("decode (tok/s)"),
      ttft: rightAxis("TTFT (s)")
    });
    var accept = chart(acceptanceCanvas, "request", [], { y: axis("acceptance (%)", { min: 0, max: 100 }) });
    var speedSets = [
      dataset("decode (client), tok/s", "#1e88e5", "y", { data: decode }),
      dataset("decode (engine), tok/s", "#43a047", "y", { data: engine, borderDash: [5, 3] }),
      dataset("TTFT, s", "#e53935", "ttft", { data: ttft })
    ];
    var acceptSets = [dataset("acceptance rate, %", "#8e24aa", "y", { data: acceptance })];
    speed.data.labels = numbers;
    speed.data.datasets = speedSets.slice();
    accept.data.labels = numbers;
    accept.data.datasets = acceptSets;

    function figure(summary, key) {
      var m = metricByKey[key];
      var stats = summary ? summary[key] : undefined;
      var title = summary && key in summary ? NOT_EXPOSED : NOT_YET;
      return spread(stats, m.unit, m.digits, m.scale, title);
    }

    function renderRoofline(run) {
      var r = (run.summary && run.summary.roofline) || (run.provenance && run.provenance.roofline);
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

    return {
      add: function (sample) {
        if (sample.kind !== "request") return false;
        var v = sample.values || {};
        // A thinned series (a long run's stored samples) numbers its requests ("n"); live ones follow on.
        numbers.push(sample.n || (numbers.length ? numbers[numbers.length - 1] + 1 : 1));
        decode.push(orNull(v.decode_tps_client));
        engine.push(orNull(v.decode_tps_engine));
        ttft.push(orNull(v.ttft_s));
        acceptance.push(v.acceptance_rate === null || v.acceptance_rate === undefined ? null : v.acceptance_rate * 100);
        return true;
      },
      draw: function () {
        // The datasets keep their arrays across draws (Chart.js follows the pushes); building new
        // datasets each time made Chart.js rebuild every point's element on every live sample.
        var n = numbers.length, radius = n > MARKED_POINTS ? 0 : 2;
        speedSets.concat(acceptSets).forEach(function (d) { d.pointRadius = radius; });
        setCeiling(speed, ceiling, "y");
        speed.update("none");
        accept.update("none");
        markPoints(speedCanvas, n);
        markPoints(acceptanceCanvas, n);
      },
      applyRun: function (run) {
        document.querySelectorAll("[data-metric]").forEach(function (td) {
          td.replaceChildren(figure(run.summary, td.getAttribute("data-metric")));
        });
        var byType = run.summary && run.summary.by_output_type;
        if (byType && Object.keys(byType).length) {
          fillRows(document.getElementById("by-type"), Object.keys(byType).sort().map(function (t) {
            return [t, figure(byType[t], "decode_tps_client"), figure(byType[t], "acceptance_rate")];
          }));
        }
        renderRoofline(run);
        var next = ceilingOf(run);
        if (next !== ceiling) { ceiling = next; this.draw(); }
      }
    };
  }

  // ---- lookahead: per length and output type ----

  function lookaheadView(run) {
    var canvas = document.getElementById("lookahead-chart");
    var lengths = ((run.params && run.params.lengths) || []).slice();
    var byLength = {};  // length -> output type -> {tps: [], acc: []}
    var types = [];
    var ceiling = null;
    var c = chart(canvas, "lookahead (draft tokens per verification)", [], {
      y: axis("decode (tok/s)"),
      acc: rightAxis("acceptance (%)", { min: 0, max: 100, beginAtZero: true })
    });

    function seriesOf(outputType, key) {
      return lengths.map(function (k) {
        var at = byLength[k] && byLength[k][outputType];
        return at ? median(at[key]) : null;
      });
    }

    function summaryRows(summary) {
      var rows = [];
      Object.keys(summary.lengths).sort(function (a, b) { return a - b; }).forEach(function (k) {
        var at = summary.lengths[k];
        var name = k + (String(summary.best_lookahead) === k ? " (fastest)" : "");
        ["all"].concat(Object.keys(at).filter(function (t) { return t !== "all"; }).sort()).forEach(function (t, i) {
          var f = at[t];
          rows.push([i === 0 ? name : "", t, spread(f.decode_tps_client, "tok/s", 1),
            spread(f.decode_tps_engine, "tok/s", 1, 1, NOT_EXPOSED),
            spread(f.acceptance_rate, "%", 1, 100, "no drafting at this length, or " + NOT_EXPOSED),
            spread(f.tokens_per_verification, "tokens", 2, 1, NOT_EXPOSED)]);
        });
      });
      return rows;
    }

    return {
      add: function (sample) {
        var v = sample.values || {};
        if (sample.kind !== "request" || v.lookahead === undefined) return false;
        var k = v.lookahead, t = v.output_type || "all";
        if (lengths.indexOf(k) === -1) { lengths.push(k); lengths.sort(function (a, b) { return a - b; }); }
        if (types.indexOf(t) === -1) { types.push(t); types.sort(); }
        byLength[k] = byLength[k] || {};
        var at = byLength[k][t] = byLength[k][t] || { tps: [], acc: [] };
        at.tps.push(orNull(v.decode_tps_client));
        at.acc.push(v.acceptance_rate === null || v.acceptance_rate === undefined ? null : v.acceptance_rate * 100);
        return true;
      },
      draw: function () {
        c.data.labels = lengths.map(String);
        var sets = [];
        types.forEach(function (t, i) {
          var color = typeColor(t, i);
          sets.push(dataset(t + " decode, tok/s", color, "y", { data: seriesOf(t, "tps") }));
          sets.push(dataset(t + " acceptance, %", color, "acc", {
            data: seriesOf(t, "acc"), borderDash: [5, 3], pointStyle: "triangle", pointRadius: 4
          }));
        });
        c.data.datasets = sets;
        setCeiling(c, ceiling, "y");
        c.update("none");
        markPoints(canvas, lengths.filter(function (k) { return byLength[k]; }).length);
      },
      applyRun: function (run) {
        if (run.summary && run.summary.lengths) fillRows(tbodyOf("job-summary"), summaryRows(run.summary));
        var next = ceilingOf(run);
        if (next !== ceiling) { ceiling = next; this.draw(); }
      }
    };
  }

  // ---- concurrency: per level ----

  function concurrencyView(run) {
    var canvas = document.getElementById("concurrency-chart");
    var levels = ((run.params && run.params.levels) || []).slice();
    var byLevel = {};  // c -> summarize_level(...) of that level
    var c = chart(canvas, "requests at once", [], {
      y: axis("total (tok/s)"),
      finish: rightAxis("time to finish (s)")
    });

    function take(level) {
      var n = level.concurrency;
      if (levels.indexOf(n) === -1) { levels.push(n); levels.sort(function (a, b) { return a - b; }); }
      byLevel[n] = level;
    }

    function med(n, key) { return byLevel[n] && byLevel[n][key] ? byLevel[n][key].median : null; }

    function renderTable(summary) {
      var done = levels.filter(function (n) { return byLevel[n]; });
      fillRows(tbodyOf("job-summary"), done.map(function (n) {
        var l = byLevel[n];
        return [String(n), spread(l.total_tps, "tok/s", 1), spread(l.finish_s, "s", 2), spread(l.ttft_s, "s", 3),
          spread(l.decode_tps_client, "tok/s", 1), l.short_answers + " of " + l.requests];
      }), true);
      var line = document.getElementById("scaling");
      if (summary && summary.scaling && line) {
        line.textContent = summary.baseline + " \u2192 " + summary.max_concurrency + " requests at once: " +
          summary.scaling.toFixed(2) + "\u00d7 the total tok/s, each answer takes " +
          summary.finish_s_ratio.toFixed(2) + "\u00d7 as long (" + summary.answer_tokens + "-token answers).";
      }
    }

    return {
      add: function (sample) {
        if (sample.kind !== "level" || !sample.values) return false;
        take(sample.values);
        return true;
      },
      draw: function () {
        c.data.labels = levels.map(String);
        c.data.datasets = [
          dataset("total of the box, tok/s", "#1e88e5", "y", {
            data: levels.map(function (n) { return med(n, "total_tps"); }), pointRadius: 4
          }),
          dataset("time to finish per answer (median), s", "#e53935", "finish", {
            data: levels.map(function (n) { return med(n, "finish_s"); }), borderDash: [5, 3],
            pointStyle: "rect", pointRadius: 4
          })
        ];
        c.update("none");
        markPoints(canvas, levels.filter(function (n) { return byLevel[n]; }).length);
        renderTable(null);
      },
      applyRun: function (run) {
        var summary = run.summary || {};
        if (!summary.levels) return;
        Object.keys(summary.levels).forEach(function (k) { take(summary.levels[k]); });
        this.draw();
        renderTable(summary);
      }
    };
  }

  // ---- replay: per recorded request, per pass ----

  function generationS(v) {
    var tps = v.decode_tps_client || v.decode_tps_engine;
    return tps && v.output_tokens ? v.output_tokens / tps : null;
  }

  function replayView() {
    var canvas = document.getElementById("replay-chart");
    var passCanvas = document.getElementById("passes-chart");
    var byIndex = [];  // index -> {tps: [], e2e: []}
    var perPass = [];  // rep -> generation seconds so far
    var ceiling = null;
    var c = chart(canvas, "recorded request", [], { y: axis("decode (tok/s)"), e2e: rightAxis("E2E (s)") });
    var passes = chart(passCanvas, "pass", [], { y: axis("generation time (s)") }, "bar");

    function totalsRows(s) {
      return [
        ["recorded requests", value(s.requests, "", 0)],
        ["passes", value(s.reps, "", 0)],
        ["wall time per pass", spread(s.wall_s, "s", 2)],
        ["generation time per pass", spread(s.generation_s, "s", 2, 1,
          "unknown: some request has no decode speed")],
        ["output tokens per pass", spread(s.output_tokens, "tokens", 0)]
      ];
    }

    return {
      add: function (sample) {
        var v = sample.values || {};
        if (sample.kind !== "request" || v.index === undefined) return false;
        var at = byIndex[v.index] = byIndex[v.index] || { tps: [], e2e: [] };
        at.tps.push(v.decode_tps_client || orNull(v.decode_tps_engine));
        at.e2e.push(orNull(v.e2e_s));
        perPass[v.rep] = (perPass[v.rep] || 0) + (generationS(v) || 0);
        return true;
      },
      draw: function () {
        var indexes = [];
        byIndex.forEach(function (at, i) { if (at) indexes.push(i); });
        c.data.labels = indexes.map(function (i) { return "#" + (i + 1); });
        c.data.datasets = [
          dataset("decode (median over passes), tok/s", "#1e88e5", "y", {
            data: indexes.map(function (i) { return median(byIndex[i].tps); }), pointRadius: 4
          }),
          dataset("E2E (median over passes), s", "#e53935", "e2e", {
            data: indexes.map(function (i) { return median(byIndex[i].e2e); }), borderDash: [5, 3],
            pointStyle: "rect", pointRadius: 4
          })
        ];
        setCeiling(c, ceiling, "y");
        c.update("none");
        markPoints(canvas, indexes.length);
        var reps = Object.keys(perPass);
        passes.data.labels = reps.map(function (r) { return "pass " + (Number(r) + 1); });
        passes.data.datasets = [dataset("generation time (output tokens / decode speed, summed), s",
          "#00897b", "y", { data: reps.map(function (r) { return perPass[r]; }), borderWidth: 0, pointStyle: "rect" })];
        passes.update("none");
        markPoints(passCanvas, reps.length);
      },
      applyRun: function (run) {
        var s = run.summary || {};
        if (s.per_request) {
          fillRows(tbodyOf("job-totals"), totalsRows(s), true);
          fillRows(tbodyOf("job-summary"), s.per_request.map(function (r) {
            return ["#" + (r.index + 1), value(r.decode_tps, "tok/s", 1), value(r.e2e_s, "s", 2),
              value(r.ttft_s, "s", 3), value(r.output_tokens, "", 0), value(r.generation_s, "s", 2),
              value(r.finish_reason, "", 0)];
          }));
        }
        var next = ceilingOf(run);
        if (next !== ceiling) { ceiling = next; this.draw(); }
      }
    };
  }

  // ---- prefix-cache probe: per step ----

  var STEP_STYLE = {
    grow: { color: "#1e88e5", bar: "rgba(67, 160, 71, 0.55)", point: "circle", radius: 3 },
    inserted: { color: "#ef6c00", bar: "rgba(251, 140, 0, 0.45)", point: "rectRot", radius: 8 },
    continuation: { color: "#ad1457", bar: "rgba(216, 27, 96, 0.35)", point: "triangle", radius: 9 }
  };

  function styleOf(row) { return STEP_STYLE[row.label] || STEP_STYLE.grow; }

  function prefixView() {
    var canvas = document.getElementById("prefix-chart");
    var steps = [];
    var c = chart(canvas, "step", [], {
      y: axis("TTFT (s)"),
      tokens: rightAxis("prompt tokens")
    });

    function stepRow(name, r) {
      if (!r) return [name, null, null, null];
      var tokens = (r.new_tokens === null ? "?" : r.new_tokens.toLocaleString()) + " / " +
        (r.prompt_tokens === null ? "?" : r.prompt_tokens.toLocaleString());
      var share = r.new_share === null ? missing(NOT_EXPOSED) : value(100 * r.new_share, "%", 1);
      return [name + " (step " + r.step + ")", value(r.ttft_s, "s", 3), tokens, share];
    }

    function verdict(s) {
      var ratio = s.ttft_ratio ? " TTFT " + s.ttft_ratio.toFixed(1) + "\u00d7 the last step's." : "";
      if (s.cache_discard_detected === null) return "Could not judge the cache: the engine reports neither cached tokens nor a usable TTFT.";
      if (!s.cache_discard_detected) return "The cache held: the continuation computed little more than its new message." + ratio;
      return "Prompt cache discarded: the continuation recomputed " + s.continuation.new_tokens.toLocaleString() +
        " of " + s.continuation.prompt_tokens.toLocaleString() + " prompt tokens (a working cache computes about " +
        s.expected_new_tokens + ")." + ratio;
    }

    function renderSummary(s) {
      fillRows(tbodyOf("job-summary"), [
        stepRow("last grow", s.last_grow), stepRow("inserted request", s.inserted),
        stepRow("continuation", s.continuation)
      ], true);
      var share = s.new_input_share === null ? "unknown" : (100 * s.new_input_share).toFixed(1) + " %";
      document.getElementById("cache-verdict").textContent = verdict(s) + " " + s.steps +
        " steps, conversation " + (s.conversation_tokens || 0).toLocaleString() + " tokens; new-input share " +
        share + (s.detected_by ? "; judged by " + s.detected_by.replace("_", " ") : "") + ".";
      var banner = document.getElementById("cache-banner");
      banner.hidden = !s.cache_discard_detected;
      if (s.cache_discard_detected) banner.textContent = verdict(s) + (s.fix ? " Fix: " + s.fix + "." : "");
    }

    return {
      add: stepAdder(steps),
      draw: function () {
        c.data.labels = steps.map(function (r) { return r.label === "grow" ? String(r.step) : [String(r.step), r.label]; });
        var colors = steps.map(function (r) { return styleOf(r).color; });
        c.data.datasets = [
          dataset("TTFT, s", "#1e88e5", "y", {
            data: steps.map(function (r) { return orNull(r.ttft_s); }), borderWidth: 2,
            pointStyle: steps.map(function (r) { return styleOf(r).point; }),
            pointRadius: steps.map(function (r) { return styleOf(r).radius; }),
            pointBackgroundColor: colors, pointBorderColor: colors, order: 0
          }),
          dataset("new (uncached) prompt tokens", "rgba(67, 160, 71, 0.55)", "tokens", {
            type: "bar", data: steps.map(function (r) { return orNull(r.new_tokens); }), borderWidth: 0,
            backgroundColor: steps.map(function (r) { return styleOf(r).bar; }), pointStyle: "rect", order: 2
          }),
          dataset("prompt tokens sent", "#9e9e9e", "tokens", {
            data: steps.map(function (r) { return orNull(r.prompt_tokens); }), borderDash: [2, 3],
            pointRadius: 0, pointStyle: "line", order: 1
          })
        ];
        c.update("none");
        markPoints(canvas, steps.length);
      },
      applyRun: function (run) {
        var s = run.summary || {};
        if (s.continuation) renderSummary(s);
      }
    };
  }

  var VIEWS = {
    speed: speedView, lookahead: lookaheadView, concurrency: concurrencyView,
    replay: replayView, "prefix-cache": prefixView
  };

  return {
    create: function (job, run) { return (VIEWS[job] || speedView)(run); },
    // Other files add views for more jobs with the same helpers (see run_agent.js).
    register: function (job, view) { VIEWS[job] = view; },
    helpers: {
      chart: chart, axis: axis, rightAxis: rightAxis, dataset: dataset, markPoints: markPoints,
      fillRows: fillRows, tbodyOf: tbodyOf, value: value, orNull: orNull, stepAdder: stepAdder
    }
  };
})();
