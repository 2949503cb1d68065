/* tltrace compile report: the shared state (window.TLReport): constants, the page's state S, and
 * loading the data chunks into it. Loaded before the other report-*.js parts, which put their
 * functions on the same object; report.js starts the page.
 *
 * The page carries data, not markup: <script type="application/json" class="tl-d">
 * chunks appended while the compile runs ({"t":"meta"}, {"t":"text"}, {"t":"rec"}; a text
 * is whole or the changes to an earlier one, core.js applyDelta).
 * A chunk cut short by a kill does not parse and is skipped.
 * @requires core.js
 */
(function () {
  "use strict";

  var CONTEXT = 3;          // equal lines kept around a change
  var MIN_FOLD = 4;         // fold only runs that hide at least this many lines
  var REFRESH_MS = 3000;    // a running report reloads itself this often
  var STALE_MS = 120000;    // a "running" file untouched this long belongs to a run that was killed
  var NARROW_PX = 1000;     // below this width the sidebar collapses by itself
  // Loaded by a sibling compile's report to answer its compare requests (see startCompare).
  var EMBED = window.parent !== window && location.hash === "#tl-embed";
  var DOTS = { changed: "\u25CF", noop: "\u25CB", failed: "\u2715", codegen: "\u25C6" };

  var S = {
    meta: {}, texts: new Map(), recs: [], posByIndex: new Map(), phases: [], bad: 0,
    phase: null, filter: null, hideNoop: false, visible: [], sel: -1,
    expandAll: false, anchors: {}, aligning: null, diff: null, search: null, items: [],
    ignoreWs: false, wrap: true, missing: null, autoCollapsed: false
  };

  var C = window.TLCore;
  C.initTheme();
  function $(id) { return document.getElementById(id); }
  function load() {
    var recs = [];
    var byIndex = new Map();
    S.bad = C.readChunks(function (d) {
      if (d.t === "meta") {
        for (var key in d) if (Object.prototype.hasOwnProperty.call(d, key) && key !== "t") S.meta[key] = d[key];
      } else if (d.t === "text") {
        // Whole, or as changes to an earlier text of the report (its base comes first).
        var s = typeof d.s === "string" ? d.s : C.applyDelta(S.texts.get(d.b), d.d, d.e === 1);
        if (typeof d.h === "string" && typeof s === "string") S.texts.set(d.h, s);
        else S.bad++;
      } else if (d.t === "sibs") {
        if (Array.isArray(d.runs)) S.sibs = d.runs;  // the invocation's compiles (for the switcher)
      } else if (d.t === "earlier") {
        if (Array.isArray(d.runs)) S.earlier = d.runs;  // the script's earlier invocations ("compare with")
      } else if (d.t === "launches") {
        if (Array.isArray(d.rows)) S.launches = d;  // the compile's launches (run --launches; report-header.js)
      } else if (d.t === "rec") {
        if (typeof d.index !== "number") { S.bad++; return; }
        d.name = String(d.name); d.phase = String(d.phase || "unscoped"); d.status = String(d.status || "noop");
        if (byIndex.has(d.index)) recs[byIndex.get(d.index)] = d;  // a later chunk completes a record
        else { byIndex.set(d.index, recs.length); recs.push(d); }
      }
    });
    recs.sort(function (a, b) { return a.index - b.index; });
    S.recs = recs;
    var seen = new Set();
    recs.forEach(function (r, pos) {
      S.posByIndex.set(r.index, pos);
      if (!seen.has(r.phase)) { seen.add(r.phase); S.phases.push(r.phase); }
    });
  }
  function textOf(hash) { return hash ? S.texts.get(hash) : undefined; }

  window.TLReport = {
    CONTEXT: CONTEXT,
    MIN_FOLD: MIN_FOLD,
    REFRESH_MS: REFRESH_MS,
    STALE_MS: STALE_MS,
    NARROW_PX: NARROW_PX,
    EMBED: EMBED,
    DOTS: DOTS,
    S: S,
    $: $,
    load: load,
    textOf: textOf
  };
})();
