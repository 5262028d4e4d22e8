/* A claim page's chart (also inlined in the offline reproduction report): per claimed metric, the
 * claimed value against the measured median and its 95 % interval at each concurrency level.
 *
 * Reads the JSON of #claim-chart-data (claims.results.chart_data) and draws one canvas per metric
 * into #claim-charts; each canvas gets data-points = the levels drawn, so tests and people can tell
 * an empty chart.
 */
(function () {
  "use strict";

  var CLAIMED = "#e53935";
  var MEDIAN = "#1e88e5";
  var INTERVAL = "rgba(30, 136, 229, 0.25)";

  function datasets(levels) {
    return [
      { type: "bar", label: gettext("95 % interval"), backgroundColor: INTERVAL, borderColor: MEDIAN, borderWidth: 1,
        data: levels.map(function (l) { return l.low === null ? null : [l.low, l.high]; }), order: 3 },
      { type: "line", label: gettext("measured median"), showLine: false, pointStyle: "circle", pointRadius: 6,
        backgroundColor: MEDIAN, borderColor: MEDIAN, data: levels.map(function (l) { return l.median; }), order: 2 },
      { type: "line", label: gettext("claimed"), showLine: false, pointStyle: "crossRot", pointRadius: 9,
        borderWidth: 3, borderColor: CLAIMED, backgroundColor: CLAIMED,
        data: levels.map(function (l) { return l.claimed; }), order: 1 }
    ];
  }

  function draw(holder, entry) {
    var box = document.createElement("div");
    box.className = "claim-chart";
    var canvas = document.createElement("canvas");
    canvas.id = "claim-chart-" + entry.metric;
    canvas.dataset.points = String(entry.levels.length);
    box.appendChild(canvas);
    holder.appendChild(box);
    return new Chart(canvas, {
      data: { labels: entry.levels.map(function (l) { return "c" + l.concurrency; }), datasets: datasets(entry.levels) },
      options: {
        animation: false, responsive: true, maintainAspectRatio: false,
        scales: {
          x: { title: { display: true, text: gettext("concurrency") } },
          y: { beginAtZero: true, title: { display: true, text: entry.metric + " (" + entry.unit + ")" } }
        },
        plugins: { legend: { labels: { usePointStyle: true, boxHeight: 7 } } }
      }
    });
  }

  function start() {
    var holder = document.getElementById("claim-charts");
    var source = document.getElementById("claim-chart-data");
    if (!holder || !source || typeof Chart === "undefined") { return; }
    var entries = JSON.parse(source.textContent);
    if (!entries.length) {
      holder.textContent = holder.dataset.empty;
      return;
    }
    entries.forEach(function (entry) { draw(holder, entry); });
  }

  start();
})();
