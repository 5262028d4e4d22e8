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

  // The marked steps' names under the x axis; the samples keep the label keys.
  var STEP_TEXT = { inserted: gettext("inserted"), continuation: gettext("continuation") };

  function styleOf(row) { return STEP_STYLE[row.label] || STEP_STYLE.grow; }

  function count(n) { return n === null ? "?" : SparkFormat.count(n); }

  function stepRow(name, r) {
    if (!r) return [name, null, null, null];
    var share = r.new_share === null ? h.missing(NOT_EXPOSED) : h.value(100 * r.new_share, "%", 1);
    return [interpolate(gettext("%(name)s (step %(step)s)"), { name: name, step: r.step }, true), h.value(r.ttft_s, "s", 3),
      count(r.new_tokens) + " / " + count(r.prompt_tokens), share];
  }

  function verdict(s) {
    var ratio = s.ttft_ratio ? " " + interpolate(gettext("TTFT %(ratio)s\u00d7 the last step's."), { ratio: SparkFormat.number(s.ttft_ratio, 1) }, true) : "";
    if (s.cache_discard_detected === null) return gettext("Could not judge the cache: the engine reports neither cached tokens nor a usable TTFT.");
    if (!s.cache_discard_detected) return gettext("The cache held: the continuation computed little more than its new message.") + ratio;
    return interpolate(gettext("Prompt cache discarded: the continuation recomputed %(new)s of %(prompt)s prompt tokens (a working cache computes about %(expected)s)."), {
      new: SparkFormat.count(s.continuation.new_tokens), prompt: SparkFormat.count(s.continuation.prompt_tokens),
      expected: s.expected_new_tokens
    }, true) + ratio;
  }

  /** "12 steps, conversation 8,000 tokens; new-input share 3.0 %; judged by cached tokens." */
  function countsText(s) {
    var v = {
      steps: s.steps, tokens: SparkFormat.count(s.conversation_tokens || 0),
      share: s.new_input_share === null ? gettext("unknown") : SparkFormat.number(s.new_input_share, 1, 100) + " %",
      by: s.detected_by ? s.detected_by.replace("_", " ") : ""
    };
    if (!s.detected_by) return interpolate(gettext("%(steps)s steps, conversation %(tokens)s tokens; new-input share %(share)s."), v, true);
    return interpolate(gettext("%(steps)s steps, conversation %(tokens)s tokens; new-input share %(share)s; judged by %(by)s."), v, true);
  }

  function renderSummary(s) {
    h.fillRows(h.tbodyOf("job-summary"), [
      stepRow(gettext("last grow"), s.last_grow), stepRow(gettext("inserted request"), s.inserted),
      stepRow(gettext("continuation"), s.continuation)
    ], true);
    document.getElementById("cache-verdict").textContent = verdict(s) + " " + countsText(s);
    var banner = document.getElementById("cache-banner");
    banner.hidden = !s.cache_discard_detected;
    if (s.cache_discard_detected) {
      banner.textContent = s.fix ? interpolate(gettext("%(verdict)s Fix: %(fix)s."), { verdict: verdict(s), fix: gettext(s.fix) }, true) : verdict(s);
    }
  }

  function datasets(steps) {
    var colors = steps.map(function (r) { return styleOf(r).color; });
    function field(key) { return steps.map(function (r) { return h.orNull(r[key]); }); }
    return [
      h.dataset(gettext("TTFT, s"), "#1e88e5", "y", {
        data: field("ttft_s"), borderWidth: 2, pointStyle: steps.map(function (r) { return styleOf(r).point; }),
        pointRadius: steps.map(function (r) { return styleOf(r).radius; }),
        pointBackgroundColor: colors, pointBorderColor: colors, order: 0
      }),
      h.dataset(gettext("new (uncached) prompt tokens"), "rgba(67, 160, 71, 0.55)", "tokens", {
        type: "bar", data: field("new_tokens"), borderWidth: 0,
        backgroundColor: steps.map(function (r) { return styleOf(r).bar; }), pointStyle: "rect", order: 2
      }),
      h.dataset(gettext("prompt tokens sent"), "#9e9e9e", "tokens", {
        data: field("prompt_tokens"), borderDash: [2, 3], pointRadius: 0, pointStyle: "line", order: 1
      })
    ];
  }

  function prefixView() {
    var canvas = document.getElementById("prefix-chart");
    var steps = [];
    var c = h.chart(canvas, gettext("step"), [], { y: h.axis(gettext("TTFT (s)")), tokens: h.rightAxis(gettext("prompt tokens")) });
    return {
      add: h.stepAdder(steps),
      draw: function () {
        c.data.labels = steps.map(function (r) { return r.label === "grow" ? String(r.step) : [String(r.step), STEP_TEXT[r.label] || r.label]; });
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
