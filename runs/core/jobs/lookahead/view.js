/* The lookahead sweep: decode speed and acceptance per output type at each lookahead length,
 * with the roofline ceiling, acceptance by draft position per length, and a summary row per
 * (length, output type), its acceptance by position included.
 * Registers itself as the "lookahead" view of RunCharts.
 */
(function () {
  "use strict";
  var h = window.RunCharts.helpers;
  var NOT_EXPOSED = window.RunCharts.NOT_EXPOSED;

  function byLength(a, b) { return a - b; }

  function noDrafting() { return interpolate(gettext("no drafting at this length, or %(why)s"), { why: NOT_EXPOSED }, true); }

  function lengthRows(summary, k) {
    var at = summary.lengths[k];
    var name = String(summary.best_lookahead) === k ? interpolate(gettext("%(k)s (fastest)"), { k: k }, true) : k;
    var types = ["all"].concat(Object.keys(at).filter(function (t) { return t !== "all"; }).sort());
    return types.map(function (t, i) {
      var f = at[t];
      return [i === 0 ? name : "", t === "all" ? gettext("all") : t, h.figure(f.decode_tps_client, "decode_tps_client"),
        h.figure(f.decode_tps_engine, "decode_tps_engine", NOT_EXPOSED),
        h.figure(f.acceptance_rate, "acceptance_rate", noDrafting()),
        h.figure(f.tokens_per_verification, "tokens_per_verification", NOT_EXPOSED),
        positionsCell(f.acceptance_by_position)];
    });
  }

  /** Acceptance by draft position of one (length, output type), compact: "90.0 · 75.0 %" (title: in full). */
  function positionsCell(rates) {
    if (!rates) return h.missing(noDrafting());
    var span = document.createElement("span");
    span.className = "positions";
    span.textContent = rates.map(function (r) { return window.SparkFormat.number(r, 1, 100); }).join(" · ") + " %";
    span.title = window.SparkFormat.positions(rates);
    return span;
  }

  function summaryRows(summary) {
    var lengths = Object.keys(summary.lengths).sort(byLength);
    return [].concat.apply([], lengths.map(function (k) { return lengthRows(summary, k); }));
  }

  /** Per length: the median of `key` ("tps" or "acc") of one output type, null where not measured. */
  function seriesOf(s, outputType, key) {
    return s.lengths.map(function (k) {
      var at = s.byLength[k] && s.byLength[k][outputType];
      return at ? h.median(at[key]) : null;
    });
  }

  /** One series per lookahead length with per-position figures (length -> rates, null where none). */
  function positionSeries(rates) {
    var lengths = Object.keys(rates).filter(function (k) { return rates[k]; }).sort(byLength);
    return lengths.map(function (k, i) {
      return { label: interpolate(gettext("lookahead %(k)s"), { k: k }, true), color: h.seriesColor(i), rates: rates[k] };
    });
  }

  function summaryPositions(summary) {
    var rates = {};
    Object.keys(summary.lengths).forEach(function (k) {
      rates[k] = (summary.lengths[k].all || {}).acceptance_by_position || null;
    });
    return positionSeries(rates);
  }

  function add(s, sample) {
    var v = sample.values || {};
    if (sample.kind !== "request" || v.lookahead === undefined) return false;
    var k = v.lookahead, t = v.output_type || "all";
    h.addSorted(s.lengths, k);
    if (s.types.indexOf(t) === -1) { s.types.push(t); s.types.sort(); }
    s.byLength[k] = s.byLength[k] || {};
    var at = s.byLength[k][t] = s.byLength[k][t] || { tps: [], acc: [] };
    at.tps.push(h.orNull(v.decode_tps_client));
    at.acc.push(h.percent(v.acceptance_rate));
    s.tally.add(String(k), v.accepted_by_position, v.verifications);
    return true;
  }

  function draw(s, ceiling) {
    s.chart.data.labels = s.lengths.map(String);
    var sets = [];
    s.types.forEach(function (t, i) {
      var color = h.typeColor(t, i);
      sets.push(h.dataset(interpolate(gettext("%(type)s decode, tok/s"), { type: t }, true), color, "y", { data: seriesOf(s, t, "tps") }));
      sets.push(h.dataset(interpolate(gettext("%(type)s acceptance, %"), { type: t }, true), color, "acc", {
        data: seriesOf(s, t, "acc"), borderDash: [5, 3], pointStyle: "triangle", pointRadius: 4
      }));
    });
    s.chart.data.datasets = sets;
    h.setCeiling(s.chart, ceiling, "y");
    s.chart.update("none");
    h.markPoints(s.canvas, s.lengths.filter(function (k) { return s.byLength[k]; }).length);
    s.positions.live(positionSeries(s.tally.rates()));
  }

  function lookaheadView(run) {
    var canvas = document.getElementById("lookahead-chart");
    var s = {
      canvas: canvas, byLength: {}, types: [],  // byLength: length -> output type -> {tps: [], acc: []}
      lengths: ((run.params && run.params.lengths) || []).slice(),
      chart: h.chart(canvas, gettext("lookahead (draft tokens per verification)"), [], {
        y: h.axis(gettext("decode (tok/s)")), acc: h.rightAxis(gettext("acceptance (%)"), { min: 0, max: 100, beginAtZero: true })
      }),
      positions: h.positionChart(), tally: h.positionTally()  // tally: length -> per-position counts
    };
    var ceiling = null;
    return {
      add: function (sample) { return add(s, sample); },
      draw: function () { draw(s, ceiling); },
      applyRun: function (run) {
        var shown = h.soFar(run);  // the summary so far while the run goes
        if (shown.summary && shown.summary.lengths) h.fillRows(h.tbodyOf("job-summary"), summaryRows(shown.summary));
        if (run.summary && run.summary.lengths) s.positions.settle(summaryPositions(run.summary));
        var next = h.ceilingOf(run);
        if (next !== ceiling) { ceiling = next; draw(s, ceiling); }
      }
    };
  }

  window.RunCharts.register("lookahead", lookaheadView);
})();
