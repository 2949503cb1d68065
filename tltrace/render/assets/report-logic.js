/* tltrace compile report: the pure parts of the page's logic (no DOM), tested under node
 * (tests/test_report_js.py).
 *
 * runStateOf(meta, ageMs, staleMs): complete | error | interrupted | running | incomplete (a
 *   "running" file untouched for staleMs belongs to a run that was killed);
 * posOfFragment(recs, posByIndex, frag, resolveRef): the pass a link names (as --pass does,
 *   through TLCore.resolveRef; old links' name@index still work), or -1;
 * startPos(recs, meta): the pass a report opens on without a link: the failed one; after a
 *   failure past the last pass, the last codegen; else the first changed; else the first;
 * firstFailed(recs), statusLabel(rec), isTextField(element): small answers the views share.
 * Runs in the report (window.TLReportLogic) and under node (module.exports).
 */
(function (root) {
  "use strict";

  function runStateOf(meta, ageMs, staleMs) {
    var st = meta.status || "running";
    if (st === "error" && /^KeyboardInterrupt/.test(String(meta.error || ""))) return "interrupted";
    if (st === "complete" || st === "error" || st === "interrupted") return st;  // "interrupted": the records say so
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

  function startPos(recs, meta) {
    var pos = firstWith(recs, "failed");
    // Failed after the last pass (e.g. an edited source that does not compile): open the source.
    if (pos < 0 && meta.status === "error") {
      for (var c = recs.length - 1; c >= 0 && pos < 0; c--) if (recs[c].status === "codegen") pos = c;
    }
    if (pos < 0) pos = firstWith(recs, "changed");
    if (pos < 0) pos = recs.length ? 0 : -1;
    return pos;
  }

  function statusLabel(r) {
    return { changed: "changed", noop: "no-op", failed: "failed", codegen: "codegen" }[r.status] || r.status;
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
    runStateOf: runStateOf, posOfFragment: posOfFragment, startPos: startPos, firstFailed: firstFailed,
    statusLabel: statusLabel, isTextField: isTextField
  };
  if (typeof module === "object" && module.exports) module.exports = api;
  else root.TLReportLogic = api;
})(typeof window !== "undefined" ? window : this);
