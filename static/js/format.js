/* The one place the pages' scripts format figures: "median [min–max] unit (n=N)", plain
 * numbers, acceptance by draft position, and the slug of a verdict. The same rules as
 * runs/templatetags/run_format.py, so a figure drawn live reads exactly as the server rendered it.
 * Numbers and dates follow the page's language (<html lang>, docs/i18n.md); words come from
 * Django's JavaScript catalogue (/jsi18n/, base.html), and a page without it (the self-contained
 * HTML report inlines this file and compare.js) gets English through the fallbacks below.
 */
(function () {
  "use strict";
  // Django's jsi18n functions where the page has no catalogue: the English text, holes filled alike.
  if (!window.gettext) window.gettext = function (s) { return s; };
  if (!window.ngettext) window.ngettext = function (one, many, n) { return n === 1 ? one : many; };
  if (!window.pgettext) window.pgettext = function (context, s) { return s; };
  if (!window.interpolate) {
    window.interpolate = function (fmt, obj, named) {
      if (named) return fmt.replace(/%\(\w+\)s/g, function (m) { return String(obj[m.slice(2, -2)]); });
      var list = obj.slice();
      return fmt.replace(/%s/g, function () { return String(list.shift()); });
    };
  }
})();

window.SparkFormat = (function () {
  "use strict";

  var EN_DASH = "\u2013";
  var LANG = document.documentElement.lang || "en";
  // The language's decimal mark; the digits stay toFixed's, rounded as the server rounds them
  // (Intl rounds 0.15 up to 0.2, Python and toFixed down to 0.1).
  var DECIMAL = new Intl.NumberFormat(LANG).formatToParts(1.5).filter(function (p) { return p.type === "decimal"; })[0].value;

  /** `v` times `scale` (default 1) with `digits` decimals, in the page's language (no grouping, as the server writes it). */
  function number(v, digits, scale) {
    var text = (v * (scale || 1)).toFixed(digits);
    return DECIMAL === "." ? text : text.replace(".", DECIMAL);
  }

  /** A whole count with the language's grouping: 12,345. */
  function count(n) { return Number(n).toLocaleString(LANG); }


  /** "no CI from 1 request", in words for what `counted` names (requests, bursts, passes, runs). */
  function noInterval(counted, n) {
    var v = { n: n };
    if (counted === "bursts") return interpolate(ngettext("no CI from %(n)s burst", "no CI from %(n)s bursts", n), v, true);
    if (counted === "passes") return interpolate(ngettext("no CI from %(n)s pass", "no CI from %(n)s passes", n), v, true);
    if (counted === "runs") return interpolate(ngettext("no CI from %(n)s run", "no CI from %(n)s runs", n), v, true);
    return interpolate(ngettext("no CI from %(n)s request", "no CI from %(n)s requests", n), v, true);
  }

  /** "p99 of 18 requests = max 13.4": the percentile is the largest value, too few to tell more. */
  function percentileIsMax(counted, key, n, max) {
    var v = { key: key, n: n, max: max };
    if (counted === "bursts") {
      return interpolate(ngettext("%(key)s of %(n)s burst = max %(max)s", "%(key)s of %(n)s bursts = max %(max)s", n), v, true);
    }
    if (counted === "passes") {
      return interpolate(ngettext("%(key)s of %(n)s pass = max %(max)s", "%(key)s of %(n)s passes = max %(max)s", n), v, true);
    }
    if (counted === "runs") {
      return interpolate(ngettext("%(key)s of %(n)s run = max %(max)s", "%(key)s of %(n)s runs = max %(max)s", n), v, true);
    }
    return interpolate(ngettext("%(key)s of %(n)s request = max %(max)s", "%(key)s of %(n)s requests = max %(max)s", n), v, true);
  }

  /** A {median, min, max, n} as "median [min–max] unit (n=N)" (no unit: "median [min–max] (n=N)"). */
  function spread(stats, unit, digits, scale) {
    function num(v) { return number(v, digits, scale); }
    if ("pooled" in stats) return num(stats.pooled) + (unit ? " " + unit : "");  // one value over the run
    var range = num(stats.median) + " [" + num(stats.min) + EN_DASH + num(stats.max) + "]";
    return range + (unit ? " " + unit : "") + " (n=" + stats.n + ")";
  }

  /** The median's 95 % interval and the percentiles, as figures.interval_text writes them:
   * "95 % CI 11.9–12.8 tok/s; p90 13.0 [CI 12.9–13.2]; p99 of 18 requests = max 13.4";
   * "" for a spread stored before intervals were. `counted` names the values (default "requests"). */
  function interval(stats, unit, digits, scale, counted) {
    if (stats && "pooled" in stats) return pooled(stats);
    if (!stats || !("median_ci" in stats)) return "";
    function num(v) { return number(v, digits, scale); }
    var n = stats.n, ci = stats.median_ci;
    var parts = [ci ? interpolate(gettext("95 % CI %(range)s"), { range: num(ci[0]) + EN_DASH + num(ci[1]) + (unit ? " " + unit : "") }, true)
                    : noInterval(counted || "requests", n)];
    ["p90", "p99"].forEach(function (key) {
      if (!(key in stats)) return;
      var pci = stats[key + "_ci"];
      if (stats[key + "_is_max"]) parts.push(percentileIsMax(counted || "requests", key, n, num(stats[key])));
      else parts.push(key + " " + num(stats[key]) + (pci ? " [" + interpolate(gettext("CI %(range)s"), { range: num(pci[0]) + EN_DASH + num(pci[1]) }, true) + "]" : ""));
    });
    return parts.join("; ");
  }

  /** Where a pooled figure (acceptance) comes from, as figures.pooled_text writes it. */
  function pooled(stats) {
    var sources = { engine: gettext("the engine's own counters"), requests: gettext("summed over the requests"),
                    log: gettext("the engine's log") };
    var v = { accepted: stats.accepted, drafted: stats.drafted, verifications: stats.verifications,
              source: sources[stats.source] || stats.source };
    if (stats.verifications) {
      return interpolate(gettext("pooled: %(accepted)s of %(drafted)s drafted tokens accepted in %(verifications)s verifications (%(source)s)"), v, true);
    }
    return interpolate(gettext("pooled: %(accepted)s of %(drafted)s drafted tokens accepted (%(source)s)"), v, true);
  }

  /** One value with its unit: numbers with `digits` decimals, anything else as text. */
  function value(v, unit, digits) {
    return (typeof v === "number" ? number(v, digits) : String(v)) + (unit ? " " + unit : "");
  }

  /** Acceptance by draft position (0..1 each) as "position 1: 90.0 %, 2: 75.0 %" (run_format.positions_text). */
  function positions(fractions) {
    var each = fractions.map(function (f, i) { return (i + 1) + ": " + number(f, 1, 100) + " %"; });
    return interpolate(gettext("position %(list)s"), { list: each.join(", ") }, true);
  }

  /** Django's slugify, as the templates' `verdict|slugify`: "no spread" -> "no-spread", "n/a" -> "na". */
  function slugify(text) {
    var kept = String(text).toLowerCase().replace(/[^\w\s-]/g, "");
    return kept.replace(/[-\s]+/g, "-").replace(/^[-_]+|[-_]+$/g, "");
  }

  return {
    number: number, count: count, spread: spread, interval: interval, pooled: pooled, value: value, positions: positions,
    slugify: slugify
  };
})();
