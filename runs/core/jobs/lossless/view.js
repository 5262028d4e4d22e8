/* The lossless check: the page shows the comparison once the run has one (the template renders
 * it); while it runs, the answers so far are counted per lookahead in the summary line.
 * Registers itself as the "lossless" view of RunCharts.
 */
(function () {
  "use strict";

  function losslessView() {
    var answered = {};
    return {
      add: function (sample) {
        var v = sample.values || {};
        if (sample.kind !== "request" || v.draft_length === undefined) return false;
        answered[v.draft_length] = (answered[v.draft_length] || 0) + 1;
        return true;
      },
      draw: function () {
        var line = document.getElementById("lossless-progress");
        if (!line) return;
        line.textContent = Object.keys(answered).map(function (k) {
          var v = { k: k, n: answered[k] };
          return k === "0" ? interpolate(gettext("drafting off: %(n)s answered"), v, true)
            : interpolate(gettext("lookahead %(k)s: %(n)s answered"), v, true);
        }).join(" · ");
      },
      applyRun: function () {}
    };
  }

  window.RunCharts.register("lossless", losslessView);
})();
