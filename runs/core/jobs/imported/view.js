/* An imported run: read from another tool's file, finished when stored, so its page is drawn by the
 * server and there is nothing live to add. Registers itself as the "imported" view of RunCharts.
 */
(function () {
  "use strict";

  window.RunCharts.register("imported", function () {
    return {
      add: function () { return false; },
      draw: function () {},
      applyRun: function () {}
    };
  });
})();
