/* tltrace compile report: one pass's view: its head, actions (copy, repro, context, whitespace, wrap) and its diff or panes.
 * One part of the report's script (report-state.js has the shared state, report.js starts the page);
 * the parts share window.TLReport, where each puts its functions.
 * @requires report-state.js core.js report-view.js report-logic.js diff.js
 */
(function () {
  "use strict";

  var R = window.TLReport, S = R.S, C = window.TLCore, V = window.TLView;

  // ---- views -------------------------------------------------------------------------------------
  function numbered(lines) {
    var table = C.el("table", "tl-diff tl-plain");
    var cg = C.el("colgroup");
    cg.appendChild(C.el("col", "ln")); cg.appendChild(C.el("col", "code"));
    table.appendChild(cg);
    var tbody = C.el("tbody");
    for (var i = 0; i < lines.length; i++) {
      var tr = C.el("tr");
      tr.appendChild(C.el("td", "ln", i + 1));
      tr.appendChild(C.el("td", "code", lines[i]));
      tbody.appendChild(tr);
    }
    table.appendChild(tbody);
    return table;
  }
  function pane(title, text) {
    var p = C.el("div", "tl-pane");
    p.appendChild(C.el("h3", null, title));
    var lines = C.splitLines(text);
    if (lines === null) p.appendChild(C.el("p", "tl-empty", "(text not in this report)"));
    else p.appendChild(numbered(lines));
    return p;
  }
  function copyText(text, btn) {
    var label = btn.textContent;
    function done(ok) {
      btn.textContent = ok ? "Copied \u2713" : "Copy failed";
      setTimeout(function () { btn.textContent = label; }, 1200);
    }
    function fallback() {
      var ta = C.el("textarea");
      ta.value = text;
      ta.style.position = "fixed"; ta.style.opacity = "0";
      document.body.appendChild(ta);
      ta.select();
      var ok = false;
      try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
      document.body.removeChild(ta);
      done(ok);
    }
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(text).then(function () { done(true); }, fallback);
    } else fallback();
  }
  var NOTES = {
    "no newline at end": "Only the newline at the end changed: the text after this pass has no newline at end.",
    "newline added at end": "Only the newline at the end changed: the pass added one.",
    "whitespace only": "Whitespace only: the lines differ in spaces, tabs or blank lines, not in tokens.",
    "whitespace only (re-indented)": "Whitespace only: the pass re-indented lines (~) and changed nothing else."
  };
  function toggleExpandAll() {
    S.expandAll = !S.expandAll;
    var b = document.querySelector(".tl-context-all");
    if (b) b.textContent = S.expandAll ? "Fold context" : "Show all context";
    if (S.diff) { S.diff.shown = R.defaultShown(S.diff.rows); R.redrawDiff(); }
  }
  function statusLabel(r) { return window.TLReportLogic.statusLabel(r); }

  function showPass(pos, opts) {
    opts = opts || {};
    var view = R.$("tl-view");
    var top = view.scrollTop;
    C.clear(view);
    S.diff = null;
    if (S.aligning) R.stopAlign();
    var r = S.recs[pos];
    if (!r) { view.appendChild(C.el("p", "tl-empty", "No pass selected.")); return; }
    var before = R.textOf(r.before_hash), after = R.textOf(r.after_hash);
    var head = C.el("div", "tl-pass-head");
    var h2 = C.el("h2", null);
    var dot = C.el("span", "tl-dot " + r.status, R.DOTS[r.status] || "?");
    h2.appendChild(dot); C.appendText(h2, " " + r.name);
    head.appendChild(h2);
    var info = [];
    function say(x) { if (x && info.indexOf(x) < 0) info.push(x); }  // never "codegen \u00B7 codegen"
    say("#" + r.index); say(r.phase); say(statusLabel(r));
    // +/- only for IR against IR: for codegen it would count TIR lines against C lines.
    if (r.status === "changed") say("+" + (r.added || 0) + " \u2212" + (r.removed || 0));
    if (r.duration_s !== undefined) say(V.fmtDuration(r.duration_s));
    say(r.role); say(r.ffi); say(r.reconcile);
    head.appendChild(C.el("span", "info", info.join(" \u00B7 ")));
    if (r.parent !== undefined && r.parent !== null && S.posByIndex.has(r.parent)) {
      var ppos = S.posByIndex.get(r.parent);
      var plink = C.button("in " + S.recs[ppos].name, "Go to the enclosing pass", function () { R.select(ppos); });
      plink.className = "tl-parent";
      head.appendChild(plink);
    }
    var actions = C.el("span", "actions");
    var cb = C.button("Copy before", "Copy the IR before this pass", function () { copyText(before, cb); });
    cb.className = "tl-copy-before"; cb.disabled = before === undefined;
    actions.appendChild(cb);
    var ca = C.button("Copy after", "Copy the IR after this pass", function () { copyText(after, ca); });
    ca.className = "tl-copy-after"; ca.disabled = after === undefined;
    actions.appendChild(ca);
    var reproCmd = S.meta.repro && r.status !== "codegen" ? S.meta.repro + " " + r.index : null;
    if (reproCmd) {  // rerun this pass alone: tltrace repro (docs/rerun.md)
      var rc = C.button("Copy repro command", reproCmd, function () { copyText(reproCmd, rc); });
      rc.className = "tl-copy-repro";
      actions.appendChild(rc);
    }
    if (r.status === "changed" || r.status === "noop") {
      var ctx = C.button(S.expandAll ? "Fold context" : "Show all context",
        "Show every unchanged line of this pass, or fold them again (Shift+E)", toggleExpandAll);
      ctx.className = "tl-context-all";
      actions.appendChild(ctx);
      var ws = C.el("label", "tl-ignore-ws");
      ws.title = "Show re-indented lines (~) as unchanged";
      var wsBox = C.el("input");
      wsBox.type = "checkbox"; wsBox.checked = S.ignoreWs;
      wsBox.addEventListener("change", function () {
        S.ignoreWs = wsBox.checked;
        C.setPref("tltrace-ignore-ws", S.ignoreWs ? "1" : "0");
        showPass(S.sel, { keepScroll: true });
      });
      ws.appendChild(wsBox);
      ws.appendChild(document.createTextNode(" ignore whitespace"));
      actions.appendChild(ws);
    }
    var wrap = C.button(S.wrap ? "Wrap: on" : "Wrap: off", "Wrap long lines (between tokens) or scroll them", function () {
      S.wrap = !S.wrap;
      C.setPref("tltrace-wrap", S.wrap ? "1" : "0");
      document.body.classList.toggle("tl-nowrap", !S.wrap);
      wrap.textContent = S.wrap ? "Wrap: on" : "Wrap: off";
    });
    wrap.className = "tl-wrap";
    actions.appendChild(wrap);
    if (S.anchors[r.index] && S.anchors[r.index].length) {
      var clr = C.button("Clear alignment", "Remove the manual alignment points (F7)", function () {
        delete S.anchors[r.index]; R.saveAnchors(); showPass(S.sel, { keepScroll: true });
      });
      clr.className = "tl-clear-align";
      actions.appendChild(clr);
    }
    head.appendChild(actions);
    view.appendChild(head);
    var banner = C.el("div", "tl-align-banner");
    banner.id = "tl-align-banner"; banner.hidden = true;
    view.appendChild(banner);
    if (r.working_file) view.appendChild(C.el("div", "tl-notice", "Working file: " + r.working_file));

    if (r.status === "failed") {
      var box = C.el("div", "tl-error");
      box.appendChild(C.el("div", "lbl", "Exception"));
      box.appendChild(C.el("pre", null, r.error || "The pass did not complete (no exception was reported)."));
      if (reproCmd) box.appendChild(C.el("div", "tl-repro", "Reproduce it without the script: " + reproCmd));
      view.appendChild(box);
      var panes = C.el("div", "tl-panes");
      panes.appendChild(pane("IR before the failure", before));
      view.appendChild(panes);
    } else if (r.status === "codegen") {
      var cp = C.el("div", "tl-panes");
      var stage = { ptx: ["CUDA source (its input)", "PTX (after)"], sass: ["PTX (its input)", "SASS (after)"] }[r.role];
      cp.appendChild(pane(stage ? stage[0] : "TIR (before codegen)", before));
      if (r.role) cp.setAttribute("data-role", r.role);
      cp.appendChild(pane(stage ? stage[1] : "Generated " + (r.role ? r.role + " " : "") + "source (after)", after));
      view.appendChild(cp);
    } else {
      var A = C.splitLines(before), B = C.splitLines(after);
      if (A === null || B === null) {
        view.appendChild(C.el("p", "tl-empty", "The IR text of this pass is not in this report."));
      } else {
        if (r.status === "noop") view.appendChild(C.el("div", "tl-notice", "No change: the IR is the same before and after this pass."));
        var rows = R.lineDiff(A, B, S.anchors[r.index]);
        var note = TLDiff.explain(before, after, A, B, rows);
        if (note) {
          var nb = C.el("div", "tl-notice tl-diffnote", NOTES[note] || note);
          view.appendChild(nb);
        }
        var host = C.el("div", "tl-diffhost");
        var st = { rec: r, A: A, B: B, rows: rows, shown: R.defaultShown(rows), host: host, table: null };
        st.table = C.el("table");
        host.appendChild(st.table);
        S.diff = st;
        view.appendChild(host);
        R.redrawDiff();
      }
    }
    view.scrollTop = opts.keepScroll ? top : 0;
    R.cmp.onPass();
  }

  R.numbered = numbered;
  R.pane = pane;
  R.copyText = copyText;
  R.toggleExpandAll = toggleExpandAll;
  R.statusLabel = statusLabel;
  R.showPass = showPass;
})();
