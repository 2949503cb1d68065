/* tltrace compile report: the backend build (meta.build, format/build.py): a codegen call's sources labelled
 * for what they are (generated, or your edit compiled in its place), the "edit vs generated" view, and a
 * failed build's errors at the working file's lines.
 * @requires report-state.js core.js report-table.js
 */
(function () {
  "use strict";

  var R = window.TLReport, S = R.S, C = window.TLCore, T = window.TLTable;

  function build() { var b = S.meta && S.meta.build; return b && typeof b === "object" ? b : null; }
  function editOf(r) {
    var b = build();
    return ((b && Array.isArray(b.edits)) ? b.edits : []).filter(function (e) { return e && e.record === r.index; })[0] || null;
  }
  // The codegen record's panes: what codegen generated, or (PATCHED) the edit that was compiled in its place.
  function codegenPanes(r, before, after) {
    var cp = C.el("div", "tl-panes"), e = editOf(r), what = r.role ? r.role + " " : "";
    if (r.role) cp.setAttribute("data-role", r.role);
    cp.appendChild(R.pane("TIR (before codegen)", before));
    var edited = e || r.reconcile === "PATCHED";
    cp.appendChild(R.pane(edited ? "Compiled " + what + "source (after): your edit" + (r.working_file ? " of " + String(r.working_file).split("/").pop() : "") :
      "Generated " + what + "source (after)", after));
    var out = C.el("div");
    if (edited) out.appendChild(C.el("div", "tl-notice tl-edited", "PATCHED: the backend compiled your edit, not the source TileLang generated" +
      (e ? " (+" + (e.added || 0) + " \u2212" + (e.removed || 0) + " lines against it)" : "")));
    var gen = e ? R.textOf(e.generated_hash) : undefined;
    var A = C.splitLines(gen), B = C.splitLines(after);
    if (e && A !== null && B !== null) {
      var box = C.el("div", "tl-editdiff");
      box.appendChild(C.el("h3", null, "Edit vs generated: TileLang's source (left) against your edit (right)"));
      var st = { rows: R.lineDiff(A, B, []), A: A, B: B };
      st.shown = R.defaultShown(st.rows);
      var draw = function () {
        var t = T.render(st, { ignoreWs: false, onReveal: draw });
        if (st.table) box.replaceChild(t, st.table); else box.appendChild(t);
        st.table = t;
      };
      draw();
      out.appendChild(box);
    }
    out.appendChild(cp);
    return out;
  }
  // A failed build: its head and its text (the compiler's errors first, then TileLang's error); null otherwise.
  function buildFailure(m) {
    var b = build();
    if (!b || b.status !== "failed") return null;
    var errs = (Array.isArray(b.diagnostics) ? b.diagnostics : []).filter(function (d) { return /error/.test(String(d.severity)); });
    var at = function (d) { return d.file + ":" + d.line + (d.column ? ":" + d.column : "") + ": " + d.severity + ": " + d.message; };
    var head = "Build failed (" + (b.compiler || "the backend's compiler") + (errs.length ? ", " + errs.length + " error" + (errs.length === 1 ? "" : "s") : "") + "):";
    var first = errs.length ? at(errs[0]) : b.why ? "diagnostics not recorded: " + b.why : String(m.error || "").split("\n")[0];
    return { head: head, first: first, text: (b.log ? b.log + "\n\n" : "") + String(m.error || "") };
  }

  R.editOf = editOf;
  R.codegenPanes = codegenPanes;
  R.buildFailure = buildFailure;
})();
