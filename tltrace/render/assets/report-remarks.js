/* tltrace compile report: remarks (`tltrace run --remarks`; the manifest's `remarks`, remarks/recorder.py)
 * and the call site (the manifest's `stack`, callsites/stack.py).
 *
 * meta.remarks.passes holds what each top-level pass wrote to stderr: {index, name, lines, kinds,
 * text, truncated}. Each such pass gets a badge in the pass list (its line count; its kinds in the
 * title), and its text is shown under its diff (or under the error of a FAILED pass), as text.
 * meta.stack puts "called from FILE:LINE FUNC" first in the header, a link into the Source pane
 * (`sm`, sourcemap.js's) when the pane holds that file. report.js calls
 * window.tltraceRemarks.attach(ctx) once the page is built (after the Source pane).
 * @requires core.js
 */
(function (root) {
  "use strict";

  var C = root.TLCore, doc = root.document, by = new Map(), ctx;

  function lines(p) { return (p.lines || 0) + " line" + (p.lines === 1 ? "" : "s"); }
  function kinds(p) { return Array.isArray(p.kinds) ? p.kinds.join(", ") : ""; }
  function show() {
    var view = doc.getElementById("tl-view"), r = ctx.recs[ctx.selected()], p = r && by.get(r.index);
    if (!p || view.querySelector(".tl-remarks")) return;
    var box = C.el("div", "tl-remarks");
    box.appendChild(C.el("div", "lbl", "Remarks: what " + p.name + " wrote to stderr (" + lines(p) + (kinds(p) ? "; " + kinds(p) : "") + ")"));
    box.appendChild(C.el("pre", null, p.text));
    if (p.truncated) box.appendChild(C.el("div", "tl-notice", "The first 64 KiB of " + p.bytes + " bytes are kept."));
    view.appendChild(box);
  }
  function callSite(stack, sm) {
    var f = Array.isArray(stack) && stack[stack.length - 1], box = doc.getElementById("tl-meta");
    if (!f || !box) return;
    var file = String(f.file), name = file.charAt(0) === "(" ? file + " " + f.func : file.replace(/^.*[\\/]/, "") + ":" + f.line + " " + f.func;
    var s = C.el("span", "tl-callsite", "called from ");
    s.title = stack.map(function (x) { return x.file + ":" + x.line + " " + x.func; }).join("\n");
    var a = C.el(sm && sm.hasSource(file) ? "a" : "code", null, name);
    if (a.tagName === "A") {
      a.href = "#";
      a.addEventListener("click", function (ev) { ev.preventDefault(); sm.pick(file, f.line); });
    }
    s.appendChild(a);
    box.insertBefore(s, box.firstChild);
  }
  function attach(c) {
    ctx = c;
    callSite(c.meta.stack, c.sm);
    var rem = c.meta.remarks;
    (rem && Array.isArray(rem.passes) ? rem.passes : []).forEach(function (p) {
      if (p && typeof p.index === "number" && typeof p.text === "string") by.set(p.index, p);
    });
    if (!by.size) return;
    c.items.forEach(function (li, pos) {
      var p = by.get(c.recs[pos].index);
      if (!p) return;
      var b = C.el("span", "tl-remark-badge" + (/ws_skipped|layout_fallback/.test(kinds(p)) ? " warn" : ""), "\u2709" + (p.lines || 0));
      b.title = lines(p) + " on stderr" + (kinds(p) ? ": " + kinds(p) : "");
      li.insertBefore(b, li.querySelector(".dur"));
    });
    new root.MutationObserver(show).observe(doc.getElementById("tl-view"), { childList: true });
    show();
  }

  root.tltraceRemarks = { attach: attach };
})(window);
