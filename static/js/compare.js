/* The compare page's charts (also inlined in the HTML report): decode tok/s and acceptance by
 * config as median bars with a min–max bar over each, the concurrency curves of every config on
 * one plot, and decode tok/s against a quality metric with the Pareto front marked.
 *
 * Figures are format.js's (SparkFormat), loaded before this file here and in the report.
 * Reads the JSON of #compare-data (runs.core.comparison.chart_data); each canvas it draws gets
 * data-points = the number of points drawn, so tests and people can tell an empty chart.
 */
(function () {
  "use strict";

  var COLORS = ["#1e88e5", "#43a047", "#fb8c00", "#8e24aa", "#00897b", "#e53935", "#6d4c41", "#5e35b1"];
  var RANGE_COLOR = "#263238";
  var FRONT_COLOR = "#c62828";

  function color(i) { return COLORS[i % COLORS.length]; }

  function options(xTitle, yTitle, extra) {
    var o = {
      animation: false, responsive: true, maintainAspectRatio: false,
      scales: {
        x: { title: { display: true, text: xTitle } },
        y: { beginAtZero: true, title: { display: true, text: yTitle } }
      },
      plugins: { legend: { labels: { usePointStyle: true, boxHeight: 7 } } }
    };
    Object.keys(extra || {}).forEach(function (k) { o[k] = extra[k]; });
    return o;
  }

  function mark(canvas, points) { canvas.dataset.points = String(points); }

  /** A bar's figure over its runs, as format.js writes every spread: "median [min–max] (n=N)". */
  function spreadOver(bar) {
    return interpolate(gettext("over runs: %(spread)s"), { spread: SparkFormat.spread(bar, "", 1) }, true);
  }

  /** Median bars, one per config (the baseline's darker), each with its min–max range over it. */
  function bars(id, items, unit, data) {
    var canvas = document.getElementById(id);
    if (!canvas || !items.length) return;
    var colors = items.map(function (b) {
      var c = color(data.configs.indexOf(b.config));
      return b.config === data.baseline ? c : c + "99";
    });
    new Chart(canvas, {
      type: "bar",
      data: {
        labels: items.map(function (b) { return b.config === data.baseline ? interpolate(gettext("%(config)s (baseline)"), { config: b.config }, true) : b.config; }),
        datasets: [
          { label: interpolate(gettext("median, %(unit)s"), { unit: unit }, true), data: items.map(function (b) { return b.median; }), backgroundColor: colors },
          { label: gettext("min\u2013max over runs"), data: items.map(function (b) { return [b.min, b.max]; }),
            backgroundColor: RANGE_COLOR, grouped: false, barPercentage: 0.08, minBarLength: 2 }
        ]
      },
      options: options(gettext("config"), unit, {
        plugins: {
          legend: { labels: { usePointStyle: true, boxHeight: 7 } },
          tooltip: { callbacks: { footer: function (ctx) { return spreadOver(items[ctx[0].dataIndex]); } } }
        }
      })
    });
    mark(canvas, items.length);
  }

  function concurrency(data) {
    var canvas = document.getElementById("compare-concurrency");
    if (!canvas || !data.concurrency.length) return;
    var datasets = data.concurrency.map(function (curve) {
      var c = color(data.configs.indexOf(curve.config));
      return { label: curve.config, data: curve.points, borderColor: c, backgroundColor: c, pointRadius: 4 };
    });
    new Chart(canvas, {
      type: "line", data: { datasets: datasets },
      options: options(gettext("concurrent requests"), gettext("total tok/s of the box"), {
        scales: {
          x: { type: "linear", title: { display: true, text: gettext("concurrent requests") }, ticks: { precision: 0 } },
          y: { beginAtZero: true, title: { display: true, text: gettext("total tok/s of the box") } }
        }
      })
    });
    mark(canvas, datasets.reduce(function (sum, d) { return sum + d.data.length; }, 0));
  }

  // Writes each config's name next to its point, so the scatter reads without hovering.
  var pointNames = {
    id: "pointNames",
    afterDatasetsDraw: function (chart) {
      var ctx = chart.ctx;
      var meta = chart.getDatasetMeta(0);
      ctx.save();
      ctx.font = "12px sans-serif";
      ctx.fillStyle = "#37474f";
      meta.data.forEach(function (element, i) {
        ctx.fillText(chart.data.datasets[0].data[i].config, element.x + 8, element.y - 8);
      });
      ctx.restore();
    }
  };

  function scatter(data) {
    var canvas = document.getElementById("compare-scatter");
    var s = data.scatter;
    if (!canvas || !s) return;
    new Chart(canvas, {
      type: "scatter",
      data: {
        datasets: [
          { label: gettext("configs"), data: s.points, pointRadius: 5, backgroundColor: "#1e88e5", borderColor: "#1e88e5" },
          { label: gettext("Pareto front (not beaten on both)"), data: s.front, showLine: true, pointStyle: "rectRot",
            pointRadius: 9, borderColor: FRONT_COLOR, backgroundColor: FRONT_COLOR + "55", borderWidth: 2 }
        ]
      },
      options: options(gettext("decode tok/s (client, median)"), s.label, {
        // Not from zero: the trade-off lies in a narrow band of both axes.
        scales: {
          x: { grace: "10%", title: { display: true, text: gettext("decode tok/s (client, median)") } },
          y: { grace: "10%", title: { display: true, text: s.label } }
        },
        plugins: {
          legend: { labels: { usePointStyle: true, boxHeight: 7 } },
          tooltip: { callbacks: { label: function (ctx) {
            return ctx.raw.config + ": " + SparkFormat.value(ctx.raw.x, "tok/s", 1) + ", " + SparkFormat.number(ctx.raw.y, 1);
          } } }
        }
      }),
      plugins: [pointNames]
    });
    mark(canvas, s.points.length);
  }

  var source = document.getElementById("compare-data");
  if (!source || typeof Chart === "undefined") return;
  var data = JSON.parse(source.textContent);
  bars("compare-decode", data.decode, gettext("decode tok/s (client)"), data);
  bars("compare-acceptance", data.acceptance, gettext("acceptance rate, %"), data);
  concurrency(data);
  scatter(data);
})();
