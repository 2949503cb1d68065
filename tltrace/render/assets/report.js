/* tltrace HTML report: starts the page (wires the compare view, the keys and the sidebar's
 * chrome, then builds the page from the data chunks and opens a pass).
 *
 * The page carries data, not markup: <script type="application/json" class="tl-d">
 * chunks appended while the compile runs ({"t":"meta"}, {"t":"text"}, {"t":"rec"}; a text
 * is whole or the changes to an earlier one, core.js applyDelta).
 * A chunk cut short by a kill does not parse and is skipped. Everything shown is
 * built with textContent / createTextNode, never innerHTML, so IR text can only
 * ever be text. Diffs are computed when a pass is opened (TLDiff, diff.js: the twin of
 * tltrace/diff/), so the file holds each distinct IR text once.
 *
 * The script is in parts by job, inlined into one script the page's CSP names by hash, each
 * after what its @requires names (render/bundle.py orders them; this file, which starts the
 * page, comes last): report-logic.js (pure, tested under node), report-state.js
 * (window.TLReport: constants, the state S, loading the chunks), report-diffview.js,
 * report-pass.js, report-sidebar.js, report-reload.js, report-header.js, report-nav.js.
 * Each part puts its functions on window.TLReport and calls the others' there; it reaches
 * another module through its one handle (R.S, C.el, V.fmtDuration), never a copied alias.
 * @requires core.js report-state.js report-logic.js report-table.js report-compare.js report-diffview.js report-pass.js report-edit.js report-sidebar.js report-reload.js report-header.js report-nav.js sourcemap.js report-remarks.js
 */
