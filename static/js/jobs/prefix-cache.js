/* The prefix-cache probe: TTFT and new (uncached) prompt tokens per step, the inserted request
 * and the continuation marked, the verdict and its banner.
 * Registers itself as the "prefix-cache" view of RunCharts.
 */
(function () {
  "use strict";
  var h = window.RunCharts.helpers;
  var NOT_EXPOSED = window.RunCharts.NOT_EXPOSED;

  var STEP_STYLE = {
    grow: { color: "#1e88e5", bar: "rgba(67, 160, 71, 0.55)", point: "circle", radius: 3 },
    inserted: { color: "#ef6c00", bar: "rgba(251, 140, 0, 0.45)", point: "rectRot", radius: 8 },
    continuation: { color: "#ad1457", bar: "rgba(216, 27, 96, 0.35)", point: "triangle", radius: 9 }
  };

  function styleOf(row) { return STEP_STYLE[row.label] || STEP_STYLE.grow; }

  function count(n) { return n === null ? "?" : n.toLocaleString(); }

  function stepRow(name, r) {
    if (!r) return [name, null, null, null];
    var share = r.new_share === null ? h.missing(NOT_EXPOSED) : h.value(100 * r.new_share, "%", 1);
    return [name + " (step " + r.step + ")", h.value(r.ttft_s, "s", 3),
      count(r.new_tokens) + " / " + count(r.prompt_tokens), share];
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
    h.fillRows(h.tbodyOf("job-summary"), [
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

  function datasets(steps) {
    var colors = steps.map(function (r) { return styleOf(r).color; });
    function field(key) { return steps.map(function (r) { return h.orNull(r[key]); }); }
    return [
      h.dataset("TTFT, s", "#1e88e5", "y", {
        data: field("ttft_s"), borderWidth: 2, pointStyle: steps.map(function (r) { return styleOf(r).point; }),
        pointRadius: steps.map(function (r) { return styleOf(r).radius; }),
        pointBackgroundColor: colors, pointBorderColor: colors, order: 0
      }),
      h.dataset("new (uncached) prompt tokens", "rgba(67, 160, 71, 0.55)", "tokens", {
        type: "bar", data: field("new_tokens"), borderWidth: 0,
        backgroundColor: steps.map(function (r) { return styleOf(r).bar; }), pointStyle: "rect", order: 2
      }),
      h.dataset("prompt tokens sent", "#9e9e9e", "tokens", {
        data: field("prompt_tokens"), borderDash: [2, 3], pointRadius: 0, pointStyle: "line", order: 1
      })
    ];
  }

  function prefixView() {
    var canvas = document.getElementById("prefix-chart");
    var steps = [];
    var c = h.chart(canvas, "step", [], { y: h.axis("TTFT (s)"), tokens: h.rightAxis("prompt tokens") });
    return {
      add: h.stepAdder(steps),
      draw: function () {
        c.data.labels = steps.map(function (r) { return r.label === "grow" ? String(r.step) : [String(r.step), r.label]; });
        c.data.datasets = datasets(steps);
        c.update("none");
        h.markPoints(canvas, steps.length);
      },
      applyRun: function (run) {
        var s = run.summary || {};
        if (s.continuation) renderSummary(s);
      }
    };
  }

  window.RunCharts.register("prefix-cache", prefixView);
})();
