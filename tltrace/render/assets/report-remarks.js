/* tltrace compile report: remarks (`tltrace run --remarks`; the manifest's `remarks`, session/remarks.py).
 *
 * meta.remarks.passes holds what each top-level pass wrote to stderr: {index, name, lines, kinds,
 * text, truncated}. Each such pass gets a badge in the pass list (its line count; its kinds in the
 * title), and its text is shown under its diff (or under the error of a FAILED pass), as text.
 * report.js calls window.tltraceRemarks.attach(ctx) once the page is built.
 * @requires core.js
 */
(function (root) {
  "use strict";

  var C = root.TLCore;
  var byIndex = new Map(), ctx = null;

  function load(meta) {
    byIndex = new Map();
    var rem = meta && meta.remarks;
    if (!rem || !Array.isArray(rem.passes)) return;
    rem.passes.forEach(function (p) {
      if (p && typeof p.index === "number" && typeof p.text === "string") byIndex.set(p.index, p);
    });
  }
  function kinds(p) { return Array.isArray(p.kinds) ? p.kinds.map(String) : []; }

  function badges() {
    ctx.items.forEach(function (li, pos) {
      var r = ctx.recs[pos], p = r ? byIndex.get(r.index) : null;
      if (!p || li.querySelector(".tl-remark-badge")) return;
      var ks = kinds(p);
      var b = C.el("span", "tl-remark-badge" + (ks.indexOf("ws_skipped") >= 0 || ks.indexOf("layout_fallback") >= 0 ? " warn" : ""), "\u2709" + (p.lines || 0));
      b.title = (p.lines || 0) + " line" + (p.lines === 1 ? "" : "s") + " on stderr" + (ks.length ? ": " + ks.join(", ") : "");
      li.insertBefore(b, li.querySelector(".dur"));
    });
  }

  // Under the pass on screen: its remark, once (the view is rebuilt whenever a pass is opened).
  function show() {
    var view = root.document.getElementById("tl-view");
    if (!view || view.querySelector(".tl-remarks")) return;
    var r = ctx.recs[ctx.selected()], p = r ? byIndex.get(r.index) : null;
    if (!p) return;
    var box = C.el("div", "tl-remarks");
    var ks = kinds(p);
    box.appendChild(C.el("div", "lbl", "Remarks: what " + p.name + " wrote to stderr (" + (p.lines || 0) + " line" +
      (p.lines === 1 ? "" : "s") + (ks.length ? "; " + ks.join(", ") : "") + ")"));
    box.appendChild(C.el("pre", null, p.text));
    if (p.truncated) box.appendChild(C.el("div", "tl-notice", "The first 64 KiB of " + p.bytes + " bytes are kept."));
    view.appendChild(box);
  }

  function attach(c) {
    ctx = c;
    load(c.meta);
    if (!byIndex.size) return;
    badges();
    var view = root.document.getElementById("tl-view");
    if (view && root.MutationObserver) new root.MutationObserver(show).observe(view, { childList: true });
    show();
  }

  root.tltraceRemarks = { attach: attach };
})(typeof window !== "undefined" ? window : this);
