/* The one place the pages' scripts format figures: "median [min–max] unit (n=N)", plain
 * numbers, and the slug of a verdict. The same rules as runs/templatetags/run_format.py, so a
 * figure drawn live reads exactly as the server rendered it.
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

  /** One value with its unit: numbers with `digits` decimals, anything else as text. */
  function value(v, unit, digits) {
    return (typeof v === "number" ? v.toFixed(digits) : String(v)) + (unit ? " " + unit : "");
  }

  /** Django's slugify, as the templates' `verdict|slugify`: "no spread" -> "no-spread", "n/a" -> "na". */
  function slugify(text) {
    var kept = String(text).toLowerCase().replace(/[^\w\s-]/g, "");
    return kept.replace(/[-\s]+/g, "-").replace(/^[-_]+|[-_]+$/g, "");
  }

  return { number: number, spread: spread, value: value, slugify: slugify };
})();
