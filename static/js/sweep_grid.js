/* Live sweep grid: polls GET /api/sweep-runs/<id> about once a second and fills in each cell
 * (figure, throttle mark, delta with its verdict, progress) until the sweep run is finished.
 * The figures and deltas arrive as text (runs.core.sweep_grid formats them); this only places them
 * (the verdict's class is format.js's slugify, as the template's `verdict|slugify`).
 * Test hooks: data-finished on #sweep-run; data-cell="<config id>-<job>" on each cell.
 */
(function () {
  "use strict";

  var POLL_MS = 1000;
  var root = document.getElementById("sweep-run");
  if (!root || root.getAttribute("data-finished") === "true") return;
  var url = root.getAttribute("data-api-url");
  var hasBaseline = null;
  // The verdicts' words (runs.core.scoring.figures.Verdict); the class keeps the English slug.
  var VERDICT_TEXT = {
    better: gettext("better"), worse: gettext("worse"), noise: gettext("noise"), "no spread": gettext("no spread"),
    "n/a": gettext("n/a"), baseline: gettext("baseline")
  };

  function progressText(c) {
    var parts = [interpolate(gettext("%(done)s of %(total)s done"), { done: c.done, total: c.total }, true)];
    if (c.running) parts.push(interpolate(gettext("%(n)s running"), { n: c.running }, true));
    if (c.failed) parts.push(interpolate(gettext("%(n)s failed"), { n: c.failed }, true));
    return parts.join(" \u00b7 ");
  }

  function setDelta(td, row, cell) {
    var span = td.querySelector(".cell-delta");
    span.hidden = row.baseline || !hasBaseline;
    span.textContent = "\u0394 " + cell.delta_text + " (" + cell.delta_pct_text + ") ";
    var badge = document.createElement("span");
    badge.className = "verdict verdict-" + SparkFormat.slugify(cell.verdict);
    badge.textContent = VERDICT_TEXT[cell.verdict] || cell.verdict;
    span.appendChild(badge);
  }

  /** The cell's throttle mark: "\u26a0 throttled 12.3 s", its title naming the runs; hidden where none throttled. */
  function setThrottle(span, cell) {
    setMark(span, cell.throttle_text, cell.throttle_title);
  }

  /** A warning mark ("\u26a0 text" with its title); hidden without text. */
  function setMark(span, text, title) {
    if (!span) return;
    span.hidden = !text;
    span.textContent = "\u26a0 " + text;
    span.title = title;
  }

  function renderGrid(grid) {
    hasBaseline = grid.rows.some(function (row) { return row.baseline; });
    grid.rows.forEach(function (row) {
      row.cells.forEach(function (cell) {
        var td = root.querySelector('[data-cell="' + row.config.id + "-" + cell.job + '"]');
        if (!td) return;
        var figure = td.querySelector(".cell-figure");
        figure.textContent = cell.text;
        figure.title = cell.interval || "";
        setThrottle(td.querySelector(".cell-throttle"), cell);
        setMark(td.querySelector(".cell-failed"), cell.failed_text, cell.failed_title);
        td.querySelector(".cell-progress").textContent = progressText(cell);
        setDelta(td, row, cell);
      });
    });
    var p = grid.progress;
    var bar = document.getElementById("sweep-progress");
    bar.max = p.total || 1;
    bar.value = p.done;
    document.getElementById("sweep-progress-text").textContent =
      interpolate(gettext("%(done)s of %(total)s runs done \u00b7 %(running)s running \u00b7 %(failed)s failed"),
        { done: p.done, total: p.total, running: p.running, failed: p.failed }, true);
  }

  function renderState(data) {
    if (!data.finished) return;
    root.setAttribute("data-finished", "true");
    var badge = document.getElementById("sweep-state");
    badge.textContent = gettext("finished");
    badge.className = "status status-succeeded";
    // As the server shows it: "YYYY-MM-DD HH:MM:SS" in the server's time zone.
    document.getElementById("sweep-finished").textContent = data.finished.slice(0, 19).replace("T", " ");
  }

  function poll() {
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) {
        if (!response.ok) throw new Error("HTTP " + response.status);
        return response.json();
      })
      .then(function (data) {
        renderGrid(data.grid);
        renderState(data);
        if (!data.finished) setTimeout(poll, POLL_MS);
      })
      .catch(function () { setTimeout(poll, POLL_MS * 3); });
  }

  poll();
})();
