/* tltrace compile report: the backend build (meta.build, format/build.py): a codegen call's sources labelled
 * for what they are (generated, or your edit compiled in its place) and the "edit vs generated" view.
 * A failed build's head and errors come ready-made in meta.build_error (render/pages.py).
 * @requires report-state.js core.js report-table.js
 */
(function () {
  "use strict";

  var R = window.TLReport, S = R.S, C = window.TLCore;

  // The codegen record's panes: what codegen generated, or (PATCHED) the edit compiled in its place.
  R.codegenPanes = function (r, before, after) {
    var b = S.meta.build, out = C.el("div"), cp = C.el("div", "tl-panes"), what = r.role ? r.role + " " : "";
    var e = ((b && b.edits) || []).filter(function (x) { return x.record === r.index; })[0];
    // PTX and SASS stages (run --ptx, --sass): built from the source before them, never edited.
    var stage = { ptx: ["CUDA source (its input)", "PTX (after)"], sass: ["PTX (its input)", "SASS (after)"] }[r.role];
    if (r.role) cp.setAttribute("data-role", r.role);
    cp.appendChild(R.pane(stage ? stage[0] : "TIR (before codegen)", before));
    if (stage || (!e && r.reconcile !== "PATCHED")) {
      cp.appendChild(R.pane(stage ? stage[1] : "Generated " + what + "source (after)", after));
      out.appendChild(cp);
      return out;
    }
    var note = r.reconcile === "NOTE", f = String(r.working_file).split("/").pop();
    cp.appendChild(R.pane(note ? "Your edit of " + f + " (after; not compiled)" : "Compiled " + what + "source (after): your edit of " + f, after));
    out.appendChild(C.el("div", "tl-notice tl-edited", (note ? "NOTE: your edit is shown, but the backend built the source TileLang generated" :
      "PATCHED: the backend compiled your edit, not the source TileLang generated") + (e ? " (+" + e.added + " \u2212" + e.removed + " lines)" : "")));
    var A = C.splitLines(e && R.textOf(e.generated_hash)), B = C.splitLines(after);
    if (A && B) {
      var box = C.el("div", "tl-editdiff"), st = { rows: R.lineDiff(A, B, []), A: A, B: B };
      box.appendChild(C.el("h3", null, "Edit vs generated: TileLang's source (left), your edit (right)"));
      st.shown = R.defaultShown(st.rows);
      var draw = function () {
        var t = window.TLTable.render(st, { onReveal: draw });
        if (st.table) box.replaceChild(t, st.table); else box.appendChild(t);
        st.table = t;
      };
      draw();
      out.appendChild(box);
    }
    out.appendChild(cp);
    return out;
  };
})();
