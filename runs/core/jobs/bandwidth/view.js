/* The memory bandwidth run: GB/s per timed copy pass, the best one (stored on the machine), the
 * method (GPU device-to-device copy or CPU copy) and the share of the machine's nominal bandwidth.
 * Registers itself as the "bandwidth" view of RunCharts.
 */
(function () {
  "use strict";
  var h = window.RunCharts.helpers;
  // The stored method names (engines/bandwidth.py), in the reader's language.
  var METHODS = {"cpu copy": gettext("cpu copy"), "gpu device-to-device copy": gettext("gpu device-to-device copy")};

  function summaryRows(s) {
    var share = s.share_of_nominal === null || s.share_of_nominal === undefined ? h.missing(gettext("no nominal bandwidth")) :
      h.value(100 * s.share_of_nominal, "%", 0);
    return [
      [gettext("measured bandwidth (best pass)"), h.value(s.bandwidth_gbps, "GB/s", 1)],
      [gettext("method"), METHODS[s.method] || s.method],
      [gettext("buffer"), interpolate(gettext("%(mib)s MiB (%(gb)s GB moved per pass)"), {
        mib: SparkFormat.number(s.bytes / 1048576, 0), gb: SparkFormat.number(s.bytes_moved / 1e9, 2)
      }, true)],
      [pgettext("copy passes", "passes"), String(s.passes)],
      [gettext("nominal bandwidth"), s.nominal_gbps ? h.value(s.nominal_gbps, "GB/s", 1) : h.missing(gettext("not set"))],
      [gettext("share of nominal"), share]
    ];
  }

  function bandwidthView() {
    var canvas = document.getElementById("bandwidth-chart");
    var passes = [];
    var c = h.chart(canvas, pgettext("a copy pass", "pass"), [], { y: h.axis("GB/s") });
    return {
      add: function (sample) {
        if (sample.kind !== "request" || !sample.values || sample.values.pass === undefined) return false;
        passes.push(sample.values);
        passes.sort(function (a, b) { return a.pass - b.pass; });
        return true;
      },
      draw: function () {
        c.data.labels = passes.map(function (p) { return String(p.pass); });
        c.data.datasets = [h.dataset("GB/s", "rgba(30, 136, 229, 0.6)", "y", {
          type: "bar", pointStyle: "rect", data: passes.map(function (p) { return p.gbps; })
        })];
        c.update("none");
        h.markPoints(canvas, passes.length);
      },
      applyRun: function (run) {
        var s = run.summary || {};
        if (s.bandwidth_gbps) h.fillRows(h.tbodyOf("job-summary"), summaryRows(s), true);
      }
    };
  }

  window.RunCharts.register("bandwidth", bandwidthView);
})();
