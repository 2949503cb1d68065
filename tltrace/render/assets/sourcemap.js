/* tltrace report: the Source pane (source maps, render/sourcemap.py).
 *
 * Data: chunks {"t":"smap"} (a line map: files, and per line null | 0 | [file index, line]),
 * {"t":"src"} (a Python source as captured) and {"t":"srec"} (the maps of a record's before
 * and after texts). report.js calls window.tltraceSourceMap.attach(ctx) once the page is built.
 *
 * Clicking a Python line marks, in the pass on screen, the lines of the before and after texts
 * (or the generated source) that come from it, lists the generated lines and the passes that
 * first lose it. Clicking a line of IR or generated source picks its Python line. Each pass in
 * the list gets a badge: statement lines of its output with no Python line.
 * Everything is built with textContent, never markup.
 *
 * The pure parts (no DOM) run under node too (module.exports, tests/test_sourcemap_js.py, against
 * history/sourcemaps.py): addChunk (a chunk into the maps), srcAt, stats, outSide, kernelFile,
 * lostKeys (the Python lines a pass loses), lostIn (the passes that lose a line for good), viaAt (the
 * library line behind a call site) and badgeOf (what a pass's badge counts).
 * @requires core.js report-logic.js
 */
(function (root) {
  "use strict";

  var M = {
    maps: new Map(), srcs: new Map(), byRec: new Map(), recs: [], items: [], texts: null, select: null,
    kernel: null, file: null, py: null, keys: new Map(), pending: false, dock: "bottom", hot: new Map()
  };
  var KEY_SHOWN = "tltrace-source-pane", KEY_DOCK = "tltrace-source-dock", KEY_SIZE = "tltrace-source-size-";
  var C = root.TLCore || {}, el = C.el, clear = C.clear, getPref = C.getPref, setPref = C.setPref;

  function $(id) { return root.document.getElementById(id); }
  function base(path) { var s = String(path); var i = Math.max(s.lastIndexOf("/"), s.lastIndexOf("\\")); return s.slice(i + 1); }

  // ---- data ------------------------------------------------------------------------------------
  // One chunk ({"t":"smap"|"src"|"srec"}) into the state `m` ({maps, srcs, byRec}); others are ignored.
  function addChunk(m, d) {
    if (!d || typeof d !== "object") return;
    if (d.t === "smap" && typeof d.h === "string" && Array.isArray(d.files) && Array.isArray(d.lines)) {
      m.maps.set(d.h, { files: d.files.map(String), lines: d.lines, inferred: new Set(Array.isArray(d.inferred) ? d.inferred : []), via: viaOf(d.via) });
    } else if (d.t === "src" && typeof d.path === "string" && typeof d.s === "string") {
      m.srcs.set(d.path, d.s);
    } else if (d.t === "srec" && typeof d.i === "number") {
      m.byRec.set(d.i, { b: typeof d.b === "string" ? d.b : null, a: typeof d.a === "string" ? d.a : null });
    } else if (d.t === "hot" && Array.isArray(d.lines) && m.hot) {
      // [file, line, share, top stall, kernel] (run --ncu: history/report_reads.hot_rows); a line of
      // two kernels keeps its larger share.
      d.lines.forEach(function (x) {
        if (!Array.isArray(x) || typeof x[2] !== "number") return;
        var k = keyOf(String(x[0]), x[1]), was = m.hot.get(k);
        if (!was || was.share < x[2]) m.hot.set(k, { share: x[2], stall: x[3] ? String(x[3]) : null, kernel: String(x[4]) });
      });
    }
  }
  function load() {
    var nodes = root.document.querySelectorAll("script.tl-d");
    for (var i = 0; i < nodes.length; i++) {
      // Each element is parsed once for the page (core.js chunkValues): report.js has read them all.
      var list = C.chunkValues(nodes[i]) || [];
      for (var j = 0; j < list.length; j++) addChunk(M, list[j]);
    }
  }
  // {line: [file index, line]} from a map's "via" triples (the library line behind a call site).
  function viaOf(list) {
    var out = new Map();
    if (Array.isArray(list)) list.forEach(function (v) { if (Array.isArray(v) && v.length === 3) out.set(v[0], [v[1], v[2]]); });
    return out;
  }
  // The library [file, line] that line i went through to its call site, or null (LineMap.via_src).
  function viaAt(map, i) {
    var v = map && map.via ? map.via.get(i) : undefined;
    return v ? [map.files[v[0]], v[1]] : null;
  }
  function viaText(map, i) { var v = viaAt(map, i); return v ? " via " + base(v[0]) + ":" + v[1] : ""; }
  function mapOf(h) { return h ? M.maps.get(h) || null : null; }
  // [file, line] behind line i (0-based) of a text, or null (sourcemap/lines.py LineMap.src).
  function srcAt(map, i) {
    if (!map || i < 0 || i >= map.lines.length) return null;
    var v = map.lines[i];
    return Array.isArray(v) && v.length === 2 ? [map.files[v[0]], v[1]] : null;
  }
  function keyOf(file, line) { return file + "\u0000" + line; }
  // The set of "file\0line" a map's lines come from (LineMap.python_lines).
  function pythonLines(map) {
    var set = new Set();
    if (map) map.lines.forEach(function (v) { if (Array.isArray(v)) set.add(keyOf(map.files[v[0]], v[1])); });
    return set;
  }
  // The same, cached per map hash.
  function keys(h) {
    if (!h) return null;
    if (!M.keys.has(h)) M.keys.set(h, pythonLines(mapOf(h)));
    return M.keys.get(h);
  }
  // Statement lines, and those of them with no Python line (LineMap.coverage: stmts - mapped).
  function stats(map) {
    var stmts = 0, none = 0;
    if (map) map.lines.forEach(function (v) { if (v !== null) { stmts++; if (!Array.isArray(v)) none++; } });
    return { stmts: stmts, none: none };
  }
  // The side a pass is judged by: its output, or its input when it failed (history/sourcemaps.py side_of).
  function outSide(r) { return r.status === "failed" || !r.after_hash ? "b" : "a"; }
  // The Python lines of `before` that `after` no longer has, sorted ("file\0line" keys).
  function lostKeys(before, after) {
    var a = after instanceof Set ? after : pythonLines(after), out = [];
    (before instanceof Set ? before : pythonLines(before)).forEach(function (k) { if (!a.has(k)) out.push(k); });
    return out.sort();
  }
  // What a pass's badge counts: {stmts, none, dropped, grew} of its output (null: no map).
  function badgeOf(r, rm, maps) {
    function get(h) { return h ? maps.get(h) || null : null; }
    var out = get(outSide(r) === "a" ? rm.a : rm.b);
    if (!out) return null;
    var st = stats(out), before = r.status !== "failed" && r.status !== "codegen" ? get(rm.b) : null;
    var dropped = before ? lostKeys(before, get(rm.a)).length : 0;
    return { stmts: st.stmts, none: st.none, dropped: dropped, grew: before ? st.none - stats(before).none : 0 };
  }
  // A file of TileLang or TVM itself (an expanded T.gemm points there), not the user's (history/sourcemaps.py _library).
  function library(path) {
    var parts = String(path).split(/[\\/]/);
    return parts.indexOf("site-packages") >= 0 || parts.indexOf("dist-packages") >= 0 ||
      parts.slice(0, -1).indexOf("tilelang") >= 0;
  }
  // The user's file: most mapped lines, files of TileLang's own package last, then the greater name
  // (history/sourcemaps.py kernel_file).
  function kernelFile(maps) {
    var count = new Map();
    maps.forEach(function (m) {
      m.lines.forEach(function (v) { if (Array.isArray(v)) { var f = m.files[v[0]]; count.set(f, (count.get(f) || 0) + 1); } });
    });
    var best = null;
    count.forEach(function (n, f) {
      if (best === null) { best = f; return; }
      var a = [library(f) ? 0 : 1, n], b = [library(best) ? 0 : 1, count.get(best)];
      if (a[0] > b[0] || (a[0] === b[0] && (a[1] > b[1] || (a[1] === b[1] && f > best)))) best = f;
    });
    return best;
  }
  function currentRec() {
    var li = root.document.querySelector("li.tl-pass.selected");
    if (!li) return null;
    var ix = parseInt(li.getAttribute("data-index"), 10);
    for (var i = 0; i < M.recs.length; i++) if (M.recs[i].index === ix) return M.recs[i];
    return null;
  }

  // ---- the pane --------------------------------------------------------------------------------
  function buildPane() {
    var main = $("tl-main");
    var pane = el("aside", "tl-source");
    pane.id = "tl-source";
    var head = el("div", "tl-source-head");
    head.appendChild(el("b", null, "Source"));
    var pick = el("select", "tl-source-file");
    pick.title = "Python files the records point at";
    var files = Array.from(M.srcs.keys());
    files.sort(function (a, b) { return (a === M.kernel ? -1 : b === M.kernel ? 1 : a < b ? -1 : a > b ? 1 : 0); });
    files.forEach(function (f) { var o = el("option", null, base(f)); o.value = f; o.title = f; pick.appendChild(o); });
    pick.addEventListener("change", function () { M.file = pick.value; renderSource(); });
    head.appendChild(pick);
    var dock = el("button", "tl-source-dock", "");
    dock.type = "button"; dock.id = "tl-source-dock";
    dock.addEventListener("click", function () { setDock(M.dock === "right" ? "bottom" : "right"); });
    head.appendChild(dock);
    var close = el("button", "tl-source-close", "\u00D7");
    close.type = "button"; close.title = "Hide the Source pane (s)";
    close.addEventListener("click", function () { show(false, true); });
    head.appendChild(close);
    pane.appendChild(head);
    var info = el("div", "tl-source-info");
    info.id = "tl-source-info";
    info.textContent = "Click a line to see where it went.";
    pane.appendChild(info);
    var body = el("div", "tl-source-body");
    body.id = "tl-source-body";
    pane.appendChild(body);
    var grip = el("div", "tl-source-grip");
    grip.title = "Drag to resize the Source pane";
    grip.addEventListener("mousedown", startResize);
    pane.appendChild(grip);
    main.appendChild(pane);
    M.dock = getPref(KEY_DOCK) === "right" ? "right" : "bottom";
    var btn = el("button", null, "Source");
    btn.id = "tl-source-btn"; btn.type = "button";
    btn.title = "Show or hide the kernel's Python source (s): click a line to find it in every pass";
    btn.addEventListener("click", function () { show(pane.hidden, true); });
    var tools = document.querySelector(".tl-tools");
    if (tools) tools.insertBefore(btn, tools.firstChild);
    M.file = files.length ? files[0] : null;
    renderSource();
    // Closed until the reader opens it: the first view gives the diff the page.
    show(getPref(KEY_SHOWN) === "1", false);
    root.document.addEventListener("keydown", onKey);
  }
  // `remember`: the reader's own choice (the button, the key, the close box), kept for the next report;
  // a pane opened by clicking a line of IR is not.
  function show(on, remember) {
    var pane = $("tl-source");
    pane.hidden = !on;
    layout();
    var btn = $("tl-source-btn");
    btn.classList.toggle("active", on);
    btn.setAttribute("aria-pressed", on ? "true" : "false");
    if (remember) setPref(KEY_SHOWN, on ? "1" : "0");
  }
  // Where the pane sits: at the bottom by default, so the diff keeps its width (its two code columns
  // are what the pane would squeeze at the right); at the right on the reader's choice (the dock
  // button). Its height at the bottom, its width at the right: the reader's drag, kept per dock.
  function layout() {
    var main = $("tl-main"), pane = $("tl-source"), dock = $("tl-source-dock");
    var bottom = M.dock !== "right", size = parseInt(getPref(KEY_SIZE + M.dock) || "", 10);
    main.classList.toggle("tl-src-bottom", bottom && !pane.hidden);
    main.style.removeProperty("--tl-src-h");
    pane.style.width = "";
    if (size > 0 && bottom) main.style.setProperty("--tl-src-h", Math.min(size, Math.floor(root.innerHeight * 0.8)) + "px");
    else if (size > 0) pane.style.width = Math.min(size, Math.floor(root.innerWidth * 0.5)) + "px";
    dock.textContent = bottom ? "\u21E5" : "\u2913";
    dock.title = bottom ? "Dock the Source pane at the right" : "Dock the Source pane at the bottom (the diff keeps its width)";
  }
  function setDock(where) {
    M.dock = where;
    setPref(KEY_DOCK, where);
    layout();
  }
  function startResize(ev) {
    ev.preventDefault();
    var pane = $("tl-source"), grip = ev.currentTarget, bottom = M.dock !== "right";
    var box = pane.getBoundingClientRect();
    grip.classList.add("dragging");
    function size(e) {
      return Math.max(80, Math.round(bottom ? box.bottom - e.clientY : box.right - e.clientX));
    }
    function mv(e) {
      if (bottom) $("tl-main").style.setProperty("--tl-src-h", size(e) + "px");
      else pane.style.width = size(e) + "px";
    }
    function up(e) {
      grip.classList.remove("dragging");
      root.document.removeEventListener("mousemove", mv);
      root.document.removeEventListener("mouseup", up);
      setPref(KEY_SIZE + M.dock, String(size(e)));
    }
    root.document.addEventListener("mousemove", mv);
    root.document.addEventListener("mouseup", up);
  }
  // `s` opens and closes the pane (not while typing in a field).
  function onKey(ev) {
    if (ev.key !== "s" || ev.ctrlKey || ev.metaKey || ev.altKey || ev.defaultPrevented) return;
    var L = root.TLReportLogic;
    if (L && L.isTextField(ev.target)) return;
    ev.preventDefault();
    show($("tl-source").hidden, true);
  }
  function renderSource() {
    var body = $("tl-source-body");
    clear(body);
    var text = M.file ? M.srcs.get(M.file) : undefined;
    if (text === undefined) { body.appendChild(el("p", "tl-empty", "(no Python source in this report)")); return; }
    var used = new Set();
    M.maps.forEach(function (m) {
      m.lines.forEach(function (v) { if (Array.isArray(v) && m.files[v[0]] === M.file) used.add(v[1]); });
    });
    var lines = text.split("\n");
    if (lines.length > 1 && lines[lines.length - 1] === "") lines.pop();
    var top = 0;  // the hottest line's share: the darkest shade
    M.hot.forEach(function (h) { top = Math.max(top, h.share); });
    var table = el("table", "tl-diff tl-plain tl-source-code");
    var cg = el("colgroup");
    cg.appendChild(el("col", "ln")); cg.appendChild(el("col", "code"));
    table.appendChild(cg);
    var tbody = el("tbody");
    lines.forEach(function (ln, i) {
      var tr = el("tr", used.has(i + 1) ? "used" : null);
      tr.setAttribute("data-py", i + 1);
      shadeHot(tr, M.hot.get(keyOf(M.file, i + 1)), top);
      tr.appendChild(el("td", "ln", i + 1));
      tr.appendChild(el("td", "code", ln));
      tbody.appendChild(tr);
    });
    table.appendChild(tbody);
    table.addEventListener("click", function (ev) {
      var tr = ev.target.closest("tr[data-py]");
      if (tr) pick(M.file, parseInt(tr.getAttribute("data-py"), 10), false);
    });
    body.appendChild(table);
    markSource(false);
  }
  // A line's share of the kernel's warp-stall samples (run --ncu; show --hot): five shades (the darkest
  // the hottest line's, `top`), and a title.
  function shadeHot(tr, h, top) {
    if (!h || !(h.share > 0)) return;
    tr.classList.add("tl-hot", "tl-hot-" + Math.min(5, Math.max(1, Math.ceil(5 * h.share / top))));
    tr.setAttribute("data-hot-share", String(h.share));
    tr.title = "hot: " + (100 * h.share).toFixed(1) + "% of " + h.kernel + "'s warp-stall samples" +
      (h.stall ? "; top stall: " + h.stall : "") + " (tltrace show --hot)";
  }
  function markSource(scroll) {
    var body = $("tl-source-body");
    body.querySelectorAll("tr.sel").forEach(function (t) { t.classList.remove("sel"); });
    if (!M.py || M.py[0] !== M.file) return;
    var tr = body.querySelector('tr[data-py="' + M.py[1] + '"]');
    if (tr) {
      tr.classList.add("sel");
      if (scroll) tr.scrollIntoView({ block: "center" });
    }
  }

  // ---- picking a Python line ---------------------------------------------------------------------
  function pick(file, line, fromView) {
    M.py = [file, line];
    if (file !== M.file && M.srcs.has(file)) {
      M.file = file;
      var sel = document.querySelector(".tl-source-file");
      if (sel) sel.value = file;
      renderSource();
    }
    if (fromView && $("tl-source").hidden) show(true, false);
    markSource(fromView);
    var first = markView();
    if (!fromView && first) first.scrollIntoView({ block: "center" });
    describe();
  }
  function describe() {
    var info = $("tl-source-info");
    clear(info);
    if (!M.py) return;
    var k = keyOf(M.py[0], M.py[1]);
    info.appendChild(el("div", "tl-sm-what", base(M.py[0]) + ":" + M.py[1]));
    var r = currentRec(), rm = r ? M.byRec.get(r.index) : null;
    if (r) {
      var nb = countLines(rm && rm.b, k), na = countLines(rm && rm.a, k);
      info.appendChild(el("div", "tl-sm-here", "this pass: " + nb + " line" + (nb === 1 ? "" : "s") + " before, " +
        na + " after" + (r.status === "codegen" ? " (generated source)" : "")));
    }
    // The generated source: the last codegen record of each role.
    var gens = {};
    M.recs.forEach(function (x) { if (x.status === "codegen" && M.byRec.has(x.index) && M.byRec.get(x.index).a) gens[x.role || "device"] = x; });
    Object.keys(gens).forEach(function (role) {
      var g = gens[role], map = mapOf(M.byRec.get(g.index).a), text = M.texts ? M.texts.get(g.after_hash) : undefined;
      var hits = [];
      if (map && text !== undefined) {
        var lines = text.split("\n");
        for (var i = 0; i < map.lines.length && i < lines.length; i++) {
          var s = srcAt(map, i);
          if (s && keyOf(s[0], s[1]) === k) hits.push(i);
        }
      }
      var box = el("div", "tl-sm-gen");
      box.setAttribute("data-role", role);
      box.appendChild(el("div", "lbl", "generated " + role + " source: " + hits.length + " line" + (hits.length === 1 ? "" : "s")));
      hits.slice(0, 40).forEach(function (i) {
        var row = el("div", "tl-sm-genline");
        row.appendChild(el("span", "n", i + 1));
        row.appendChild(el("code", null, text.split("\n")[i].trim()));
        if (viaAt(map, i)) row.appendChild(el("span", "tl-sm-via", viaText(map, i).trim()));
        row.title = "Open " + g.name + " at line " + (i + 1);
        row.addEventListener("click", function () { openCodegen(g, i); });
        box.appendChild(row);
      });
      info.appendChild(box);
    });
    var lost = lostIn(M.recs, M.byRec, keys, k);
    var lb = el("div", "tl-sm-lost");
    if (!lost.length) lb.textContent = "no pass loses this line";
    else {
      lb.appendChild(document.createTextNode("lost in: "));
      lost.forEach(function (pos, j) {
        var a = el("button", "tl-sm-lostpass", M.recs[pos].name + " #" + M.recs[pos].index);
        a.type = "button";
        a.addEventListener("click", function () { M.select(pos); });
        if (j) lb.appendChild(document.createTextNode(" "));
        lb.appendChild(a);
      });
    }
    info.appendChild(lb);
  }
  // The passes (positions in `recs`) that lose Python line `k` for good: its input has it, its output
  // not, and no later text has it again (tirx.Filter's host half drops what the device half keeps).
  function lostIn(recs, byRec, keysOf, k) {
    var out = [], later = false;
    for (var pos = recs.length - 1; pos >= 0; pos--) {
      var rm = byRec.get(recs[pos].index);
      if (!rm) continue;
      var inB = rm.b ? keysOf(rm.b).has(k) : false, inA = rm.a ? keysOf(rm.a).has(k) : false;
      if (!later && inB && rm.a && !inA && recs[pos].status !== "codegen") out.unshift(pos);
      if (inB || inA) later = true;
    }
    return out;
  }
  function countLines(h, k) {
    var map = mapOf(h), n = 0;
    if (!map) return 0;
    for (var i = 0; i < map.lines.length; i++) { var s = srcAt(map, i); if (s && keyOf(s[0], s[1]) === k) n++; }
    return n;
  }
  function openCodegen(rec, line) {
    for (var pos = 0; pos < M.recs.length; pos++) if (M.recs[pos] === rec) { M.select(pos); break; }
    var panes = document.querySelectorAll("#tl-view .tl-panes > .tl-pane");
    var pane = panes[panes.length - 1];
    var tr = pane ? pane.querySelectorAll("tbody tr")[line] : null;
    if (tr) tr.scrollIntoView({ block: "center" });
  }

  // ---- the pass on screen --------------------------------------------------------------------------
  // Every line of the view with its map and line number: [td, map, i] (diff tables and panes).
  function viewLines() {
    var r = currentRec(), out = [];
    if (!r) return out;
    var rm = M.byRec.get(r.index) || { b: null, a: null };
    var B = mapOf(rm.b), A = mapOf(rm.a), view = $("tl-view");
    view.querySelectorAll("table.tl-diff:not(.tl-plain) tr").forEach(function (tr) {
      var l = tr.getAttribute("data-l"), rr = tr.getAttribute("data-r");
      if (l !== null) out.push([tr.querySelector("td.code.l"), B, parseInt(l, 10), tr.querySelector("td.ln.l")]);
      if (rr !== null) out.push([tr.querySelector("td.code.r"), A, parseInt(rr, 10), tr.querySelector("td.ln.r")]);
    });
    var panes = view.querySelectorAll(".tl-panes > .tl-pane");
    panes.forEach(function (p, n) {
      var map = n === 0 ? B : A;
      p.querySelectorAll("tbody tr").forEach(function (tr, i) {
        out.push([tr.querySelector("td.code"), map, i, tr.querySelector("td.ln")]);
      });
    });
    return out;
  }
  function markView() {
    var view = $("tl-view");
    view.querySelectorAll(".tl-sm-hit").forEach(function (n) { n.classList.remove("tl-sm-hit"); });
    if (!M.py) return null;
    var k = keyOf(M.py[0], M.py[1]), first = null;
    viewLines().forEach(function (x) {
      var s = srcAt(x[1], x[2]);
      if (s && keyOf(s[0], s[1]) === k) {
        if (x[0]) x[0].classList.add("tl-sm-hit");
        if (x[3]) x[3].classList.add("tl-sm-hit");
        if (!first) first = x[0];
      }
    });
    return first;
  }
  function onViewClick(ev) {
    if (document.body.classList.contains("tl-aligning")) return;
    if (window.getSelection && String(window.getSelection()) !== "") return;
    var td = ev.target.closest("td.code, td.ln");
    if (!td || ev.target.closest("button")) return;
    var found = null;
    viewLines().forEach(function (x) { if (x[0] === td || x[3] === td) found = x; });
    if (!found) return;
    var s = srcAt(found[1], found[2]);
    if (s) pick(s[0], s[1], true);
    else {
      var info = $("tl-source-info");
      clear(info);
      info.appendChild(el("div", "tl-sm-none", "line " + (found[2] + 1) + " has no Python line"));
    }
  }
  // A failed pass (or run) whose error names the user's line gets a link to it: the failing
  // operation's line (meta.fail_site, history/failsite.py) where the error points at the
  // allocation of the buffer that operation uses, else the error's own line.
  var ARROW = /-->\s*(.+?):(\d+)(?::\d+)?\s*$/m;
  function linkErrors() {
    document.querySelectorAll(".tl-error pre, .tl-runerror-full, #tl-runerror .msg").forEach(function (pre) {
      var host = pre.parentNode;
      if (!host || host.querySelector(".tl-sm-errloc")) return;
      var m = ARROW.exec(pre.textContent || "");
      if (!m) return;
      var file = m[1], line = parseInt(m[2], 10), site = M.site, why = "";
      if (site && site.op && site.file === file && site.error_line === line) {
        line = site.line;
        why = " (" + site.op + ", the first use of " + site.buffer + "; the error points at its allocation, line " + site.error_line + ")";
      }
      var b = el("button", "tl-sm-errloc", "at " + base(file) + ":" + line + (why ? " " + site.op : ""));
      b.type = "button";
      b.title = "Show this line of the kernel's source" + why;
      b.addEventListener("click", function () { pick(file, line, true); });
      host.insertBefore(b, pre.nextSibling);
    });
  }
  // Each numbered line of the view says where it comes from when hovered, and is marked when it has a Python line.
  function margins() {
    viewLines().forEach(function (x) {
      if (!x[3] || x[3].hasAttribute("data-py")) return;
      var s = srcAt(x[1], x[2]);
      x[3].setAttribute("data-py", s ? base(s[0]) + ":" + s[1] : "");
      var inf = s && x[1] && x[1].inferred && x[1].inferred.has(x[2]);
      if (s) { x[3].title = (inf ? "inferred (enclosing statement): from " : "from ") + s[0] + ":" + s[1] + viaText(x[1], x[2]) + " (click to show it)"; x[3].classList.add("tl-sm-has"); }
    });
  }
  function refresh() {
    M.pending = false;
    margins();
    markView();
    linkErrors();
    if (M.py) describe();
  }
  function later() {
    if (M.pending) return;
    M.pending = true;
    (window.requestAnimationFrame || setTimeout)(refresh);
  }

  // ---- badges: statement lines of a pass's output with no Python line ----------------------------
  function badges() {
    M.recs.forEach(function (r, pos) {
      var rm = M.byRec.get(r.index), li = M.items[pos];
      if (!rm || !li) return;
      var n = badgeOf(r, rm, M.maps);
      if (!n || (!n.none && !n.dropped)) return;
      var b = el("span", "tl-sm-badge" + (n.dropped || n.grew > 0 ? " lost" : ""), "\u2300" + n.none + (n.dropped ? " \u2193" + n.dropped : ""));
      b.title = n.none + " of " + n.stmts + " statement lines have no Python line" +
        (n.grew > 0 ? " (" + n.grew + " more than before this pass)" : "") +
        (n.dropped ? "; " + n.dropped + " Python line" + (n.dropped === 1 ? "" : "s") + " no longer appear after it" : "");
      var dur = li.querySelector(".dur");
      li.insertBefore(b, dur);
    });
  }

  function attach(ctx) {
    load();
    if (!M.byRec.size) return;
    M.recs = ctx.recs || []; M.items = ctx.items || []; M.texts = ctx.texts || null; M.select = ctx.select;
    M.site = (ctx.meta && ctx.meta.fail_site) || null;
    M.kernel = kernelFile(M.maps);
    if (!M.srcs.size && M.kernel) M.srcs.set(M.kernel, "");
    buildPane();
    badges();
    var view = $("tl-view");
    view.addEventListener("click", onViewClick);
    if (window.MutationObserver) new MutationObserver(later).observe(view, { childList: true, subtree: true });
    refresh();
  }

  var api = {
    attach: attach, pick: function (file, line) { pick(file, line, true); }, hasSource: function (file) { return M.srcs.has(file); },
    addChunk: addChunk, srcAt: srcAt, viaAt: viaAt, stats: stats, outSide: outSide, lostKeys: lostKeys, lostIn: lostIn,
    badgeOf: badgeOf, kernelFile: kernelFile
  };
  if (typeof module === "object" && module.exports) module.exports = api;
  else root.tltraceSourceMap = api;
})(typeof window !== "undefined" ? window : this);
