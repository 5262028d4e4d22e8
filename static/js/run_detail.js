/* Live run page: one socket with backfill, polling while it is down, nothing missed or repeated.
 *
 * Protocol: ws(s)://host/ws/runs/<id>/?after=<last seq> sends {"type": "run", "run": {...}} and
 * {"type": "samples", "samples": [...]}; GET /api/runs/<id>/samples?after=<seq> answers
 * {"run": {...}, "samples": [...]}. Test hooks: data-points on each chart canvas (requests
 * plotted), and data-status and data-transport ("socket" or "polling": what delivered the
 * latest update) on the status badge (#run-status).
 */
(function () {
  "use strict";

  var TERMINAL = ["succeeded", "failed", "cancelled"];
  var POLL_MS = 2000;
  var FIRST_BACKOFF_MS = 1000;
  var MAX_BACKOFF_MS = 10000;
  var NOT_EXPOSED = "not exposed by this engine";
  var NOT_YET = "no data yet";

  var root = document.getElementById("run");
  if (!root) return;
  var metrics = JSON.parse(document.getElementById("summary-metrics").textContent);
  var metricByKey = {};
  metrics.forEach(function (m) { metricByKey[m.key] = m; });

  var lastSeq = -1;
  var requests = 0;
  var socket = null;
  var backoff = FIRST_BACKOFF_MS;
  var reconnectTimer = null;
  var pollTimer = null;
  var pollInFlight = false;
  var finished = false;

  function isTerminal(run) { return TERMINAL.indexOf(run.status) !== -1; }
  function orNull(value) { return value === undefined || value === null ? null : value; }

  function dataset(label, color, axis, dashed) {
    return {
      label: label, data: [], yAxisID: axis, borderColor: color, backgroundColor: color,
      borderWidth: 1.5, pointRadius: 2, tension: 0, spanGaps: false, borderDash: dashed ? [5, 3] : []
    };
  }

  function options(scales) {
    scales.x = { title: { display: true, text: "request" }, ticks: { maxTicksLimit: 20 } };
    return {
      animation: false, responsive: true, maintainAspectRatio: false,
      interaction: { mode: "index", intersect: false }, scales: scales,
      plugins: { legend: { labels: { usePointStyle: true, pointStyle: "line" } } }
    };
  }

  var speedCanvas = document.getElementById("speed-chart");
  var acceptanceCanvas = document.getElementById("acceptance-chart");
  var speedChart = new Chart(speedCanvas, {
    type: "line",
    data: {
      labels: [],
      datasets: [
        dataset("decode (client), tok/s", "#1e88e5", "y"),
        dataset("decode (engine), tok/s", "#43a047", "y", true),
        dataset("TTFT, s", "#e53935", "ttft")
      ]
    },
    options: options({
      y: { beginAtZero: true, title: { display: true, text: "decode (tok/s)" } },
      ttft: {
        position: "right", beginAtZero: true, grid: { drawOnChartArea: false },
        title: { display: true, text: "TTFT (s)" }
      }
    })
  });
  var acceptanceChart = new Chart(acceptanceCanvas, {
    type: "line",
    data: { labels: [], datasets: [dataset("acceptance rate, %", "#8e24aa", "y")] },
    options: options({ y: { min: 0, max: 100, title: { display: true, text: "acceptance (%)" } } })
  });

  function addRequest(values) {
    requests += 1;
    var acceptance = orNull(values.acceptance_rate);
    speedChart.data.labels.push(requests);
    speedChart.data.datasets[0].data.push(orNull(values.decode_tps_client));
    speedChart.data.datasets[1].data.push(orNull(values.decode_tps_engine));
    speedChart.data.datasets[2].data.push(orNull(values.ttft_s));
    acceptanceChart.data.labels.push(requests);
    acceptanceChart.data.datasets[0].data.push(acceptance === null ? null : acceptance * 100);
  }

  function applySamples(samples) {
    var added = 0;
    (samples || []).forEach(function (sample) {
      if (sample.seq <= lastSeq) return;
      lastSeq = sample.seq;
      if (sample.kind === "request") {
        addRequest(sample.values || {});
        added += 1;
      }
    });
    if (!added) return;
    speedChart.update("none");
    acceptanceChart.update("none");
    speedCanvas.setAttribute("data-points", String(requests));
    acceptanceCanvas.setAttribute("data-points", String(requests));
  }

  // Formatting mirrors runs/templatetags/run_format.py, so live and server-rendered figures match.
  function figure(summary, key) {
    var m = metricByKey[key];
    var stats = summary ? summary[key] : undefined;
    var span = document.createElement("span");
    if (!stats) {
      span.className = "missing";
      span.title = summary && key in summary ? NOT_EXPOSED : NOT_YET;
      span.textContent = "\u2014";
      return span;
    }
    function num(v) { return (v * m.scale).toFixed(m.digits); }
    span.textContent = num(stats.median) + " [" + num(stats.min) + "\u2013" + num(stats.max) + "] " +
      m.unit + " (n=" + stats.n + ")";
    return span;
  }

  function cell(tag, child) {
    var td = document.createElement(tag);
    if (typeof child === "string") td.textContent = child; else td.appendChild(child);
    return td;
  }

  function renderByType(byType) {
    var body = document.getElementById("by-type");
    if (!byType || !Object.keys(byType).length) return;
    body.replaceChildren();
    Object.keys(byType).sort().forEach(function (outputType) {
      var tr = document.createElement("tr");
      tr.appendChild(cell("td", outputType));
      tr.appendChild(cell("td", figure(byType[outputType], "decode_tps_client")));
      tr.appendChild(cell("td", figure(byType[outputType], "acceptance_rate")));
      body.appendChild(tr);
    });
  }

  function lookup(obj, path) {
    return path.split(".").reduce(function (o, k) { return o && o[k] !== undefined ? o[k] : null; }, obj);
  }

  function renderProvenance(provenance) {
    root.querySelectorAll("[data-prov]").forEach(function (td) {
      var value = lookup(provenance, td.getAttribute("data-prov"));
      td.textContent = value === null || value === "" ? "\u2014" : String(value);
    });
    if (provenance && provenance.config) {
      document.getElementById("config-snapshot").textContent = JSON.stringify(provenance.config, null, 2);
    }
  }

  function applyRun(run) {
    var badge = document.getElementById("run-status");
    badge.textContent = run.status;
    badge.className = "status status-" + run.status;
    badge.setAttribute("data-status", run.status);
    var bar = document.getElementById("progress");
    bar.max = run.progress.total || 1;
    bar.value = run.progress.done;
    document.getElementById("progress-text").textContent =
      run.progress.done + " / " + run.progress.total + " requests";
    var error = document.getElementById("run-error");
    error.textContent = run.error || "";
    error.hidden = !run.error;
    root.querySelectorAll("[data-metric]").forEach(function (td) {
      td.replaceChildren(figure(run.summary, td.getAttribute("data-metric")));
    });
    renderByType(run.summary && run.summary.by_output_type);
    renderProvenance(run.provenance);
    var cancel = document.getElementById("cancel-form");
    if (cancel) cancel.hidden = isTerminal(run);
  }

  function setLiveState(text) { document.getElementById("live-state").textContent = text; }
  function markTransport(name) { document.getElementById("run-status").setAttribute("data-transport", name); }

  function finish() {
    finished = true;
    clearTimeout(pollTimer);
    clearTimeout(reconnectTimer);
    closeSocket();
    setLiveState("");
  }

  function closeSocket() {
    var ws = socket;
    socket = null;  // onclose then sees a socket it no longer owns and does not reconnect
    if (ws) ws.close();
  }

  function socketOpen() { return socket !== null && socket.readyState === WebSocket.OPEN; }

  function schedulePoll(delay) {
    if (finished || pollTimer || (socketOpen() && delay)) return;
    pollTimer = setTimeout(poll, delay);
  }

  function poll() {
    pollTimer = null;
    if (pollInFlight || finished) return;
    pollInFlight = true;
    fetch(root.getAttribute("data-samples-url") + "?after=" + lastSeq, {
      headers: { Accept: "application/json" }, credentials: "same-origin"
    })
      .then(function (response) {
        if (!response.ok) throw new Error("HTTP " + response.status);
        return response.json();
      })
      .then(function (data) {
        pollInFlight = false;
        markTransport("polling");
        applySamples(data.samples);
        applyRun(data.run);
        if (!isTerminal(data.run)) return schedulePoll(POLL_MS);
        // Ended: keep reading pages until one comes back empty, then everything is in.
        if (data.samples.length) schedulePoll(0); else finish();
      })
      .catch(function () {
        pollInFlight = false;
        schedulePoll(POLL_MS);
      });
  }

  function settle() {
    // The run has ended: drop the socket and read what is left over HTTP.
    closeSocket();
    clearTimeout(reconnectTimer);
    clearTimeout(pollTimer);
    pollTimer = null;
    schedulePoll(0);
  }

  function handle(message) {
    if (message.type === "samples") {
      applySamples(message.samples);
    } else if (message.type === "run") {
      applyRun(message.run);
      if (isTerminal(message.run)) settle();
    }
  }

  function connect() {
    reconnectTimer = null;
    if (finished) return;
    var scheme = location.protocol === "https:" ? "wss://" : "ws://";
    var ws = new WebSocket(scheme + location.host + root.getAttribute("data-ws-path") + "?after=" + lastSeq);
    socket = ws;
    ws.onopen = function () {
      backoff = FIRST_BACKOFF_MS;
      clearTimeout(pollTimer);
      pollTimer = null;
      setLiveState("live");
    };
    ws.onmessage = function (event) {
      markTransport("socket");
      handle(JSON.parse(event.data));
    };
    ws.onclose = function () {
      if (socket !== ws || finished) return;
      socket = null;
      setLiveState("reconnecting\u2026");
      schedulePoll(POLL_MS);
      reconnectTimer = setTimeout(connect, backoff);
      backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
    };
  }

  var initial = JSON.parse(document.getElementById("run-data").textContent);
  applyRun(initial);
  if (isTerminal(initial)) schedulePoll(0); else connect();
})();
