/* The live-latency benchmark's page hook, injected into each run page before its scripts run
 * (tests/bench/live_pages.py, Page.addScriptToEvaluateOnNewDocument); production pages never load it.
 *
 * window.__sparkdashLive collects, for each sample carrying the worker's clock
 * (values.bench_sent_ms), [seq, sent, received, drawn] in epoch ms: received is when the latest
 * socket message or polled JSON reached the page, drawn when run_detail.js announced the samples
 * drawn ("sparkdash:drawn" on document).
 */
(function () {
  "use strict";

  var rows = (window.__sparkdashLive = []);
  var receivedAt = 0;

  function now() { return performance.timeOrigin + performance.now(); }
  function stamp() { receivedAt = now(); }

  // Listening from the constructor on, so this runs before the page's own onmessage.
  var NativeSocket = window.WebSocket;
  window.WebSocket = class extends NativeSocket {
    constructor(url, protocols) {
      super(url, protocols);
      this.addEventListener("message", stamp);
    }
  };

  var json = Response.prototype.json;
  Response.prototype.json = function () {
    return json.call(this).then(function (data) { stamp(); return data; });
  };

  document.addEventListener("sparkdash:drawn", function (event) {
    var drawn = now();
    event.detail.forEach(function (s) {
      if (s.values && s.values.bench_sent_ms) rows.push([s.seq, s.values.bench_sent_ms, receivedAt, drawn]);
    });
  });
})();
