/* The one place the pages' scripts format figures: "median [min–max] unit (n=N)", plain
 * numbers, acceptance by draft position, and the slug of a verdict. The same rules as
 * runs/templatetags/run_format.py, so a figure drawn live reads exactly as the server rendered it.
 */
window.SparkFormat = (function () {
  "use strict";

  var EN_DASH = "\u2013";

  /** `v` times `scale` (default 1) with `digits` decimals. */
  function number(v, digits, scale) { return (v * (scale || 1)).toFixed(digits); }

  /** A {median, min, max, n} as "median [min–max] unit (n=N)" (no unit: "median [min–max] (n=N)"). */
  function spread(stats, unit, digits, scale) {
    function num(v) { return number(v, digits, scale); }
    var range = num(stats.median) + " [" + num(stats.min) + EN_DASH + num(stats.max) + "]";
    return range + (unit ? " " + unit : "") + " (n=" + stats.n + ")";
  }

  /** The median's 95 % interval and the percentiles, as figures.interval_text writes them:
   * "95 % CI 11.9–12.8 tok/s; p90 13.0 [CI 12.9–13.2]; p99 of 18 requests = max 13.4";
   * "" for a spread stored before intervals were. `counted` names the values (default "requests"). */
  function interval(stats, unit, digits, scale, counted) {
    if (!stats || !("median_ci" in stats)) return "";
    function num(v) { return number(v, digits, scale); }
    var n = stats.n, ci = stats.median_ci;
    counted = counted || "requests";
    if (n === 1) counted = counted.replace(/s$/, "");
    var parts = [ci ? ("95 % CI " + num(ci[0]) + EN_DASH + num(ci[1]) + (unit ? " " + unit : ""))
                    : "no CI from " + n + " " + counted];
    ["p90", "p99"].forEach(function (key) {
      if (!(key in stats)) return;
      var pci = stats[key + "_ci"];
      if (stats[key + "_is_max"]) parts.push(key + " of " + n + " " + counted + " = max " + num(stats[key]));
      else parts.push(key + " " + num(stats[key]) + (pci ? " [CI " + num(pci[0]) + EN_DASH + num(pci[1]) + "]" : ""));
    });
    return parts.join("; ");
  }

  /** One value with its unit: numbers with `digits` decimals, anything else as text. */
  function value(v, unit, digits) {
    return (typeof v === "number" ? v.toFixed(digits) : String(v)) + (unit ? " " + unit : "");
  }

  /** Acceptance by draft position (0..1 each) as "position 1: 90.0 %, 2: 75.0 %" (run_format.positions_text). */
  function positions(fractions) {
    var each = fractions.map(function (f, i) { return (i + 1) + ": " + number(f, 1, 100) + " %"; });
    return "position " + each.join(", ");
  }

  /** Django's slugify, as the templates' `verdict|slugify`: "no spread" -> "no-spread", "n/a" -> "na". */
  function slugify(text) {
    var kept = String(text).toLowerCase().replace(/[^\w\s-]/g, "");
    return kept.replace(/[-\s]+/g, "-").replace(/^[-_]+|[-_]+$/g, "");
  }

  return { number: number, spread: spread, interval: interval, value: value, positions: positions, slugify: slugify };
})();
