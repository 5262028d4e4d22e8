/* A machine's Traffic page, live: new records from the socket or from polling, figures redrawn.
 *
 * Protocol: ws(s)://host/ws/traffic/<machine>/ sends {"type": "traffic.records", "records": [...]};
 * GET records.json?since=<last id>&window=<w>[&stats=1] answers {"records", "last_id", "relay",
 * "relay_texts", "stats", "texts", "warnings"} (stats, texts and warnings null when nothing is new).
 * The server computes every figure (traffic/stats.py) and writes its text (traffic/texts.py);
 * this script only sets them. The relay is its own process, so with the embedded default's
 * in-memory channel layer the socket hears nothing: the page polls every POLL_MS unless a
 * socket message arrived within QUIET_MS, and refreshes the window's figures every REFRESH_MS.
 * Test hooks: data-points on each chart canvas; data-transport on #traffic ("socket" or
 * "polling": what delivered the latest records); data-via on each row added live ("socket" or
 * "polling": what brought it first); a "sparkdash:traffic" event after each redraw.
 * Words: the figures and warnings come written in the page's language (records.json's "texts",
 * a warning's "shown" and "code_label"); this script's own words go through gettext (/jsi18n/).
 */
(function () {
  "use strict";

  var POLL_MS = 3000;
  var QUIET_MS = 10000;
  var REFRESH_MS = 30000;
  var MAX_ROWS = 50;
  var COLORS = { "tool-call": "#1e88e5", "table": "#43a047", "prose-en": "#fb8c00", "prose-ja": "#8e24aa" };

  var root = document.getElementById("traffic");
  if (!root) return;
  var data = JSON.parse(document.getElementById("traffic-data").textContent);
  var machine = root.getAttribute("data-machine");
  var windowName = root.getAttribute("data-window");
  var lastId = data.last_id;
  var lastSocketMessage = 0;
  var lastRefresh = Date.now();
  var charts = {};
  var fetching = false;

  function color(kind) { return COLORS[kind] || "#546e7a"; }
  function clock(iso) { return iso.slice(11, 16); }

  function lineChart(id, yLabel) {
    return new Chart(document.getElementById(id), {
      type: "line",
      data: { labels: [], datasets: [] },
      options: { animation: false, spanGaps: true, scales: { y: { beginAtZero: true, title: { display: true, text: yLabel } } } }
    });
  }

  function byTypeSeries(stats, key, scale) {
    var labels = stats.buckets.map(function (b) { return b.t; });
    return Object.keys(stats.by_output_type).map(function (kind) {
      var values = labels.map(function () { return null; });
      stats.by_output_type[kind].points.forEach(function (p) {
        var i = labels.indexOf(p.t);
        if (i !== -1 && p[key] !== null) values[i] = p[key] * scale;
      });
      return { label: kind, data: values, borderColor: color(kind), backgroundColor: color(kind) };
    });
  }

  function countPoints(datasets) {
    return datasets.reduce(function (n, d) { return n + d.data.filter(function (v) { return v !== null && v !== 0; }).length; }, 0);
  }

  function setChart(chart, canvasId, labels, datasets) {
    chart.data.labels = labels;
    chart.data.datasets = datasets;
    chart.update();
    document.getElementById(canvasId).setAttribute("data-points", String(countPoints(datasets)));
  }

  function drawCharts(stats) {
    var labels = stats.buckets.map(function (b) { return clock(b.t); });
    setChart(charts.requests, "requests-chart", labels, [
      { label: gettext("requests per minute"), data: stats.buckets.map(function (b) { return b.per_minute; }), borderColor: "#1e88e5", backgroundColor: "#1e88e5" },
      { label: gettext("errors"), data: stats.buckets.map(function (b) { return b.errors; }), borderColor: "#e53935", backgroundColor: "#e53935" }
    ]);
    setChart(charts.decode, "decode-chart", labels, byTypeSeries(stats, "decode_tps", 1));
    setChart(charts.acceptance, "acceptance-chart", labels, byTypeSeries(stats, "acceptance", 100));
  }

  function drawTexts(texts) {
    root.querySelectorAll("[data-figure]").forEach(function (el) {
      el.textContent = texts[el.getAttribute("data-figure")] || "";
    });
    var list = document.getElementById("by-output-type");
    list.textContent = "";
    var kinds = Object.keys(texts.by_output_type);
    if (!kinds.length) {
      var none = document.createElement("li");
      none.textContent = gettext("No answers in this window.");
      list.appendChild(none);
    }
    kinds.forEach(function (kind) {
      var li = document.createElement("li");
      li.setAttribute("data-type", kind);
      var name = document.createElement("strong");
      name.textContent = kind;
      li.appendChild(name);
      li.appendChild(document.createTextNode(": " + texts.by_output_type[kind]));
      list.appendChild(li);
    });
  }

  function conversationUrl(key) {
    return "/machines/" + machine + "/traffic/conversations/" + encodeURIComponent(key) + "/";
  }

  function drawWarnings(warnings) {
    var box = document.getElementById("traffic-warnings");
    box.textContent = "";
    warnings.forEach(function (w) {
      var p = document.createElement("p");
      p.className = "warning";
      p.setAttribute("role", "status");
      p.setAttribute("data-warning", w.kind);
      var label = document.createElement("strong");
      label.textContent = (w.code_label || w.kind) + ":";
      // A line of the engine's log names no conversation: plain text, no link.
      var link = document.createElement(w.conversation ? "a" : "span");
      if (w.conversation) link.href = conversationUrl(w.conversation);
      link.textContent = w.shown || w.message;
      p.appendChild(label);
      p.appendChild(document.createTextNode(" "));
      p.appendChild(link);
      box.appendChild(p);
    });
  }

  function dash(v, digits, unit) { return v === null || v === undefined ? "\u2014" : v.toFixed(digits) + (unit || ""); }
  function plain(v) { return v === null || v === undefined || v === "" ? "\u2014" : String(v); }

  function cell(row, text) {
    var td = document.createElement("td");
    td.textContent = text;
    row.appendChild(td);
    return td;
  }

  function recordRow(r, via) {
    var tr = document.createElement("tr");
    tr.setAttribute("data-record", r.id);
    tr.setAttribute("data-via", via);
    cell(tr, r.arrived.slice(11, 19));
    cell(tr, r.front + " " + r.path);
    cell(tr, plain(r.model));
    cell(tr, plain(r.output_type));
    var status = cell(tr, r.error ? r.status + ": " + r.error.slice(0, 60) : String(r.status));
    if (r.error) status.className = "error";
    cell(tr, dash(r.ttft_s, 2, " s"));
    // Not streamed: nothing for the relay to time, so the engine's own rate, marked as the server's row is.
    var timed = r.decode_tps_client !== null && r.decode_tps_client !== undefined;
    var decode = cell(tr, dash(timed ? r.decode_tps_client : r.decode_tps_engine, 1));
    if (!timed && r.decode_tps_engine !== null && r.decode_tps_engine !== undefined) {
      decode.title = gettext("not streamed: the engine’s own rate");
    }
    cell(tr, plain(r.prompt_tokens) + " / " + plain(r.new_prompt_tokens));
    cell(tr, plain(r.output_tokens));
    cell(tr, r.draft_tokens ? (r.accepted_tokens || 0) + " / " + r.draft_tokens : "\u2014");
    var conv = cell(tr, "");
    if (r.conversation) {
      var link = document.createElement("a");
      link.href = conversationUrl(r.conversation);
      link.textContent = r.conversation.slice(0, 8);
      conv.appendChild(link);
      conv.appendChild(document.createTextNode(" \u00b7 " + r.step));
    } else {
      conv.textContent = "\u2014";
    }
    return tr;
  }

  function addRecords(records, via) {
    var body = document.querySelector("#latest-requests tbody");
    var fresh = records.filter(function (r) { return !body.querySelector('tr[data-record="' + r.id + '"]'); });
    // lastId moves only with records.json: a socket batch may arrive while an earlier one was lost.
    fresh.forEach(function (r) { body.insertBefore(recordRow(r, via), body.firstChild); });
    while (body.rows.length > MAX_ROWS) body.deleteRow(body.rows.length - 1);
    document.getElementById("no-requests").hidden = body.rows.length > 0;
    return fresh.length;
  }

  function apply(answer, transport) {
    if (answer.records.length) root.setAttribute("data-transport", transport);
    addRecords(answer.records, "polling");
    if (answer.last_id > lastId) lastId = answer.last_id;
    document.getElementById("relay-state").textContent = answer.relay_texts.state;
    document.getElementById("relay-counters").textContent = answer.relay_texts.counters;
    if (answer.stats) {
      lastRefresh = Date.now();
      drawCharts(answer.stats);
      drawTexts(answer.texts);
      drawWarnings(answer.warnings);
    }
    document.dispatchEvent(new CustomEvent("sparkdash:traffic", { detail: answer }));
  }

  function answerOf(response) {
    if (response.ok) return response.json();
    throw new Error("records.json answered HTTP " + response.status);
  }

  function fetchNew(transport, withStats) {
    if (fetching) return;
    fetching = true;
    var query = "?since=" + lastId + "&window=" + windowName + (withStats ? "&stats=1" : "");
    fetch(root.getAttribute("data-records-url") + query, { credentials: "same-origin" })
      .then(answerOf)
      .then(function (answer) { apply(answer, transport); })
      .catch(function () { /* the next tick asks again */ })
      .finally(function () { fetching = false; });
  }

  function tick() {
    var quiet = Date.now() - lastSocketMessage > QUIET_MS;
    var stale = Date.now() - lastRefresh > REFRESH_MS;
    if (quiet || stale) fetchNew("polling", stale);
  }

  function connect() {
    var scheme = location.protocol === "https:" ? "wss://" : "ws://";
    var ws = new WebSocket(scheme + location.host + root.getAttribute("data-ws-path"));
    ws.onopen = function () { document.getElementById("live-state").textContent = gettext("live"); };
    ws.onmessage = function (event) {
      var message = JSON.parse(event.data);
      if (message.type !== "traffic.records") return;
      lastSocketMessage = Date.now();
      root.setAttribute("data-transport", "socket");
      addRecords(message.records, "socket");
      fetchNew("socket", true);  // the window's figures, recomputed by the server with these records
    };
    ws.onclose = function () {
      document.getElementById("live-state").textContent = gettext("polling");
      setTimeout(connect, 5000);
    };
  }

  charts.requests = new Chart(document.getElementById("requests-chart"), {
    type: "bar", data: { labels: [], datasets: [] },
    options: { animation: false, scales: { y: { beginAtZero: true, title: { display: true, text: gettext("per minute") } } } }
  });
  charts.decode = lineChart("decode-chart", "tok/s");
  charts.acceptance = lineChart("acceptance-chart", gettext("accepted %"));
  if (data.stats) drawCharts(data.stats);
  document.getElementById("window").addEventListener("change", function (event) { event.target.form.submit(); });
  setInterval(tick, POLL_MS);
  connect();
})();
