/* The needle run: found (1) or not (0) per (length, depth), with each haystack's prefill time.
 * Registers itself as the "needle" view of RunCharts. */
(function () {
  "use strict";
  var h = window.RunCharts.helpers;

  function needleView() {
    var canvas = document.getElementById("needle-chart");
    var rows = [];
    var c = h.chart(canvas, gettext("length @ depth"), [], {
      y: h.axis(gettext("found"), { max: 1 }), prefill: h.rightAxis(gettext("prefill (s)"))
    });

    function label(r) { return r.length + " @ " + r.depth; }

    return {
      add: function (sample) {
        if (sample.kind !== "request" || !sample.values || sample.values.length === undefined) return false;
        rows.push(sample.values);
        return true;
      },
      draw: function () {
        c.data.labels = rows.map(label);
        c.data.datasets = [
          h.dataset(gettext("found"), "rgba(67, 160, 71, 0.6)", "y", {
            type: "bar", pointStyle: "rect", data: rows.map(function (r) { return r.found ? 1 : 0; })
          }),
          h.dataset(gettext("prefill, s"), "#1e88e5", "prefill", { data: rows.map(function (r) { return h.orNull(r.prefill_s); }) })
        ];
        c.update("none");
        h.markPoints(canvas, rows.length);
        h.fillRows(h.tbodyOf("job-summary"), rows.map(function (r) {
          return [label(r), String(r.prompt_tokens), h.value(100 * r.length_error, "%", 2), r.found ? gettext("yes") : gettext("no")];
        }), true);
      },
      applyRun: function () {}
    };
  }

  window.RunCharts.register("needle", needleView);
})();
