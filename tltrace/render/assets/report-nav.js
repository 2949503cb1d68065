/* tltrace compile report: selecting a pass: links by name (#Simplify#2, #16), j/k, and search.
 * One part of the report's script (report-state.js has the shared state, report.js starts the page);
 * the parts share window.TLReport, where each puts its functions.
 * @requires report-state.js core.js report-view.js report-logic.js
 */
(function () {
  "use strict";

  var R = window.TLReport, S = R.S, C = window.TLCore, V = window.TLView;

  function fragmentOf(pos) { return C.refOf(S.recs, pos); }
  // A link names a pass as --pass does (TLCore.resolveRef): by name in any case, name#k for the
  // k-th, index (#16), the end of a dotted name (#BindTarget); old links' name@index still work.
  function posOfFragment(frag) { return window.TLReportLogic.posOfFragment(S.recs, S.posByIndex, frag, C.resolveRef); }
  function showMissing(frag) {
    S.missing = frag;
    S.sel = -1;
    R.markSelected();
    S.diff = null;
    var view = R.$("tl-view");
    C.clear(view);
    var why = C.resolveRef(S.recs, frag).error;
    var p = C.el("p", "tl-empty tl-missing", why && !/^no pass named/.test(why) ?
      "No pass \u201C" + frag + "\u201D in this run: " + why + ". " : "No pass named \u201C" + frag + "\u201D in this run. ");
    p.appendChild(document.createTextNode("Pick one on the left, press j, or link by name (#Simplify, #Simplify#2 for the second), by the end of a name (#BindTarget) or by index (#16)."));
    view.appendChild(p);
  }
  function select(pos, opts) {
    if (pos < 0 || pos >= S.recs.length) return;
    S.missing = null;
    if (S.visible.indexOf(pos) < 0) {  // a jump (search, link) to a filtered-out pass clears the filters
      S.phase = null; S.filter = null; S.hideNoop = false; R.$("tl-hide-noop").checked = false;
      S.sel = pos;
      R.applyFilters();
    }
    S.sel = pos;
    R.markSelected();
    R.showPass(pos, opts);
    var frag = "#" + encodeURIComponent(fragmentOf(pos));
    if (location.hash !== frag) {
      try { history.replaceState(null, "", frag); } catch (e) { /* some file:// setups refuse */ }
    }
  }
  function move(delta) {
    if (!S.visible.length) return;
    var i = S.visible.indexOf(S.sel);
    var next = i < 0 ? 0 : Math.max(0, Math.min(S.visible.length - 1, i + delta));
    if (S.visible[next] !== S.sel) select(S.visible[next]);
  }
  // n/p: the next or previous visible pass that changed the IR (no-ops skipped); at either end, stay.
  function moveChanged(step) {
    var pos = window.TLReportLogic.nextChanged(S.recs, S.visible, S.sel, step);
    if (pos >= 0 && pos !== S.sel) select(pos);
  }
  function hashText() {
    try { return decodeURIComponent(location.hash.slice(1)); } catch (e) { return location.hash.slice(1); }
  }
  function fromHash() { return posOfFragment(hashText()); }

  // ---- search ------------------------------------------------------------------------------------
  function runSearch(q) {
    var box = R.$("tl-search-results");
    S.items.forEach(function (li) { li.classList.remove("hit"); });
    C.clear(box);
    if (!q) { box.hidden = true; S.search = null; return; }
    var found = V.searchHits(S.recs, S.texts, q), hits = found.hits, introduced = found.introduced;
    hits.forEach(function (h) { S.items[h.pos].classList.add("hit"); });
    found.stages.forEach(function (h) { if (h.found) S.items[h.pos].classList.add("hit"); });
    S.search = { q: q };
    var head = C.el("div", "tl-sr-head", hits.length ? (hits.length + (hits.length === 1 ? " pass contains \u201C" : " passes contain \u201C") + q + "\u201D; " +
      introduced + (introduced === 1 ? " introduces it" : " introduce it")) : "No pass contains \u201C" + q + "\u201D");
    box.appendChild(head);
    // The PTX and SASS stages are texts the device compiler made, not passes: found or not, first.
    found.stages.forEach(function (h) {
      var r = S.recs[h.pos], row = C.el("div", "tl-sr tl-sr-stage");
      row.setAttribute("data-pos", h.pos);
      row.appendChild(C.el("span", "tl-sr-tag " + (h.found ? "has" : "none"), h.found ? "found in" : "not in"));
      row.appendChild(C.el("span", "ix", "#" + r.index));
      row.appendChild(C.el("span", "nm", String(r.role).toUpperCase() + " (" + r.name + ")"));
      row.title = h.found ? "The " + String(r.role).toUpperCase() + " text contains it" : "The " + String(r.role).toUpperCase() + " text does not contain it";
      row.addEventListener("click", function () { box.hidden = true; if (h.found) jumpToHit(h.pos, q); else select(h.pos); });
      box.appendChild(row);
    });
    var order = hits.filter(function (h) { return h.kind !== "has"; }).concat(hits.filter(function (h) { return h.kind === "has"; }));
    order.slice(0, 400).forEach(function (h) {
      var r = S.recs[h.pos];
      var row = C.el("div", "tl-sr");
      row.setAttribute("data-pos", h.pos);
      row.appendChild(C.el("span", "tl-sr-tag " + h.kind, h.kind === "intro" ? "introduces" : h.kind === "gone" ? "removes" : "contains"));
      row.appendChild(C.el("span", "ix", "#" + r.index));
      row.appendChild(C.el("span", "nm", r.name));
      row.addEventListener("click", function () { box.hidden = true; jumpToHit(h.pos, q); });
      box.appendChild(row);
    });
    box.hidden = false;
  }
  // Escape: the search box, its results and the sidebar's highlights all go.
  function clearSearch() {
    var search = R.$("tl-search");
    if (search) search.value = "";
    runSearch("");
  }
  function jumpToHit(pos, q) {
    select(pos);
    var st = S.diff;
    if (!st) return;
    var target = -1;
    for (var i = 0; i < st.rows.length && target < 0; i++) {
      var row = st.rows[i];
      if ((row.b !== null && st.B[row.b].indexOf(q) >= 0) || (row.a !== null && st.A[row.a].indexOf(q) >= 0)) target = i;
    }
    if (target < 0) return;
    // Prefer the first changed row that mentions q (where it was introduced).
    for (var k = target; k < st.rows.length; k++) {
      var rr = st.rows[k];
      if (rr.kind !== "same" && rr.b !== null && st.B[rr.b].indexOf(q) >= 0) { target = k; break; }
    }
    st.shown[target] = 1;
    var row2 = st.rows[target];
    R.redrawDiff(function () {
      var sel = row2.b !== null ? 'tr[data-r="' + row2.b + '"]' : 'tr[data-l="' + row2.a + '"]';
      var tr = st.table.querySelector(sel);
      if (tr) { tr.classList.add("hitrow"); tr.scrollIntoView({ block: "center" }); }
    });
  }

  R.fragmentOf = fragmentOf;
  R.posOfFragment = posOfFragment;
  R.showMissing = showMissing;
  R.select = select;
  R.move = move;
  R.moveChanged = moveChanged;
  R.hashText = hashText;
  R.fromHash = fromHash;
  R.runSearch = runSearch;
  R.clearSearch = clearSearch;
  R.jumpToHit = jumpToHit;
})();
