/* tltrace compile report: the pure parts of the pass view (no DOM), tested under node
 * (tests/test_report_js.py).
 *
 * lineDiff(align, A, B, anchors): diff rows {kind, a, b, anchor} where F7 anchors cut the texts
 *   into segments aligned one by one (align: TLDiff.align);
 * defaultShown(rows, opts): which rows a folded diff shows (context around changes, no tiny folds);
 * searchHits(recs, texts, q): the passes whose IR contains q, and whether each introduces,
 *   removes or only contains it; the PTX and SASS stages, as texts: found or not;
 * fmtDuration: how a pass's time reads.
 * Runs in the report (window.TLView) and under node (module.exports).
 */
(function (root) {
  "use strict";

  function fmtDuration(s) {
    if (s === undefined || s === null) return "";
    if (s >= 1) return s.toFixed(2) + " s";
    if (s >= 0.001) return (s * 1000).toFixed(1) + " ms";
    return Math.round(s * 1e6) + " \u00B5s";
  }

  // Rows {kind, a, b, anchor}: kind same | reindent | change | add | del, a/b line numbers or null.
  function lineDiff(align, A, B, anchors) {
    var rows = [], pi = 0, pj = 0;
    function segment(i1, j1) {
      var part = align(A.slice(pi, i1), B.slice(pj, j1));
      for (var i = 0; i < part.length; i++) {
        var r = part[i];
        rows.push({ kind: r.kind, a: r.a === null ? null : r.a + pi, b: r.b === null ? null : r.b + pj });
      }
    }
    (anchors || []).forEach(function (an) {
      if (an[0] < pi || an[1] < pj || an[0] >= A.length || an[1] >= B.length) return;
      segment(an[0], an[1]);
      var l = A[an[0]], r = B[an[1]];
      var kind = l === r ? "same" : l.replace(/^[ \t]+/, "") === r.replace(/^[ \t]+/, "") ? "reindent" : "change";
      rows.push({ kind: kind, a: an[0], b: an[1], anchor: true });
      pi = an[0] + 1; pj = an[1] + 1;
    });
    segment(A.length, B.length);
    return rows;
  }

  // opts: {all, ignoreWs, context, minFold}. A re-indented row is quiet when whitespace is ignored.
  function defaultShown(rows, opts) {
    var shown = new Uint8Array(rows.length), i, j;
    if (opts.all) { shown.fill(1); return shown; }
    function quiet(row) { return row.kind === "same" || (row.kind === "reindent" && opts.ignoreWs); }
    for (i = 0; i < rows.length; i++) {
      if (!quiet(rows[i]) || rows[i].anchor) {
        for (j = Math.max(0, i - opts.context); j <= Math.min(rows.length - 1, i + opts.context); j++) shown[j] = 1;
      }
    }
    // Do not fold tiny gaps: a fold row costs as much space as the lines it hides.
    i = 0;
    while (i < rows.length) {
      if (shown[i]) { i++; continue; }
      j = i;
      while (j < rows.length && !shown[j]) j++;
      if (j - i < opts.minFold) for (var q = i; q < j; q++) shown[q] = 1;
      i = j;
    }
    return shown;
  }

  // recs: [{status, role, before_hash, after_hash}], texts: Map hash -> text. A failed pass has no output:
  // it "has" q when its input does. A stage (role ptx or sass: a text the device compiler made from the
  // CUDA source, not a pass over it) is searched as a text: {pos, found} in `stages`, never a hit that
  // introduces or removes q. Returns {hits: [{pos, kind: intro|gone|has}], introduced, stages}.
  function searchHits(recs, texts, q) {
    var cache = new Map();
    function has(h) {
      if (!h) return false;
      if (!cache.has(h)) { var t = texts.get(h); cache.set(h, t !== undefined && t.indexOf(q) >= 0); }
      return cache.get(h);
    }
    var hits = [], introduced = 0, stages = [];
    recs.forEach(function (r, pos) {
      if (r.role === "ptx" || r.role === "sass") {
        stages.push({ pos: pos, found: r.status !== "failed" && has(r.after_hash) });
        return;
      }
      var b = has(r.before_hash), a = r.status === "failed" ? b : has(r.after_hash);
      if (!a && !b) return;
      var kind = a && !b ? "intro" : b && !a ? "gone" : "has";
      if (kind === "intro") introduced++;
      hits.push({ pos: pos, kind: kind });
    });
    return { hits: hits, introduced: introduced, stages: stages };
  }

  var api = {
    fmtDuration: fmtDuration, lineDiff: lineDiff, defaultShown: defaultShown,
    searchHits: searchHits
  };
  if (typeof module === "object" && module.exports) module.exports = api;
  else root.TLView = api;
})(typeof window !== "undefined" ? window : this);