(function () {
  "use strict";

  var R = window.TLReport, S = R.S, C = window.TLCore, T = window.TLTable;

  // ---- compare with a sibling compile (report-compare.js) ------------------------------------------
  var cmp = window.TLCompare.create({
    embedded: R.EMBED,
    recs: function () { return S.recs; },
    meta: function () { return S.meta; },
    earlier: function () { return S.earlier; },
    selected: function () { return S.sel; },
    select: function (pos) { R.select(pos); },
    refOf: R.fragmentOf,
    textOf: R.textOf,
    view: function () { return R.$("tl-view"); },
    diffTable: function (A, B) {
      var rows = R.lineDiff(A, B, []);
      var st = { rows: rows, shown: new Uint8Array(rows.length).fill(1), A: A, B: B };
      return { same: rows.every(function (x) { return x.kind === "same"; }), table: T.render(st, { ignoreWs: S.ignoreWs, onReveal: function () {} }) };
    }
  });

  // ---- chrome: theme, sidebar, keys ---------------------------------------------------------------
  // Keys go to the report unless a field takes typing (a checked checkbox or a clicked button does not).
  function isTextField(t) { return window.TLReportLogic.isTextField(t); }
  function wireChrome() {
    C.wireTheme(R.$("tl-theme"));
    R.$("tl-help-btn").addEventListener("click", function () { R.$("tl-help").hidden = !R.$("tl-help").hidden; });
    R.$("tl-hide-noop").addEventListener("change", function (ev) { S.hideNoop = ev.target.checked; R.applyFilters(); });
    var sidebar = R.$("tl-sidebar"), resizer = R.$("tl-resizer"), reopen = R.$("tl-expand-sidebar");
    function setCollapsed(c) {
      sidebar.classList.toggle("collapsed", c);
      resizer.hidden = c; reopen.hidden = !c;
      C.setPref("tltrace-sidebar-collapsed", c ? "1" : "0");
    }
    R.$("tl-collapse").addEventListener("click", function () { S.autoCollapsed = false; setCollapsed(true); });
    reopen.addEventListener("click", function () { S.autoCollapsed = false; setCollapsed(false); });
    if (C.getPref("tltrace-sidebar-collapsed") === "1") setCollapsed(true);
    // A saved width never takes more than half the window.
    function fitWidth() {
      var saved = parseInt(C.getPref("tltrace-sidebar-width") || "", 10);
      var cap = Math.max(140, Math.floor(window.innerWidth / 2));
      if (saved > 100) sidebar.style.width = Math.min(saved, cap) + "px";
      else if (sidebar.getBoundingClientRect().width > cap) sidebar.style.width = cap + "px";
    }
    // Narrow windows: the sidebar folds away by itself (not saved) and comes back when there is room.
    function fitWindow() {
      fitWidth();
      var narrow = window.innerWidth < R.NARROW_PX;
      if (narrow && !sidebar.classList.contains("collapsed")) {
        S.autoCollapsed = true;
        sidebar.classList.add("collapsed"); resizer.hidden = true; reopen.hidden = false;
      } else if (!narrow && S.autoCollapsed) {
        S.autoCollapsed = false;
        sidebar.classList.remove("collapsed"); resizer.hidden = false; reopen.hidden = true;
      }
    }
    fitWindow();
    window.addEventListener("resize", fitWindow);
    resizer.addEventListener("mousedown", function (ev) {
      ev.preventDefault();
      resizer.classList.add("dragging");
      var left = sidebar.getBoundingClientRect().left;
      function mv(e) { sidebar.style.width = Math.max(140, e.clientX - left) + "px"; }
      function up() {
        resizer.classList.remove("dragging");
        document.removeEventListener("mousemove", mv);
        document.removeEventListener("mouseup", up);
        C.setPref("tltrace-sidebar-width", String(parseInt(sidebar.style.width, 10)));
      }
      document.addEventListener("mousemove", mv);
      document.addEventListener("mouseup", up);
    });
    var search = R.$("tl-search"), timer = null;
    search.addEventListener("keydown", function (ev) {
      if (ev.key === "Enter") { clearTimeout(timer); R.runSearch(search.value); }
      else if (ev.key === "Escape") { R.clearSearch(); search.blur(); }
    });
    search.addEventListener("input", function () {
      clearTimeout(timer);
      if (search.value.length >= 2 || !search.value) timer = setTimeout(function () { R.runSearch(search.value); }, 250);
    });
    search.addEventListener("focus", function () { if (S.search && search.value) R.$("tl-search-results").hidden = false; });
    document.addEventListener("click", function (ev) {
      if (!ev.target.closest(".tl-searchbox")) R.$("tl-search-results").hidden = true;
    });
    document.addEventListener("keydown", function (ev) {
      if (isTextField(ev.target)) return;
      if (ev.key === "F7") { ev.preventDefault(); R.startAlign(); return; }
      if (ev.key === "Escape") { if (S.aligning) R.stopAlign(); R.$("tl-help").hidden = true; R.clearSearch(); return; }
      if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
      if (ev.key === "j") { ev.preventDefault(); R.move(1); }
      else if (ev.key === "k") { ev.preventDefault(); R.move(-1); }
      else if (ev.key === "n" || ev.key === "J") { ev.preventDefault(); R.moveChanged(1); }
      else if (ev.key === "p" || ev.key === "K") { ev.preventDefault(); R.moveChanged(-1); }
      else if (ev.key === "E" && ev.shiftKey) { ev.preventDefault(); R.toggleExpandAll(); } else if (ev.key === "/") { ev.preventDefault(); search.focus(); search.select(); }
      else if (ev.key === "?") { R.$("tl-help").hidden = !R.$("tl-help").hidden; }
    });
    window.addEventListener("hashchange", function () {
      var pos = R.fromHash();
      if (pos >= 0 && pos !== S.sel) R.select(pos);
      else if (pos < 0 && R.hashText()) R.showMissing(R.hashText());
    });
  }

  function start() {
    if (!C.pageComplete("tl-data")) return;  // the file ends inside the page skeleton: the notice says so
    R.load();
    R.loadAnchors();
    S.ignoreWs = C.getPref("tltrace-ignore-ws") === "1";
    S.wrap = C.getPref("tltrace-wrap") !== "0";
    document.body.classList.toggle("tl-nowrap", !S.wrap);
    var saved = R.takeSavedState();
    if (saved) {
      S.expandAll = !!saved.expandAll; S.phase = saved.phase === undefined ? null : saved.phase;
      S.filter = saved.filter === undefined ? null : saved.filter; S.hideNoop = !!saved.hideNoop;
    }
    R.buildHeader();
    R.buildRunError();
    R.buildLaunches();
    R.buildSummary();
    R.buildTabs();
    R.buildSidebar();
    wireChrome();
    if (S.hideNoop) R.$("tl-hide-noop").checked = true;
    var pos = R.fromHash();
    if (pos < 0 && saved && saved.sel) pos = R.posOfFragment(saved.sel);
    if (pos < 0 && R.hashText()) {
      R.showMissing(R.hashText());
      R.applyFilters();
      finishStart(saved);
      return;
    }
    if (pos < 0) {
      pos = window.TLReportLogic.startPos(S.recs, S.meta, R.textOf);  // failed, else the first tile-level change
    }
    S.sel = pos;
    R.applyFilters();
    if (pos >= 0) R.select(pos);
    else { C.clear(R.$("tl-view")); R.$("tl-view").appendChild(C.el("p", "tl-empty", "No passes were recorded in this run.")); }
    finishStart(saved);
  }
  function finishStart(saved) {
    cmp.listen();
    if (window.tltraceProfile) window.tltraceProfile.attach({ recs: S.recs, texts: S.texts, meta: S.meta, select: R.select });
    if (window.tltraceSourceMap) window.tltraceSourceMap.attach({ recs: S.recs, items: S.items, texts: S.texts, meta: S.meta, select: R.select });
    if (window.tltraceRemarks) window.tltraceRemarks.attach({ meta: S.meta, recs: S.recs, items: S.items, sm: window.tltraceSourceMap, selected: function () { return S.sel; } });
    if (saved) {  // back from a reload of a running report: where the reader was
      R.$("tl-view").scrollTop = saved.view || 0;
      R.$("tl-passes").scrollTop = saved.list || 0;
    }
    R.scheduleRefresh();
    // When the first pass was on screen (ms since navigation): bench/report.py reads it.
    document.documentElement.setAttribute("data-ready-ms", String(Math.round(performance.now())));
    document.documentElement.setAttribute("data-ready", "1");
  }
  R.cmp = cmp;
  R.isTextField = isTextField;

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
