/* Live run page: one socket with backfill, polling while it is down, nothing missed or repeated.
 *
 * Protocol: ws(s)://host/ws/runs/<id>/?after=<last seq> sends {"type": "run", "run": {...}} and
 * {"type": "samples", "samples": [...]}; GET /api/runs/<id>/samples?after=<seq> answers
 * {"run": {...}, "samples": [...]}. The charts and tables of the run's job are its view's
 * (js/jobs/<job>.js, its folder's view.js, through run_charts.js), and the hardware telemetry chart every job
 * has (static/js/telemetry.js).
 * Test hooks: data-job on #run; data-points on each job's main chart canvas (x points drawn);
 * data-status and data-transport ("socket" or "polling": what delivered the latest update) on
 * the status badge (#run-status); a "sparkdash:drawn" event on document after each batch of
 * new samples is drawn, its detail the samples (the live-latency benchmark times it).
 */
(function () {
  "use strict";

  var TERMINAL = ["succeeded", "failed", "cancelled"];
  var POLL_MS = 2000;
  var FIRST_BACKOFF_MS = 1000;
  var MAX_BACKOFF_MS = 10000;
  // A long run's stored samples come thinned to about this many points per chart (min/max per bucket).
  var MAX_POINTS = 2000;

  var root = document.getElementById("run");
  if (!root) return;
  var initial = JSON.parse(document.getElementById("run-data").textContent);
  // The job's charts and tables (its view.js in runs/core/jobs/<kind>/): fed every new sample, and every run update.
  // The hardware telemetry chart (static/js/telemetry.js), every job's: fed the same way.
  var views = [RunCharts.create(root.getAttribute("data-job"), initial)];
  var telemetry = window.RunTelemetry ? RunTelemetry.create() : null;
  if (telemetry) views.push(telemetry);
  var view = {
    // Only the views a sample changed are drawn again: 10 Hz telemetry leaves the job's charts be.
    add: function (sample) {
      var changed = false;
      views.forEach(function (v) { if (v.add(sample)) { v.changed = changed = true; } });
      return changed;
    },
    draw: function () {
      views.forEach(function (v) { if (v.changed) { v.changed = false; v.draw(); } });
    },
    applyRun: function (run) { views.forEach(function (v) { v.applyRun(run); }); }
  };

  var lastSeq = -1;
  var socket = null;
  var backoff = FIRST_BACKOFF_MS;
  var reconnectTimer = null;
  var pollTimer = null;
  var pollInFlight = false;
  var finished = false;

  function isTerminal(run) { return TERMINAL.indexOf(run.status) !== -1; }

  function applySamples(samples) {
    var changed = false, fresh = [];
    (samples || []).forEach(function (sample) {
      if (sample.seq <= lastSeq) return;
      lastSeq = sample.seq;
      fresh.push(sample);
      if (view.add(sample)) changed = true;
    });
    if (changed) view.draw();
    if (fresh.length) document.dispatchEvent(new CustomEvent("sparkdash:drawn", { detail: fresh }));
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

  // The badge's words; its class and data-status keep the status itself.
  var STATUS_TEXT = {
    queued: pgettext("run status", "queued"), running: pgettext("run status", "running"), succeeded: pgettext("run status", "succeeded"),
    failed: pgettext("run status", "failed"), cancelled: pgettext("run status", "cancelled")
  };

  function applyRun(run) {
    var badge = document.getElementById("run-status");
    badge.textContent = STATUS_TEXT[run.status] || run.status;
    badge.className = "status status-" + run.status;
    badge.setAttribute("data-status", run.status);
    var bar = document.getElementById("progress");
    bar.max = run.progress.total || 1;
    bar.value = run.progress.done;
    var text = document.getElementById("progress-text");
    text.textContent = run.progress.done + " / " + run.progress.total + " " + text.getAttribute("data-unit");
    var error = document.getElementById("run-error");
    error.textContent = run.error || "";
    error.hidden = !run.error;
    var noWorker = document.getElementById("run-no-worker");
    if (noWorker) noWorker.hidden = run.status !== "queued";
    view.applyRun(run);
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
    var url = root.getAttribute("data-samples-url") + "?after=" + lastSeq + "&max_points=" + MAX_POINTS;
    fetch(url, {
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
      setLiveState(gettext("live"));
    };
    ws.onmessage = function (event) {
      markTransport("socket");
      handle(JSON.parse(event.data));
    };
    ws.onclose = function () {
      if (socket !== ws || finished) return;
      socket = null;
      setLiveState(gettext("reconnecting\u2026"));
      schedulePoll(POLL_MS);
      reconnectTimer = setTimeout(connect, backoff);
      backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
    };
  }

  applyRun(initial);
  if (isTerminal(initial)) schedulePoll(0); else connect();
})();
