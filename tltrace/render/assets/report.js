/* tltrace HTML report.
 *
 * The page carries data, not markup: <script type="application/json" class="tl-d">
 * chunks appended while the compile runs ({"t":"meta"}, {"t":"text"}, {"t":"rec"}; a text
 * is whole or the changes to an earlier one, core.js applyDelta).
 * A chunk cut short by a kill does not parse and is skipped. Everything shown is
 * built with textContent / createTextNode, never innerHTML, so IR text can only
 * ever be text. Diffs are computed when a pass is opened (TLDiff, diff.js: the twin of
 * tltrace/diff/), so the file holds each distinct IR text once.
 */
(function () {
  "use strict";

  var CONTEXT = 3;          // equal lines kept around a change
  var MIN_FOLD = 4;         // fold only runs that hide at least this many lines
  var REFRESH_MS = 3000;    // a running report reloads itself this often
  var STALE_MS = 120000;    // a "running" file untouched this long belongs to a run that was killed
  var NARROW_PX = 1000;     // below this width the sidebar collapses by itself
  // Loaded by a sibling compile's report to answer its compare requests (see startCompare).
  var EMBED = window.parent !== window && location.hash === "#tl-embed";
  var DOTS = { changed: "\u25CF", noop: "\u25CB", failed: "\u2715", codegen: "\u25C6" };

  var S = {
    meta: {}, texts: new Map(), recs: [], posByIndex: new Map(), phases: [], bad: 0,
    phase: null, filter: null, hideNoop: false, visible: [], sel: -1,
    expandAll: false, anchors: {}, aligning: null, diff: null, search: null, items: [],
    ignoreWs: false, wrap: true, missing: null, autoCollapsed: false
  };

  // ---- DOM helpers -------------------------------------------------------------------------------
  var C = window.TLCore, V = window.TLView, T = window.TLTable;
  var getPref = C.getPref, setPref = C.setPref, el = C.el, setText = C.setText, appendText = C.appendText;
  var clear = C.clear, button = C.button, fmtDuration = V.fmtDuration, splitLines = C.splitLines;
  C.initTheme();
  function $(id) { return document.getElementById(id); }
  // ---- data --------------------------------------------------------------------------------------
  function load() {
    var recs = [];
    var byIndex = new Map();
    S.bad = C.readChunks(function (d) {
      if (d.t === "meta") {
        for (var key in d) if (Object.prototype.hasOwnProperty.call(d, key) && key !== "t") S.meta[key] = d[key];
      } else if (d.t === "text") {
        // Whole, or as changes to an earlier text of the report (its base comes first).
        var s = typeof d.s === "string" ? d.s : C.applyDelta(S.texts.get(d.b), d.d, d.e === 1);
        if (typeof d.h === "string" && typeof s === "string") S.texts.set(d.h, s);
        else S.bad++;
      } else if (d.t === "sibs") {
        if (Array.isArray(d.runs)) S.sibs = d.runs;  // the invocation's compiles (for the switcher)
      } else if (d.t === "rec") {
        if (typeof d.index !== "number") { S.bad++; return; }
        d.name = String(d.name); d.phase = String(d.phase || "unscoped"); d.status = String(d.status || "noop");
        if (byIndex.has(d.index)) recs[byIndex.get(d.index)] = d;  // a later chunk completes a record
        else { byIndex.set(d.index, recs.length); recs.push(d); }
      }
    });
    recs.sort(function (a, b) { return a.index - b.index; });
    S.recs = recs;
    var seen = new Set();
    recs.forEach(function (r, pos) {
      S.posByIndex.set(r.index, pos);
      if (!seen.has(r.phase)) { seen.add(r.phase); S.phases.push(r.phase); }
    });
  }
  function textOf(hash) { return hash ? S.texts.get(hash) : undefined; }

  // ---- diff ------------------------------------------------------------------------------------
  function lineDiff(A, B, anchors) { return V.lineDiff(TLDiff.align, A, B, anchors); }
  // ---- diff view state ---------------------------------------------------------------------------
  function defaultShown(rows) {
    return V.defaultShown(rows, { all: S.expandAll, ignoreWs: S.ignoreWs, context: CONTEXT, minFold: MIN_FOLD });
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
    var view = $("tl-view");
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
    var b = $("tl-align-banner");
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
      showPass(S.sel, { keepScroll: true });
    }
  }

  // ---- views -------------------------------------------------------------------------------------
  function numbered(lines) {
    var table = el("table", "tl-diff tl-plain");
    var cg = el("colgroup");
    cg.appendChild(el("col", "ln")); cg.appendChild(el("col", "code"));
    table.appendChild(cg);
    var tbody = el("tbody");
    for (var i = 0; i < lines.length; i++) {
      var tr = el("tr");
      tr.appendChild(el("td", "ln", i + 1));
      tr.appendChild(el("td", "code", lines[i]));
      tbody.appendChild(tr);
    }
    table.appendChild(tbody);
    return table;
  }
  function pane(title, text) {
    var p = el("div", "tl-pane");
    p.appendChild(el("h3", null, title));
    var lines = splitLines(text);
    if (lines === null) p.appendChild(el("p", "tl-empty", "(text not in this report)"));
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
      var ta = el("textarea");
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
    if (S.diff) { S.diff.shown = defaultShown(S.diff.rows); redrawDiff(); }
  }
  function statusLabel(r) {
    return { changed: "changed", noop: "no-op", failed: "failed", codegen: "codegen" }[r.status] || r.status;
  }

  function showPass(pos, opts) {
    opts = opts || {};
    var view = $("tl-view");
    var top = view.scrollTop;
    clear(view);
    S.diff = null;
    if (S.aligning) stopAlign();
    var r = S.recs[pos];
    if (!r) { view.appendChild(el("p", "tl-empty", "No pass selected.")); return; }
    var before = textOf(r.before_hash), after = textOf(r.after_hash);
    var head = el("div", "tl-pass-head");
    var h2 = el("h2", null);
    var dot = el("span", "tl-dot " + r.status, DOTS[r.status] || "?");
    h2.appendChild(dot); appendText(h2, " " + r.name);
    head.appendChild(h2);
    var info = [];
    function say(x) { if (x && info.indexOf(x) < 0) info.push(x); }  // never "codegen \u00B7 codegen"
    say("#" + r.index); say(r.phase); say(statusLabel(r));
    // +/- only for IR against IR: for codegen it would count TIR lines against C lines.
    if (r.status === "changed") say("+" + (r.added || 0) + " \u2212" + (r.removed || 0));
    if (r.duration_s !== undefined) say(fmtDuration(r.duration_s));
    say(r.role); say(r.ffi); say(r.reconcile);
    head.appendChild(el("span", "info", info.join(" \u00B7 ")));
    if (r.parent !== undefined && r.parent !== null && S.posByIndex.has(r.parent)) {
      var ppos = S.posByIndex.get(r.parent);
      var plink = button("in " + S.recs[ppos].name, "Go to the enclosing pass", function () { select(ppos); });
      plink.className = "tl-parent";
      head.appendChild(plink);
    }
    var actions = el("span", "actions");
    var cb = button("Copy before", "Copy the IR before this pass", function () { copyText(before, cb); });
    cb.className = "tl-copy-before"; cb.disabled = before === undefined;
    actions.appendChild(cb);
    var ca = button("Copy after", "Copy the IR after this pass", function () { copyText(after, ca); });
    ca.className = "tl-copy-after"; ca.disabled = after === undefined;
    actions.appendChild(ca);
    var reproCmd = S.meta.repro && r.status !== "codegen" ? S.meta.repro + " " + r.index : null;
    if (reproCmd) {  // rerun this pass alone: tltrace repro (docs/rerun.md)
      var rc = button("Copy repro command", reproCmd, function () { copyText(reproCmd, rc); });
      rc.className = "tl-copy-repro";
      actions.appendChild(rc);
    }
    if (r.status === "changed" || r.status === "noop") {
      var ctx = button(S.expandAll ? "Fold context" : "Show all context",
        "Show every unchanged line of this pass, or fold them again (Shift+E)", toggleExpandAll);
      ctx.className = "tl-context-all";
      actions.appendChild(ctx);
      var ws = el("label", "tl-ignore-ws");
      ws.title = "Show re-indented lines (~) as unchanged";
      var wsBox = el("input");
      wsBox.type = "checkbox"; wsBox.checked = S.ignoreWs;
      wsBox.addEventListener("change", function () {
        S.ignoreWs = wsBox.checked;
        setPref("tltrace-ignore-ws", S.ignoreWs ? "1" : "0");
        showPass(S.sel, { keepScroll: true });
      });
      ws.appendChild(wsBox);
      ws.appendChild(document.createTextNode(" ignore whitespace"));
      actions.appendChild(ws);
    }
    var wrap = button(S.wrap ? "Wrap: on" : "Wrap: off", "Wrap long lines (between tokens) or scroll them", function () {
      S.wrap = !S.wrap;
      setPref("tltrace-wrap", S.wrap ? "1" : "0");
      document.body.classList.toggle("tl-nowrap", !S.wrap);
      wrap.textContent = S.wrap ? "Wrap: on" : "Wrap: off";
    });
    wrap.className = "tl-wrap";
    actions.appendChild(wrap);
    if (S.anchors[r.index] && S.anchors[r.index].length) {
      var clr = button("Clear alignment", "Remove the manual alignment points (F7)", function () {
        delete S.anchors[r.index]; saveAnchors(); showPass(S.sel, { keepScroll: true });
      });
      clr.className = "tl-clear-align";
      actions.appendChild(clr);
    }
    head.appendChild(actions);
    view.appendChild(head);
    var banner = el("div", "tl-align-banner");
    banner.id = "tl-align-banner"; banner.hidden = true;
    view.appendChild(banner);
    if (r.working_file) view.appendChild(el("div", "tl-notice", "Working file: " + r.working_file));

    if (r.status === "failed") {
      var box = el("div", "tl-error");
      box.appendChild(el("div", "lbl", "Exception"));
      box.appendChild(el("pre", null, r.error || "The pass did not complete (no exception was reported)."));
      if (reproCmd) box.appendChild(el("div", "tl-repro", "Reproduce it without the script: " + reproCmd));
      view.appendChild(box);
      var panes = el("div", "tl-panes");
      panes.appendChild(pane("IR before the failure", before));
      view.appendChild(panes);
    } else if (r.status === "codegen") {
      var cp = el("div", "tl-panes");
      cp.appendChild(pane("TIR (before codegen)", before));
      if (r.role) cp.setAttribute("data-role", r.role);
      cp.appendChild(pane("Generated " + (r.role ? r.role + " " : "") + "source (after)", after));
      view.appendChild(cp);
    } else {
      var A = splitLines(before), B = splitLines(after);
      if (A === null || B === null) {
        view.appendChild(el("p", "tl-empty", "The IR text of this pass is not in this report."));
      } else {
        if (r.status === "noop") view.appendChild(el("div", "tl-notice", "No change: the IR is the same before and after this pass."));
        var rows = lineDiff(A, B, S.anchors[r.index]);
        var note = TLDiff.explain(before, after, A, B, rows);
        if (note) {
          var nb = el("div", "tl-notice tl-diffnote", NOTES[note] || note);
          view.appendChild(nb);
        }
        var host = el("div", "tl-diffhost");
        var st = { rec: r, A: A, B: B, rows: rows, shown: defaultShown(rows), host: host, table: null };
        st.table = el("table");
        host.appendChild(st.table);
        S.diff = st;
        view.appendChild(host);
        redrawDiff();
      }
    }
    view.scrollTop = opts.keepScroll ? top : 0;
    cmp.onPass();
  }

  // ---- compare with a sibling compile (report-compare.js) ------------------------------------------
  var cmp = window.TLCompare.create({
    embedded: EMBED,
    recs: function () { return S.recs; },
    meta: function () { return S.meta; },
    selected: function () { return S.sel; },
    refOf: fragmentOf,
    textOf: textOf,
    view: function () { return $("tl-view"); },
    diffTable: function (A, B) {
      var rows = lineDiff(A, B, []);
      var st = { rows: rows, shown: new Uint8Array(rows.length).fill(1), A: A, B: B };
      return { same: rows.every(function (x) { return x.kind === "same"; }), table: T.render(st, { ignoreWs: S.ignoreWs, onReveal: function () {} }) };
    }
  });

  // ---- sidebar, filters --------------------------------------------------------------------------
  function buildSidebar() {
    var list = $("tl-passes");
    clear(list);
    var frag = document.createDocumentFragment();
    S.items = S.recs.map(function (r, pos) {
      var li = el("li", "tl-pass");
      li.setAttribute("data-pos", pos);
      li.setAttribute("data-status", r.status);
      li.setAttribute("data-phase", r.phase);
      li.setAttribute("data-index", r.index);
      li.title = r.name + " (" + r.phase + ")";
      li.appendChild(el("span", "tl-dot " + r.status, DOTS[r.status] || "?"));
      li.appendChild(el("span", "ix", r.index));
      var nm = el("span", "nm", (r.depth ? "\u21B3 " : "") + r.name);
      if (r.depth) nm.style.paddingLeft = (r.depth * 14) + "px";
      li.appendChild(nm);
      var st = el("span", "st");
      if (r.status === "changed" && !r.added && !r.removed) {
        st.appendChild(el("span", "ws", "ws"));  // no line differs: a newline or whitespace change
        st.title = "only whitespace or the newline at the end changed";
      } else if (r.status === "changed") {
        st.appendChild(el("span", "add", "+" + (r.added || 0)));
        st.appendChild(document.createTextNode(" "));
        st.appendChild(el("span", "del", "\u2212" + (r.removed || 0)));
      }
      li.appendChild(st);
      li.appendChild(el("span", "dur", fmtDuration(r.duration_s)));
      frag.appendChild(li);
      return li;
    });
    list.appendChild(frag);
    list.addEventListener("click", function (ev) {
      var li = ev.target.closest("li.tl-pass");
      if (li) select(parseInt(li.getAttribute("data-pos"), 10));
    });
  }
  function applyFilters() {
    S.visible = [];
    for (var pos = 0; pos < S.recs.length; pos++) {
      var r = S.recs[pos];
      var ok = (S.phase === null || r.phase === S.phase) &&
        (S.filter === null || r.status === S.filter) &&
        !(S.hideNoop && r.status === "noop");
      S.items[pos].classList.toggle("hidden", !ok);
      if (ok) S.visible.push(pos);
    }
    document.querySelectorAll(".tl-badge[data-filter]").forEach(function (b) {
      b.classList.toggle("active", b.getAttribute("data-filter") === S.filter);
    });
    document.querySelectorAll(".tl-tab").forEach(function (t) {
      var ph = t.getAttribute("data-phase");
      t.classList.toggle("active", (ph === "" ? null : ph) === S.phase);
    });
    if (S.visible.indexOf(S.sel) < 0 && S.missing === null) {
      if (S.visible.length) select(S.visible[0]);
      else { S.sel = -1; markSelected(); showPass(-1); }
    }
  }
  function buildSummary() {
    var bar = $("tl-summary");
    clear(bar);
    var counts = { changed: 0, noop: 0, failed: 0, codegen: 0 };
    S.recs.forEach(function (r) { counts[r.status] = (counts[r.status] || 0) + 1; });
    bar.appendChild(el("span", "tl-total", S.recs.length + " passes"));
    [["changed", "changed"], ["noop", "no-op"], ["failed", "failed"], ["codegen", "codegen"]].forEach(function (p) {
      var label = DOTS[p[0]] + " " + counts[p[0]] + " " + p[1];
      if (p[0] === "noop") { bar.appendChild(el("span", "tl-badge noop", label)); return; }
      var b = button(label, "Show only " + p[1] + " passes (click again for all)", function () {
        S.filter = S.filter === p[0] ? null : p[0];
        applyFilters();
      });
      b.className = "tl-badge " + p[0];
      b.setAttribute("data-filter", p[0]);
      bar.appendChild(b);
    });
    if (S.bad) bar.appendChild(el("span", "tl-warn", S.bad + " damaged data chunk" + (S.bad === 1 ? "" : "s") +
      " skipped (the run was cut short)"));
  }
  function buildTabs() {
    var tabs = $("tl-tabs");
    clear(tabs);
    function tab(label, phase, n) {
      var t = button(label, null, function () { S.phase = phase; applyFilters(); });
      t.className = "tl-tab";
      t.setAttribute("data-phase", phase === null ? "" : phase);
      t.appendChild(el("span", "n", n));
      tabs.appendChild(t);
    }
    tab("All", null, S.recs.length);
    S.phases.forEach(function (ph) {
      var n = 0;
      S.recs.forEach(function (r) { if (r.phase === ph) n++; });
      tab(ph, ph, n);
    });
  }
  // ---- run state, and reloading while the run goes on ------------------------------------------------
  // The writer appends to this file as passes finish and ends with the final status. A file still
  // saying "running" that has not changed for STALE_MS belongs to a run that was killed.
  function fileAge() {
    var t = Date.parse(document.lastModified);
    return isNaN(t) ? 0 : Math.max(0, Date.now() - t);
  }
  function runState() {
    var m = S.meta, st = m.status || "running";
    if (st === "error" && /^KeyboardInterrupt/.test(String(m.error || ""))) return "interrupted";
    if (st === "complete" || st === "error" || st === "interrupted") return st;  // "interrupted": the records say so
    return fileAge() < STALE_MS ? "running" : "incomplete";
  }
  var STATE_KEY = "tltrace-reload:" + location.pathname;
  function scheduleRefresh() {
    if (runState() !== "running") return;
    setTimeout(function tick() {
      var busy = S.aligning || isTextField(document.activeElement) ||
        (window.getSelection && String(window.getSelection()) !== "");
      if (busy) { setTimeout(tick, REFRESH_MS); return; }
      try {
        window.sessionStorage.setItem(STATE_KEY, JSON.stringify({
          view: $("tl-view").scrollTop, list: $("tl-passes").scrollTop, expandAll: S.expandAll,
          phase: S.phase, filter: S.filter, hideNoop: S.hideNoop, sel: S.sel >= 0 ? fragmentOf(S.sel) : null
        }));
      } catch (e) { /* no session storage: reload anyway */ }
      location.reload();
    }, REFRESH_MS);
  }
  function takeSavedState() {
    try {
      var raw = window.sessionStorage.getItem(STATE_KEY);
      window.sessionStorage.removeItem(STATE_KEY);
      return raw ? JSON.parse(raw) : null;
    } catch (e) { return null; }
  }
  // F7 alignments are kept per report (and pass) across reloads.
  function anchorsKey() { return "tltrace-anchors:" + (S.meta.run_id || location.pathname); }
  function loadAnchors() {
    try {
      var a = JSON.parse(getPref(anchorsKey()) || "{}");
      if (a && typeof a === "object") S.anchors = a;
    } catch (e) { S.anchors = {}; }
  }
  function saveAnchors() {
    var keep = {};
    for (var k in S.anchors) if (Object.prototype.hasOwnProperty.call(S.anchors, k) && S.anchors[k].length) keep[k] = S.anchors[k];
    setPref(anchorsKey(), JSON.stringify(keep));
  }

  function buildHeader() {
    var m = S.meta;
    setText($("tl-kernel"), m.kernel || m.script || "");
    document.title = "tltrace: " + (m.kernel || m.script || "report");
    var rs = $("tl-runstatus");
    var status = runState();
    var n = S.recs.length;
    rs.className = "tl-runstatus " + status;
    rs.textContent = status === "complete" ? "complete" : status === "error" ? "compile failed" :
      status === "interrupted" ? "interrupted (" + n + " pass" + (n === 1 ? "" : "es") + " recorded)" :
      status === "running" ? "running \u2014 " + n + " pass" + (n === 1 ? "" : "es") + " so far" :
      "incomplete: the run did not finish (" + n + " passes recorded; no change to this file for " +
        Math.round(fileAge() / 60000) + " min)";
    var meta = $("tl-meta");
    clear(meta);
    function item(label, value, code) {
      if (value === undefined || value === null || value === "") return;
      var s = el("span");
      s.title = label + " " + value;  // the whole value, when the header cuts it off
      s.appendChild(document.createTextNode(label + " "));
      s.appendChild(el(code ? "code" : "b", null, value));
      meta.appendChild(s);
    }
    item("target", m.target_host ? m.target + " (host " + m.target_host + ")" : m.target);
    item("backend", m.backend);
    item("TileLang", m.tilelang_version);
    if (m.started) item("started", new Date(m.started * 1000).toLocaleString());
    item("signature", m.signature, true);
    if (m.command_line) item("command", m.command_line, true);
    else if (m.command && m.command.length) item("command", m.command.join(" "), true);
    buildNav();
  }
  // ---- invocation: back to the index, switch to a sibling compile (data from {"t":"sibs"}) -------
  function buildNav() {
    var m = S.meta, runId = String(m.run_id || "");
    if (typeof m.index !== "string" || !/^(\.\.\/)+report\.html$/.test(m.index)) return;
    if (location.protocol === "about:") return;  // inline in a notebook (srcdoc): no files beside it
    var nav = el("span", "tl-nav");
    var back = el("a", null, "\u2191 all compiles");
    back.href = m.index + (C.safeId(runId) ? "#run=" + runId : "");
    back.title = "The invocation's index: every compile, failed first";
    nav.appendChild(back);
    var sibs = (S.sibs || []).filter(function (x) { return Array.isArray(x) && C.safeId(String(x[0])); });
    if (sibs.length > 1) {
      var sel = el("select", "tl-switch");
      sel.title = "Switch to another compile of this invocation";
      sibs.forEach(function (x) {
        var o = el("option", null, String(x[1]) + (x[2] && x[2] !== "complete" ? " (" + x[2] + ")" : ""));
        o.value = String(x[0]);
        if (o.value === runId) o.selected = true;
        sel.appendChild(o);
      });
      // The same pass (by name and occurrence) in the sibling, when one is selected.
      sel.addEventListener("change", function () {
        location.href = "../" + sel.value + "/report.html" + (S.sel >= 0 ? "#" + encodeURIComponent(fragmentOf(S.sel)) : "");
      });
      nav.appendChild(sel);
      // Compare: the same pass of a sibling compile, side by side with this one's.
      var pick = el("select", "tl-compare-pick");
      pick.title = "Compare this pass with the same pass of another compile of this invocation";
      var none = el("option", null, "compare with\u2026");
      none.value = "";
      pick.appendChild(none);
      sibs.forEach(function (x) {
        if (String(x[0]) === runId) return;
        var o = el("option", null, String(x[1]));
        o.value = String(x[0]);
        pick.appendChild(o);
      });
      pick.addEventListener("change", function () { cmp.start(pick.value, pick.options[pick.selectedIndex].text); });
      nav.appendChild(pick);
    }
    document.querySelector(".tl-title").appendChild(nav);
  }
  function firstFailed() {
    for (var i = 0; i < S.recs.length; i++) if (S.recs[i].status === "failed") return i;
    return -1;
  }
  // A failed run names its error under the header: the failed pass (with a link to it), or, when
  // the compile failed after the last recorded pass (an edited source that does not compile), the
  // error itself, which no pass view shows.
  function buildRunError() {
    var box = $("tl-runerror");
    clear(box);
    var m = S.meta;
    if (m.status !== "error" || !m.error) { box.hidden = true; return; }
    box.hidden = false;
    var text = String(m.error);
    var fpos = firstFailed();
    var head = el("div", "tl-runerror-head");
    head.appendChild(el("span", "tl-dot failed", DOTS.failed));
    head.appendChild(el("b", null, fpos >= 0 ? "Failed in " + S.recs[fpos].name + ":" :
      "Compile failed after the last recorded pass:"));
    var firstLine = text.split("\n")[0];
    head.appendChild(el("span", "msg", firstLine));
    var full = el("pre", "tl-runerror-full", text);
    full.hidden = true;
    if (fpos >= 0) {
      var go = button("Show pass", "Open the pass that failed", function () { select(fpos); });
      go.className = "tl-runerror-go";
      head.appendChild(go);
    } else if (text !== firstLine) {
      var more = button("Full error", "Show the whole error message", function () {
        full.hidden = !full.hidden;
        more.textContent = full.hidden ? "Full error" : "Hide error";
      });
      more.className = "tl-runerror-more";
      head.appendChild(more);
    }
    box.appendChild(head);
    box.appendChild(full);
  }
  function markSelected() {
    document.querySelectorAll("li.tl-pass.selected").forEach(function (n) { n.classList.remove("selected"); });
    var li = S.items[S.sel];
    if (li) {
      li.classList.add("selected");
      if (li.scrollIntoViewIfNeeded) li.scrollIntoViewIfNeeded(false);
      else li.scrollIntoView({ block: "nearest" });
    }
  }
  function fragmentOf(pos) { return C.refOf(S.recs, pos); }
  // A link names a pass as --pass does (TLCore.resolveRef): by name in any case, name#k for the
  // k-th, index (#16), the end of a dotted name (#BindTarget); old links' name@index still work.
  function posOfFragment(frag) {
    if (!frag) return -1;
    var at = frag.lastIndexOf("@");
    if (at > 0 && /^\d+$/.test(frag.slice(at + 1))) {
      var ix = parseInt(frag.slice(at + 1), 10);
      if (S.posByIndex.has(ix) && S.recs[S.posByIndex.get(ix)].name.toLowerCase() === frag.slice(0, at).toLowerCase()) return S.posByIndex.get(ix);
    }
    return C.resolveRef(S.recs, frag).pos;
  }
  function showMissing(frag) {
    S.missing = frag;
    S.sel = -1;
    markSelected();
    S.diff = null;
    var view = $("tl-view");
    clear(view);
    var why = C.resolveRef(S.recs, frag).error;
    var p = el("p", "tl-empty tl-missing", why && !/^no pass named/.test(why) ?
      "No pass \u201C" + frag + "\u201D in this run: " + why + ". " : "No pass named \u201C" + frag + "\u201D in this run. ");
    p.appendChild(document.createTextNode("Pick one on the left, press j, or link by name (#Simplify, #Simplify#2 for the second), by the end of a name (#BindTarget) or by index (#16)."));
    view.appendChild(p);
  }
  function select(pos, opts) {
    if (pos < 0 || pos >= S.recs.length) return;
    S.missing = null;
    if (S.visible.indexOf(pos) < 0) {  // a jump (search, link) to a filtered-out pass clears the filters
      S.phase = null; S.filter = null; S.hideNoop = false; $("tl-hide-noop").checked = false;
      S.sel = pos;
      applyFilters();
    }
    S.sel = pos;
    markSelected();
    showPass(pos, opts);
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
  function hashText() {
    try { return decodeURIComponent(location.hash.slice(1)); } catch (e) { return location.hash.slice(1); }
  }
  function fromHash() { return posOfFragment(hashText()); }

  // ---- search ------------------------------------------------------------------------------------
  function runSearch(q) {
    var box = $("tl-search-results");
    S.items.forEach(function (li) { li.classList.remove("hit"); });
    clear(box);
    if (!q) { box.hidden = true; S.search = null; return; }
    var found = V.searchHits(S.recs, S.texts, q), hits = found.hits, introduced = found.introduced;
    hits.forEach(function (h) { S.items[h.pos].classList.add("hit"); });
    S.search = { q: q };
    var head = el("div", "tl-sr-head", hits.length ? (hits.length + (hits.length === 1 ? " pass contains \u201C" : " passes contain \u201C") + q + "\u201D; " +
      introduced + (introduced === 1 ? " introduces it" : " introduce it")) : "No pass contains \u201C" + q + "\u201D");
    box.appendChild(head);
    var order = hits.filter(function (h) { return h.kind !== "has"; }).concat(hits.filter(function (h) { return h.kind === "has"; }));
    order.slice(0, 400).forEach(function (h) {
      var r = S.recs[h.pos];
      var row = el("div", "tl-sr");
      row.setAttribute("data-pos", h.pos);
      row.appendChild(el("span", "tl-sr-tag " + h.kind, h.kind === "intro" ? "introduces" : h.kind === "gone" ? "removes" : "contains"));
      row.appendChild(el("span", "ix", "#" + r.index));
      row.appendChild(el("span", "nm", r.name));
      row.addEventListener("click", function () { box.hidden = true; jumpToHit(h.pos, q); });
      box.appendChild(row);
    });
    box.hidden = false;
  }
  // Escape: the search box, its results and the sidebar's highlights all go.
  function clearSearch() {
    var search = $("tl-search");
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
    redrawDiff(function () {
      var sel = row2.b !== null ? 'tr[data-r="' + row2.b + '"]' : 'tr[data-l="' + row2.a + '"]';
      var tr = st.table.querySelector(sel);
      if (tr) { tr.classList.add("hitrow"); tr.scrollIntoView({ block: "center" }); }
    });
  }

  // ---- chrome: theme, sidebar, keys ---------------------------------------------------------------
  // Keys go to the report unless a field takes typing (a checked checkbox or a clicked button does not).
  var NOT_TYPED = /^(checkbox|radio|button|submit|reset|range|color|file|image)$/i;
  function isTextField(t) {
    if (!t || !t.tagName) return false;
    if (t.isContentEditable) return true;
    if (t.tagName === "TEXTAREA" || t.tagName === "SELECT") return true;
    return t.tagName === "INPUT" && !NOT_TYPED.test(t.type || "text");
  }
  function wireChrome() {
    C.wireTheme($("tl-theme"));
    $("tl-help-btn").addEventListener("click", function () { $("tl-help").hidden = !$("tl-help").hidden; });
    $("tl-hide-noop").addEventListener("change", function (ev) { S.hideNoop = ev.target.checked; applyFilters(); });
    var sidebar = $("tl-sidebar"), resizer = $("tl-resizer"), reopen = $("tl-expand-sidebar");
    function setCollapsed(c) {
      sidebar.classList.toggle("collapsed", c);
      resizer.hidden = c; reopen.hidden = !c;
      setPref("tltrace-sidebar-collapsed", c ? "1" : "0");
    }
    $("tl-collapse").addEventListener("click", function () { S.autoCollapsed = false; setCollapsed(true); });
    reopen.addEventListener("click", function () { S.autoCollapsed = false; setCollapsed(false); });
    if (getPref("tltrace-sidebar-collapsed") === "1") setCollapsed(true);
    // A saved width never takes more than half the window.
    function fitWidth() {
      var saved = parseInt(getPref("tltrace-sidebar-width") || "", 10);
      var cap = Math.max(140, Math.floor(window.innerWidth / 2));
      if (saved > 100) sidebar.style.width = Math.min(saved, cap) + "px";
      else if (sidebar.getBoundingClientRect().width > cap) sidebar.style.width = cap + "px";
    }
    // Narrow windows: the sidebar folds away by itself (not saved) and comes back when there is room.
    function fitWindow() {
      fitWidth();
      var narrow = window.innerWidth < NARROW_PX;
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
        setPref("tltrace-sidebar-width", String(parseInt(sidebar.style.width, 10)));
      }
      document.addEventListener("mousemove", mv);
      document.addEventListener("mouseup", up);
    });
    var search = $("tl-search"), timer = null;
    search.addEventListener("keydown", function (ev) {
      if (ev.key === "Enter") { clearTimeout(timer); runSearch(search.value); }
      else if (ev.key === "Escape") { clearSearch(); search.blur(); }
    });
    search.addEventListener("input", function () {
      clearTimeout(timer);
      if (search.value.length >= 2 || !search.value) timer = setTimeout(function () { runSearch(search.value); }, 250);
    });
    search.addEventListener("focus", function () { if (S.search && search.value) $("tl-search-results").hidden = false; });
    document.addEventListener("click", function (ev) {
      if (!ev.target.closest(".tl-searchbox")) $("tl-search-results").hidden = true;
    });
    document.addEventListener("keydown", function (ev) {
      if (isTextField(ev.target)) return;
      if (ev.key === "F7") { ev.preventDefault(); startAlign(); return; }
      if (ev.key === "Escape") { if (S.aligning) stopAlign(); $("tl-help").hidden = true; clearSearch(); return; }
      if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
      if (ev.key === "j") { ev.preventDefault(); move(1); }
      else if (ev.key === "k") { ev.preventDefault(); move(-1); }
      else if (ev.key === "E" && ev.shiftKey) { ev.preventDefault(); toggleExpandAll(); } else if (ev.key === "/") { ev.preventDefault(); search.focus(); search.select(); }
      else if (ev.key === "?") { $("tl-help").hidden = !$("tl-help").hidden; }
    });
    window.addEventListener("hashchange", function () {
      var pos = fromHash();
      if (pos >= 0 && pos !== S.sel) select(pos);
      else if (pos < 0 && hashText()) showMissing(hashText());
    });
  }

  function start() {
    load();
    loadAnchors();
    S.ignoreWs = getPref("tltrace-ignore-ws") === "1";
    S.wrap = getPref("tltrace-wrap") !== "0";
    document.body.classList.toggle("tl-nowrap", !S.wrap);
    var saved = takeSavedState();
    if (saved) {
      S.expandAll = !!saved.expandAll; S.phase = saved.phase === undefined ? null : saved.phase;
      S.filter = saved.filter === undefined ? null : saved.filter; S.hideNoop = !!saved.hideNoop;
    }
    buildHeader();
    buildRunError();
    buildSummary();
    buildTabs();
    buildSidebar();
    wireChrome();
    if (S.hideNoop) $("tl-hide-noop").checked = true;
    var pos = fromHash();
    if (pos < 0 && saved && saved.sel) pos = posOfFragment(saved.sel);
    if (pos < 0 && hashText()) {
      showMissing(hashText());
      applyFilters();
      finishStart(saved);
      return;
    }
    if (pos < 0) {
      var pick = function (st) { for (var i = 0; i < S.recs.length; i++) if (S.recs[i].status === st) return i; return -1; };
      pos = pick("failed");
      // Failed after the last pass (e.g. an edited source that does not compile): open the source.
      if (pos < 0 && S.meta.status === "error") {
        for (var c = S.recs.length - 1; c >= 0 && pos < 0; c--) if (S.recs[c].status === "codegen") pos = c;
      }
      if (pos < 0) pos = pick("changed");
      if (pos < 0) pos = S.recs.length ? 0 : -1;
    }
    S.sel = pos;
    applyFilters();
    if (pos >= 0) select(pos);
    else { clear($("tl-view")); $("tl-view").appendChild(el("p", "tl-empty", "No passes were recorded in this run.")); }
    finishStart(saved);
  }
  function finishStart(saved) {
    cmp.listen();
    if (window.tltraceProfile) window.tltraceProfile.attach({ recs: S.recs, texts: S.texts, meta: S.meta, select: select });
    if (window.tltraceSourceMap) window.tltraceSourceMap.attach({ recs: S.recs, items: S.items, texts: S.texts, select: select });
    if (saved) {  // back from a reload of a running report: where the reader was
      $("tl-view").scrollTop = saved.view || 0;
      $("tl-passes").scrollTop = saved.list || 0;
    }
    scheduleRefresh();
    // When the first pass was on screen (ms since navigation): bench/report.py reads it.
    document.documentElement.setAttribute("data-ready-ms", String(Math.round(performance.now())));
    document.documentElement.setAttribute("data-ready", "1");
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
