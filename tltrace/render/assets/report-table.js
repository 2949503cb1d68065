/* tltrace compile report: the side-by-side diff table of one pass (window.TLTable).
 *
 * render(state, opts) -> <table>: state {rows, shown, A, B} (rows from TLView.lineDiff, shown
 * from TLView.defaultShown), opts {ignoreWs, onReveal(state)}: a fold row's expand buttons
 * mark rows shown and call onReveal to redraw. Each side has its gutter (- + ~) so the diff
 * reads without colour; word highlights only inside a "change" pair (TLDiff.wordDiff); long
 * lines break between tokens (<wbr>), never inside an identifier. Text only, never markup.
 * @requires core.js diff.js
 */
(function (root) {
  "use strict";

  var EXPAND_STEP = 20;     // lines revealed by one expand button
  var C = root.TLCore;

  // A row that is not shown as changed: same, and re-indented ones when whitespace is ignored.
  function quiet(row, ignoreWs) { return row.kind === "same" || (row.kind === "reindent" && ignoreWs); }
  // A changed run of blanks (new indentation) is not highlighted: the gutter and ~ rows say it.
  var BLANKS = /^[ \t]+$/;
  function fillWords(td, tokens, mask) {
    var buf = "";
    for (var i = 0; i < tokens.length; i++) {
      if (mask[i] && BLANKS.test(tokens[i]) && !(i + 1 < tokens.length && mask[i + 1] && i > 0 && mask[i - 1])) {
        buf += tokens[i];
      } else if (mask[i]) {
        if (buf) { appendCode(td, buf); buf = ""; }
        var j = i, s = "";
        while (j < tokens.length && mask[j]) { s += tokens[j]; j++; }
        var w = C.el("span", "w");
        appendCode(w, s);
        td.appendChild(w);
        i = j - 1;
      } else buf += tokens[i];
    }
    if (buf) appendCode(td, buf);
  }
  // Code text with a break opportunity (<wbr>) after each bracket, comma or operator, so a long
  // line wraps between tokens, never inside an identifier or a number. Copying is unaffected.
  var BREAK_AFTER = /[^A-Za-z0-9_ \t.]+/g;
  function appendCode(n, text) {
    if (text.length < 40) { C.appendText(n, text); return; }
    var last = 0, m;
    BREAK_AFTER.lastIndex = 0;
    while ((m = BREAK_AFTER.exec(text)) !== null) {
      var end = m.index + m[0].length;
      C.appendText(n, text.slice(last, end));
      n.appendChild(document.createElement("wbr"));
      last = end;
    }
    if (last < text.length) C.appendText(n, text.slice(last));
  }

  function render(state, opts) {
    var table = C.el("table", "tl-diff");
    var cg = C.el("colgroup");
    ["ln", "g", "code", "ln", "g", "code"].forEach(function (c) { cg.appendChild(C.el("col", c)); });
    table.appendChild(cg);
    var tbody = C.el("tbody");
    var rows = state.rows, shown = state.shown, A = state.A, B = state.B;
    var i = 0;
    while (i < rows.length) {
      if (!shown[i]) {
        var j = i;
        while (j < rows.length && !shown[j]) j++;
        tbody.appendChild(foldRow(state, i, j, opts));
        i = j;
        continue;
      }
      tbody.appendChild(diffRow(rows[i], A, B, opts));
      i++;
    }
    table.appendChild(tbody);
    return table;
  }
  function diffRow(row, A, B, opts) {
    var tr = C.el("tr");
    var ll = row.a === null ? null : A[row.a], rl = row.b === null ? null : B[row.b];
    var k = quiet(row, opts.ignoreWs) ? "same" : row.kind;
    // Each side's class and gutter: the diff reads without colour too.
    var lc = k === "same" ? "" : row.a === null ? "empty" : k === "reindent" ? "re" : "del";
    var rc = k === "same" ? "" : row.b === null ? "empty" : k === "reindent" ? "re" : "add";
    var lg = lc === "del" ? "\u2212" : lc === "re" ? "~" : "", rg = rc === "add" ? "+" : rc === "re" ? "~" : "";
    if (row.a !== null) tr.setAttribute("data-l", row.a);
    if (row.b !== null) tr.setAttribute("data-r", row.b);
    tr.setAttribute("data-kind", row.kind);
    if (row.anchor) tr.className = "anchor";
    var tdlc = C.el("td", "code l " + lc), tdrc = C.el("td", "code r " + rc);
    if (k === "change") {
      var w = TLDiff.wordDiff(ll, rl);  // only a true pair gets word highlights
      fillWords(tdlc, w[0], w[1]);
      fillWords(tdrc, w[2], w[3]);
    } else {
      if (ll !== null) appendCode(tdlc, ll);
      if (rl !== null) appendCode(tdrc, rl);
    }
    tr.appendChild(C.el("td", "ln l " + lc, row.a === null ? "" : row.a + 1));
    tr.appendChild(C.el("td", "g l " + lc, lg));
    tr.appendChild(tdlc);
    tr.appendChild(C.el("td", "ln r " + rc, row.b === null ? "" : row.b + 1));
    tr.appendChild(C.el("td", "g r " + rc, rg));
    tr.appendChild(tdrc);
    return tr;
  }
  function foldRow(state, i, j, opts) {
    var tr = C.el("tr", "fold");
    var td = C.el("td");
    td.colSpan = 6;
    var n = j - i;
    function reveal(lo, hi) {
      for (var q = lo; q < hi; q++) state.shown[q] = 1;
      opts.onReveal(state);
    }
    if (i > 0 && n > EXPAND_STEP) {
      td.appendChild(C.button("\u2193 Expand " + EXPAND_STEP, "Show " + EXPAND_STEP + " more lines below the code above",
        function () { reveal(i, i + EXPAND_STEP); }));
    }
    if (j < state.rows.length && n > EXPAND_STEP) {
      td.appendChild(C.button("\u2191 Expand " + EXPAND_STEP, "Show " + EXPAND_STEP + " more lines above the code below",
        function () { reveal(j - EXPAND_STEP, j); }));
    }
    var all = C.button("\u2195 Expand all " + n, "Show the " + n + " hidden unchanged lines", function () { reveal(i, j); });
    all.className = "tl-expand-all";
    td.appendChild(all);
    td.appendChild(document.createTextNode(" " + n + " unchanged line" + (n === 1 ? "" : "s") + " hidden"));
    tr.appendChild(td);
    return tr;
  }

  root.TLTable = { render: render, EXPAND_STEP: EXPAND_STEP };
})(window);
