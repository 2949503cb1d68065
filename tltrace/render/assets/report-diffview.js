/* tltrace compile report: the pass's diff: the side-by-side table, its folds, F7 manual alignment and its saved anchors.
 * One part of the report's script (report-state.js has the shared state, report.js starts the page);
 * the parts share window.TLReport, where each puts its functions.
 * @requires report-state.js core.js report-view.js report-table.js diff.js
 */
(function () {
  "use strict";

  var R = window.TLReport, S = R.S, C = window.TLCore, V = window.TLView, T = window.TLTable;

  // ---- diff ------------------------------------------------------------------------------------
  function lineDiff(A, B, anchors) { return V.lineDiff(TLDiff.align, A, B, anchors); }
  // ---- diff view state ---------------------------------------------------------------------------
  function defaultShown(rows) {
    return V.defaultShown(rows, { all: S.expandAll, ignoreWs: S.ignoreWs, context: R.CONTEXT, minFold: R.MIN_FOLD });
  }

  // The side-by-side table (report-table.js); a fold's expand buttons redraw the pass's diff.
  function renderDiffTable(state) {
    var table = T.render(state, {
      ignoreWs: S.ignoreWs,
      onReveal: function () { redrawDiff(); }
    });
    table.addEventListener("click", onDiffClick);
    return table;
  }

  function redrawDiff(scrollRow) {
    var st = S.diff;
    if (!st) return;
    var view = R.$("tl-view");
    var top = view.scrollTop;
    var table = renderDiffTable(st);
    st.host.replaceChild(table, st.table);
    st.table = table;
    view.scrollTop = top;
    if (S.aligning && S.aligning.left !== null) markPick();
    if (scrollRow) scrollRow();
  }

  // ---- F7 alignment ------------------------------------------------------------------------------
  function startAlign() {
    if (!S.diff) return;
    if (S.aligning) { stopAlign(); return; }
    S.aligning = { left: null };
    document.body.classList.add("tl-aligning");
    alignBanner("Alignment: click a line on the LEFT (before) side. Esc cancels.");
  }
  function stopAlign() {
    S.aligning = null;
    document.body.classList.remove("tl-aligning");
    alignBanner(null);
    document.querySelectorAll("tr.pick").forEach(function (t) { t.classList.remove("pick"); });
  }
  function alignBanner(text) {
    var b = R.$("tl-align-banner");
    if (!b) return;
    b.hidden = !text;
    b.textContent = text || "";
  }
  function markPick() {
    var tr = S.diff.table.querySelector('tr[data-l="' + S.aligning.left + '"]');
    if (tr) tr.classList.add("pick");
  }
  function onDiffClick(ev) {
    if (!S.aligning || !S.diff) return;
    var td = ev.target.closest("td");
    var tr = ev.target.closest("tr");
    if (!td || !tr || tr.classList.contains("fold")) return;
    var left = td.classList.contains("l"), right = td.classList.contains("r");
    if (S.aligning.left === null) {
      if (!left || !tr.hasAttribute("data-l")) return;
      S.aligning.left = parseInt(tr.getAttribute("data-l"), 10);
      markPick();
      alignBanner("Alignment: line " + (S.aligning.left + 1) + " picked; now click a line on the RIGHT (after) side.");
    } else {
      if (!right || !tr.hasAttribute("data-r")) return;
      var li = S.aligning.left, ri = parseInt(tr.getAttribute("data-r"), 10);
      var key = S.diff.rec.index;
      var list = (S.anchors[key] || []).filter(function (an) {
        return (an[0] < li && an[1] < ri) || (an[0] > li && an[1] > ri);  // drop anchors that would cross
      });
      list.push([li, ri]);
      list.sort(function (x, y) { return x[0] - y[0]; });
      S.anchors[key] = list;
      saveAnchors();
      stopAlign();
      R.showPass(S.sel, { keepScroll: true });
    }
  }

  // F7 alignments are kept per report (and pass) across reloads.
  function anchorsKey() { return "tltrace-anchors:" + (S.meta.run_id || location.pathname); }
  function loadAnchors() {
    try {
      var a = JSON.parse(C.getPref(anchorsKey()) || "{}");
      if (a && typeof a === "object") S.anchors = a;
    } catch (e) { S.anchors = {}; }
  }
  function saveAnchors() {
    var keep = {};
    for (var k in S.anchors) if (Object.prototype.hasOwnProperty.call(S.anchors, k) && S.anchors[k].length) keep[k] = S.anchors[k];
    C.setPref(anchorsKey(), JSON.stringify(keep));
  }

  R.lineDiff = lineDiff;
  R.defaultShown = defaultShown;
  R.renderDiffTable = renderDiffTable;
  R.redrawDiff = redrawDiff;
  R.startAlign = startAlign;
  R.stopAlign = stopAlign;
  R.alignBanner = alignBanner;
  R.markPick = markPick;
  R.onDiffClick = onDiffClick;
  R.anchorsKey = anchorsKey;
  R.loadAnchors = loadAnchors;
  R.saveAnchors = saveAnchors;
})();
