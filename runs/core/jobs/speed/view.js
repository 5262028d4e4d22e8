/* The speed run: decode speed (client and engine) and TTFT per request with the roofline
 * ceiling, acceptance per request, acceptance by draft position (per output type), and the
 * summary tables (overall, by output type, roofline).
 * Registers itself as the "speed" view of RunCharts.
 */
(function () {
  "use strict";
  var h = window.RunCharts.helpers;
  var NOT_EXPOSED = window.RunCharts.NOT_EXPOSED;
  // Beyond this many points a line chart drops its point markers: they hide the line and cost the most to draw.
  var MARKED_POINTS = 300;
  var ALL_COLOR = "#8e24aa";

  /** The summary figure of `key` in `summary`, formatted as its catalogue declaration says. */
  function figurer() {
    return function figure(summary, key) {
      var m = h.metric(key);
      var title = summary && key in summary ? NOT_EXPOSED : gettext("no data yet");
      return h.spreadWithInterval(summary ? summary[key] : undefined, m.unit, m.digits, m.scale, title);
    };
  }

  /** The nominal ceiling: "ceiling 47.1 tok/s (273 GB/s ÷ 5.80 GB per token, gguf); with 4.27 tokens per verification 201.0 tok/s". */
  function nominalText(r) {
    var text = interpolate(gettext("ceiling %(tps)s tok/s (%(gbps)s GB/s \u00f7 %(gb)s GB per token, %(source)s)"), {
      tps: SparkFormat.number(r.ceiling_tps, 1), gbps: r.bandwidth_gbps,
      gb: SparkFormat.number(r.bytes_per_token / 1e9, 2), source: r.bytes_source
    }, true);
    if (!r.ceiling_with_drafts_tps) return text;
    return text + "; " + interpolate(gettext("with %(tpv)s tokens per verification %(tps)s tok/s"), {
      tpv: SparkFormat.number(r.tokens_per_verification, 2), tps: SparkFormat.number(r.ceiling_with_drafts_tps, 1)
    }, true);
  }

  /** The ceiling at the machine's measured bandwidth, when it has one. */
  function measuredText(r) {
    if (!r.measured_ceiling_tps) return "";
    var text = "; " + interpolate(gettext("measured-bandwidth ceiling %(tps)s tok/s (%(gbps)s GB/s measured)"), {
      tps: SparkFormat.number(r.measured_ceiling_tps, 1), gbps: SparkFormat.number(r.measured_bandwidth_gbps, 1)
    }, true);
    if (!r.measured_ceiling_with_drafts_tps) return text;
    return text + ", " + interpolate(gettext("with drafts %(tps)s tok/s"), { tps: SparkFormat.number(r.measured_ceiling_with_drafts_tps, 1) }, true);
  }

  function efficiencyText(r) {
    if (r.efficiency === null || r.efficiency === undefined) return "";
    var said = r.measured_pooled ? gettext("measured %(tps)s tok/s pooled over the run = %(pct)s % efficiency")
                                 : gettext("measured %(tps)s tok/s = %(pct)s % efficiency");
    var text = "; " + interpolate(said, {
      tps: SparkFormat.number(r.measured_tps, 1), pct: SparkFormat.number(r.efficiency, 0, 100)
    }, true);
    if (r.measured_efficiency !== null && r.measured_efficiency !== undefined) {
      text += " " + interpolate(gettext("(%(pct)s % of the measured-bandwidth ceiling)"), { pct: SparkFormat.number(r.measured_efficiency, 0, 100) }, true);
    }
    return text + (r.above_ceiling ? "; " + gettext("above a ceiling: check the bytes per token and the bandwidth") : "");
  }

  function renderRoofline(run) {
    var r = h.rooflineOf(run);
    var td = document.getElementById("roofline");
    if (!r || !td) return;
    var text = nominalText(r) + measuredText(r) + efficiencyText(r);
    if (!r.measured_ceiling_tps) text += "; " + gettext("no measured bandwidth on this machine (run a Memory bandwidth job)");
    if (r.note) text += "; " + gettext(r.note);
    td.replaceChildren(document.createTextNode(text));
    td.classList.toggle("warning", Boolean(r.above_ceiling));
  }

  /** Whether the run's requests reasoned (run_format.has_reasoning): its reasoning rows show then. */
  function hasReasoning(summary) {
    if (!summary) return false;
    return Boolean(summary.ttfr_s) || Boolean(summary.reasoning_tokens && summary.reasoning_tokens.max);
  }

  function renderReasoning(summary) {
    var reasoned = hasReasoning(summary);
    document.querySelectorAll("tr[data-reasoning]").forEach(function (tr) { tr.hidden = !reasoned; });
    var sources = document.getElementById("reasoning-sources");
    if (sources && summary && summary.reasoning_tokens_sources) {
      sources.textContent = summary.reasoning_tokens_sources.join(", ") || "\u2014";
    }
  }

  function renderTables(run, figure) {
    document.querySelectorAll("[data-metric]").forEach(function (td) {
      td.replaceChildren(figure(run.summary, td.getAttribute("data-metric")));
    });
    renderReasoning(run.summary);
    var byType = run.summary && run.summary.by_output_type;
    if (byType && Object.keys(byType).length) {
      h.fillRows(document.getElementById("by-type"), Object.keys(byType).sort().map(function (t) {
        return [t, figure(byType[t], "decode_tps_client"), figure(byType[t], "acceptance_rate")];
      }));
    }
    var positions = document.getElementById("positions-text");
    var byPosition = run.summary && run.summary.acceptance_by_position;
    if (positions && byPosition) positions.replaceChildren(h.value(SparkFormat.positions(byPosition), "", 0));
    renderRoofline(run);
  }

  /** One series per output type that has per-position figures; else `all` (the run's counters), if any. */
  function positionSeries(byType, all) {
    var types = Object.keys(byType).filter(function (t) { return byType[t]; }).sort();
    if (types.length) {
      return types.map(function (t, i) { return { label: t, color: h.typeColor(t, i), rates: byType[t] }; });
    }
    if (!all) return [];
    return [{ label: gettext("all requests (engine's counters, warm-up included)"), color: ALL_COLOR, rates: all }];
  }

  function summaryPositions(summary) {
    var byType = {};
    Object.keys(summary.by_output_type || {}).forEach(function (t) {
      byType[t] = summary.by_output_type[t].acceptance_by_position || null;
    });
    return positionSeries(byType, summary.acceptance_by_position);
  }

  /** The two charts and the arrays their datasets keep across draws. */
  function charts() {
    var s = { decode: [], engine: [], ttft: [], acceptance: [], numbers: [] };
    s.speedCanvas = document.getElementById("speed-chart");
    s.acceptanceCanvas = document.getElementById("acceptance-chart");
    s.speed = h.chart(s.speedCanvas, gettext("request"), [], {
      y: h.axis(gettext("decode (tok/s)")), ttft: h.rightAxis(gettext("TTFT (s)"))
    });
    s.accept = h.chart(s.acceptanceCanvas, gettext("request"), [], { y: h.axis(gettext("acceptance (%)"), { min: 0, max: 100 }) });
    s.speedSets = [
      h.dataset(gettext("decode (client), tok/s"), "#1e88e5", "y", { data: s.decode }),
      h.dataset(gettext("decode (engine), tok/s"), "#43a047", "y", { data: s.engine, borderDash: [5, 3] }),
      h.dataset(gettext("TTFT, s"), "#e53935", "ttft", { data: s.ttft })
    ];
    s.acceptSets = [h.dataset(gettext("acceptance rate, %"), "#8e24aa", "y", { data: s.acceptance })];
    s.speed.data.labels = s.numbers;
    s.speed.data.datasets = s.speedSets.slice();
    s.accept.data.labels = s.numbers;
    s.accept.data.datasets = s.acceptSets;
    s.positions = h.positionChart();
    s.tally = h.positionTally();  // output type -> per-position counts of its requests
    return s;
  }

  function add(s, sample) {
    if (sample.kind !== "request") return false;
    var v = sample.values || {};
    // A thinned series (a long run's stored samples) numbers its requests ("n"); live ones follow on.
    s.numbers.push(sample.n || (s.numbers.length ? s.numbers[s.numbers.length - 1] + 1 : 1));
    s.decode.push(h.orNull(v.decode_tps_client));
    s.engine.push(h.orNull(v.decode_tps_engine));
    s.ttft.push(h.orNull(v.ttft_s));
    s.acceptance.push(h.percent(v.acceptance_rate));
    s.tally.add(v.output_type || gettext("all requests"), v.accepted_by_position, v.verifications);
    return true;
  }

  function draw(s, ceiling) {
    // The datasets keep their arrays across draws (Chart.js follows the pushes); building new
    // datasets each time made Chart.js rebuild every point's element on every live sample.
    var n = s.numbers.length, radius = n > MARKED_POINTS ? 0 : 2;
    s.speedSets.concat(s.acceptSets).forEach(function (d) { d.pointRadius = radius; });
    h.setCeiling(s.speed, ceiling, "y");
    s.speed.update("none");
    s.accept.update("none");
    h.markPoints(s.speedCanvas, n);
    h.markPoints(s.acceptanceCanvas, n);
    s.positions.live(positionSeries(s.tally.rates(), null));
  }

  function speedView() {
    var figure = figurer();
    var s = charts();
    var ceiling = null;
    return {
      add: function (sample) { return add(s, sample); },
      draw: function () { draw(s, ceiling); },
      applyRun: function (run) {
        renderTables(h.soFar(run), figure);
        // The run's summary (its end) has the final figures, the counters' fallback included.
        var summary = run.summary;
        if (summary && "acceptance_by_position" in summary) s.positions.settle(summaryPositions(summary));
        var next = h.ceilingOf(run);
        if (next !== ceiling) { ceiling = next; draw(s, ceiling); }
      }
    };
  }

  window.RunCharts.register("speed", speedView);
})();
