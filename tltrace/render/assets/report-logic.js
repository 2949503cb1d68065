/* tltrace compile report: the pure parts of the page's logic (no DOM), tested under node
 * (tests/test_report_js.py).
 *
 * runStateOf(meta, ageMs, staleMs): complete | error | interrupted | exited | running | incomplete (a
 *   "running" file untouched for staleMs belongs to a run that was killed);
 * posOfFragment(recs, posByIndex, frag, resolveRef): the pass a link names (as --pass does,
 *   through TLCore.resolveRef; old links' name@index still work), or -1;
 * startPos(recs, meta, textOf): the pass a report opens on without a link: the failed one; after a
 *   failure past the last pass, the last codegen; else the first tile-level change (tileLevel: its
 *   changed lines hold a tile op or a layout; without the texts, the first LayoutInference or
 *   LowerTileOp that changed); else the first changed; else the first;
 * tileLevel(before, after): whether a change adds or removes (not only moves) a line with a tile op
 *   (T.copy, T.gemm, T.fill, T.Parallel, ...) or a layout annotation;
 * firstFailed(recs), statusLabel(rec), isTextField(element): small answers the views share;
 * nextChanged(recs, order, sel, step): the n/p keys' pass (the next or previous one that is not a no-op).
 * Runs in the report (window.TLReportLogic) and under node (module.exports).
 */
(function (root) {
  "use strict";

  function runStateOf(meta, ageMs, staleMs) {
    var st = meta.status || "running";
    if (st === "error" && /^KeyboardInterrupt/.test(String(meta.error || ""))) return "interrupted";
    // "interrupted", "exited" (its process went before its records were all written): the records say so
    if (st === "complete" || st === "error" || st === "interrupted" || st === "exited") return st;
    return ageMs < staleMs ? "running" : "incomplete";
  }

  function posOfFragment(recs, posByIndex, frag, resolveRef) {
    if (!frag) return -1;
    var at = frag.lastIndexOf("@");
    if (at > 0 && /^\d+$/.test(frag.slice(at + 1))) {
      var ix = parseInt(frag.slice(at + 1), 10);
      if (posByIndex.has(ix) && recs[posByIndex.get(ix)].name.toLowerCase() === frag.slice(0, at).toLowerCase()) return posByIndex.get(ix);
    }
    return resolveRef(recs, frag).pos;
  }

  function firstWith(recs, status) {
    for (var i = 0; i < recs.length; i++) if (recs[i].status === status) return i;
    return -1;
  }
  function firstFailed(recs) { return firstWith(recs, "failed"); }

  // A line of TileLang's tile level: a tile op's call, a tile loop, or a layout (annotation or map).
  var TILE = /\bT\.(copy|c2d_im2col|gemm\w*|wgmma\w*|fill|clear|reduce\w*|cumsum|atomic\w*|Parallel|Pipelined|Persistent|annotate_layout|use_swizzle|tma_\w*)\s*\(|\blayout_map\b|\btl\.layout|\bFragment\(|\bLayout\(/;
  // The lines a change adds or removes, whitespace aside (a re-indented line is neither).
  function changedLines(before, after) {
    var count = new Map(), out = [];
    String(before).split("\n").forEach(function (l) { l = l.trim(); count.set(l, (count.get(l) || 0) + 1); });
    String(after).split("\n").forEach(function (l) {
      l = l.trim();
      var n = count.get(l) || 0;
      if (n > 0) count.set(l, n - 1); else out.push(l);
    });
    count.forEach(function (n, l) { while (n-- > 0) out.push(l); });
    return out;
  }
  function tileLevel(before, after) {
    if (typeof before !== "string" || typeof after !== "string") return false;
    return changedLines(before, after).some(function (l) { return TILE.test(l); });
  }
  var TILE_PASS = /(^|\.)(LayoutInference|LowerTileOp)$/;
  // The first change of the tile level: by what it changed when the texts are there, else by name.
  function firstTileChange(recs, textOf) {
    var byName = -1;
    for (var i = 0; i < recs.length; i++) {
      var r = recs[i];
      if (r.status !== "changed") continue;
      var b = textOf ? textOf(r.before_hash) : undefined, a = textOf ? textOf(r.after_hash) : undefined;
      if (typeof b === "string" && typeof a === "string") { if (tileLevel(b, a)) return i; }
      else if (byName < 0 && TILE_PASS.test(r.name)) byName = i;
    }
    return byName;
  }

  function startPos(recs, meta, textOf) {
    var pos = firstWith(recs, "failed");
    // Failed after the last pass (e.g. an edited source that does not compile): open the source.
    if (pos < 0 && meta.status === "error") {
      for (var c = recs.length - 1; c >= 0 && pos < 0; c--) if (recs[c].status === "codegen") pos = c;
    }
    if (pos < 0) pos = firstTileChange(recs, textOf);
    if (pos < 0) pos = firstWith(recs, "changed");
    if (pos < 0) pos = recs.length ? 0 : -1;
    return pos;
  }

  function statusLabel(r) {
    return { changed: "changed", noop: "no-op", failed: "failed", codegen: "codegen" }[r.status] || r.status;
  }

  // The n/p keys: the next (step 1) or previous (-1) position of `order` (the list's visible passes)
  // after `sel` whose pass is not a no-op (it changed the IR, failed, or generated source); -1 when
  // there is none. From a `sel` not in `order`, the first or last such pass.
  function nextChanged(recs, order, sel, step) {
    var i = order.indexOf(sel);
    if (i < 0) i = step > 0 ? -1 : order.length;
    for (i += step; i >= 0 && i < order.length; i += step) {
      var r = recs[order[i]];
      if (r && r.status !== "noop") return order[i];
    }
    return -1;
  }

  // Keys go to the report unless a field takes typing (a checked checkbox or a clicked button does not).
  var NOT_TYPED = /^(checkbox|radio|button|submit|reset|range|color|file|image)$/i;
  function isTextField(t) {
    if (!t || !t.tagName) return false;
    if (t.isContentEditable) return true;
    if (t.tagName === "TEXTAREA" || t.tagName === "SELECT") return true;
    return t.tagName === "INPUT" && !NOT_TYPED.test(t.type || "text");
  }

  var api = {
    runStateOf: runStateOf, posOfFragment: posOfFragment, startPos: startPos, tileLevel: tileLevel, firstFailed: firstFailed,
    statusLabel: statusLabel, isTextField: isTextField, nextChanged: nextChanged
  };
  if (typeof module === "object" && module.exports) module.exports = api;
  else root.TLReportLogic = api;
})(typeof window !== "undefined" ? window : this);
