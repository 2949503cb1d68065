/* tltrace profile view: where a compile spends its time, drawn as SVG by the page itself.
 *
 * window.tltraceProfile.attach(ctx) is called once by report.js when a compile report has
 * loaded (ctx: {recs, texts, meta, select}); it adds a "Profile" button and a panel that
 * is drawn the first time it opens, so a report that is never profiled pays nothing.
 * The panel shows one bar per pass in pipeline order (height: duration, log or linear),
 * nested passes under a bracket of their parent, phases as a strip above, and the IR size
 * (lines) after each pass as a line; clicking a bar opens that pass.
 *
 * window.tltraceProfile.drawAggregate(host, compiles) draws the invocation view: time per
 * pass name summed over the compiles, and its spread per compile (min, quartiles, max).
 * compiles: [{run: "run_...", wall: seconds, times: {passName: seconds}}].
 *
 * No library, no network; names only ever reach the page as text.
 *
 * The pure parts (no DOM) run under node too (module.exports, tests/test_index_js.py): fmt,
 * lineCount, compileParts, quantile, aggregateRows and compilesOfRows (the index rows' times).
 */
(function (scope) {
  "use strict";

  var NS = "http://www.w3.org/2000/svg";

  function svg(tag, attrs, cls) {
    var n = document.createElementNS(NS, tag);
    if (attrs) for (var k in attrs) if (Object.prototype.hasOwnProperty.call(attrs, k)) n.setAttribute(k, String(attrs[k]));
    if (cls) n.setAttribute("class", cls);
    return n;
  }
  function text(x, y, s, cls, anchor) {
    var t = svg("text", { x: x, y: y }, cls);
    if (anchor) t.setAttribute("text-anchor", anchor);
    t.textContent = String(s);
    return t;
  }
  function title(node, s) {
    var t = svg("title");
    t.textContent = String(s);
    node.appendChild(t);
    return node;
  }
  function el(tag, cls, s) {
    var n = document.createElement(tag);
    if (cls) n.className = cls;
    if (s !== undefined && s !== null) n.textContent = String(s);
    return n;
  }
  function fmt(s) {
    if (typeof s !== "number" || !isFinite(s)) return "?";
    if (s >= 1) return s.toFixed(2) + " s";
    if (s >= 0.001) return (s * 1000).toFixed(1) + " ms";
    return Math.round(s * 1e6) + " \u00B5s";
  }
  function pct(part, whole) { return whole > 0 ? (100 * part / whole).toFixed(1) + "%" : ""; }
  function lineCount(s) {
    if (typeof s !== "string" || !s.length) return 0;
    var n = 0, i = -1;
    while ((i = s.indexOf("\n", i + 1)) >= 0) n++;
    return s.charAt(s.length - 1) === "\n" ? n : n + 1;
  }

  // ---- one compile: the numbers -----------------------------------------------------------------
  // Returns {wall, passes, codegen, backend, untimed}: seconds, as tltrace show --profile counts them.
  function compileParts(recs, meta) {
    var top = 0, codegen = 0, lastEnd = 0, cgEnd = -1, exact = recs.length > 0;
    recs.forEach(function (r) {
      var d = +r.duration_s || 0;
      if (typeof r.start_s !== "number") exact = false;
      if (!r.depth) {
        top += d;
        if (r.status === "codegen") codegen += d;
      }
      if (typeof r.start_s === "number") {
        var end = r.start_s + d;
        if (!r.depth && end > lastEnd) lastEnd = end;
        if (r.status === "codegen" && end > cgEnd) cgEnd = end;
      }
    });
    var wall = (meta.finished && meta.started) ? Math.max(meta.finished - meta.started, lastEnd) : (exact ? lastEnd : top);
    var backend = exact && cgEnd >= 0 && cgEnd >= lastEnd - 1e-9 && meta.finished ? Math.max(0, wall - cgEnd) : 0;
    return { wall: wall, passes: top - codegen, codegen: codegen, backend: backend,
             untimed: Math.max(0, wall - top - backend), exact: exact };
  }

  // ---- one compile: the chart -------------------------------------------------------------------
  var H = 150, PAD_L = 58, PAD_R = 56, PAD_T = 22, PAD_B = 34, MIN_COL = 4;

  function drawCompile(host, ctx, opts) {
    while (host.firstChild) host.removeChild(host.firstChild);
    var recs = ctx.recs, n = recs.length;
    if (!n) { host.appendChild(el("p", "tl-empty", "No passes were recorded in this run.")); return null; }
    var avail = Math.max(300, (host.clientWidth || 900) - PAD_L - PAD_R - 4);
    var W = Math.max(avail, n * MIN_COL), cw = W / n;
    var log = opts.log;
    var durs = recs.map(function (r) { return Math.max(0, +r.duration_s || 0); });
    var dmax = Math.max.apply(null, durs.concat([1e-6]));
    var pos = durs.filter(function (d) { return d > 0; });
    var dmin = pos.length ? Math.min.apply(null, pos) : 1e-6;
    var lo = Math.pow(10, Math.floor(Math.log10(Math.max(dmin, 1e-7))));
    var hi = Math.pow(10, Math.ceil(Math.log10(dmax)));
    if (hi <= lo) hi = lo * 10;
    function y(d) {
      var f = log ? (d <= lo ? 0 : (Math.log10(d) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo))) : d / dmax;
      return PAD_T + H - Math.max(2, f * H);
    }
    var lines = recs.map(function (r) {
      var h = r.status === "failed" ? r.before_hash : r.after_hash;
      var s = h ? ctx.texts.get(h) : undefined;
      return s === undefined ? null : lineCount(s);
    });
    var lmax = Math.max.apply(null, lines.map(function (v) { return v || 0; }).concat([1]));
    function yl(v) { return PAD_T + H - (v / lmax) * H; }

    var root = svg("svg", { width: PAD_L + W + PAD_R, height: PAD_T + H + PAD_B, role: "img" }, "tl-prof-svg");
    root.setAttribute("aria-label", "Pass durations along the pipeline and IR size after each pass");
    // phases: a strip above the bars
    var start = 0;
    for (var i = 1; i <= n; i++) {
      if (i === n || recs[i].phase !== recs[start].phase) {
        var band = svg("rect", { x: PAD_L + start * cw, y: 2, width: Math.max(1, (i - start) * cw - 1), height: 14 },
          "tl-prof-phase");
        title(band, recs[start].phase + ": passes " + recs[start].index + "\u2013" + recs[i - 1].index);
        root.appendChild(band);
        if ((i - start) * cw > 60) root.appendChild(text(PAD_L + start * cw + 4, 13, recs[start].phase, "tl-prof-phase-label"));
        start = i;
      }
    }
    // axes and grid
    var ticks = [];
    if (log) for (var t = lo; t <= hi * 1.0001; t *= 10) ticks.push(t);
    else ticks = [0, dmax / 2, dmax];
    ticks.forEach(function (t) {
      var yy = log ? y(t) + (t <= lo ? 2 : 0) : PAD_T + H - (t / dmax) * H;
      root.appendChild(svg("line", { x1: PAD_L, x2: PAD_L + W, y1: yy, y2: yy }, "tl-prof-grid"));
      root.appendChild(text(PAD_L - 4, yy + 4, fmt(t), "tl-prof-tick", "end"));
    });
    [0, Math.round(lmax / 2), lmax].forEach(function (v) {
      root.appendChild(text(PAD_L + W + 4, yl(v) + 4, v + " ln", "tl-prof-tick tl-prof-lines-tick"));
    });
    root.appendChild(text(PAD_L - 4, PAD_T + H + 14, log ? "time (log)" : "time", "tl-prof-axis", "end"));
    // nesting brackets: a parent spans its own column and its descendants'
    var posByIndex = new Map();
    recs.forEach(function (r, p) { posByIndex.set(r.index, p); });
    var lastDesc = recs.map(function (_, p) { return p; });
    for (var p = n - 1; p >= 0; p--) {
      var par = recs[p].parent;
      if (par !== undefined && par !== null && posByIndex.has(par)) {
        var pp = posByIndex.get(par);
        if (lastDesc[p] > lastDesc[pp]) lastDesc[pp] = lastDesc[p];
      }
    }
    recs.forEach(function (r, p) {
      if (lastDesc[p] === p) return;
      var x0 = PAD_L + p * cw, x1 = PAD_L + (lastDesc[p] + 1) * cw - 1;
      var by = PAD_T + H + 6 + (r.depth || 0) * 5;
      var b = svg("path", { d: "M" + x0 + " " + (by - 3) + "V" + by + "H" + x1 + "V" + (by - 3) }, "tl-prof-bracket");
      title(b, r.name + " runs " + (lastDesc[p] - p) + " nested pass(es)");
      root.appendChild(b);
      var bg = svg("rect", { x: x0, y: PAD_T, width: Math.max(1, x1 - x0), height: H }, "tl-prof-nestbg");
      root.insertBefore(bg, root.firstChild);
    });
    // bars
    var bars = svg("g", null, "tl-prof-bars");
    recs.forEach(function (r, p) {
      var d = durs[p], top = y(d);
      var inset = r.depth ? Math.min(cw * 0.3, 2 * r.depth) : 0;
      var bar = svg("rect", { x: PAD_L + p * cw + inset / 2, y: top, width: Math.max(1, cw - 1 - inset),
        height: PAD_T + H - top }, "tl-prof-bar " + r.status + (r.depth ? " nested" : ""));
      bar.setAttribute("data-pos", p);
      bar.setAttribute("data-index", r.index);
      var tip = "#" + r.index + " " + r.name + "\n" + r.phase + " \u00B7 " + r.status + " \u00B7 " + fmt(d);
      if (r.status === "changed" || r.status === "codegen") tip += " \u00B7 +" + (r.added || 0) + " \u2212" + (r.removed || 0);
      if (lines[p] !== null) tip += " \u00B7 " + lines[p] + " lines after";
      if (r.depth) tip += "\nnested (depth " + r.depth + ")";
      title(bar, tip);
      bars.appendChild(bar);
    });
    root.appendChild(bars);
    // IR size after each pass
    var pts = [];
    lines.forEach(function (v, p) { if (v !== null) pts.push((PAD_L + (p + 0.5) * cw).toFixed(1) + "," + yl(v).toFixed(1)); });
    if (pts.length > 1) root.appendChild(title(svg("polyline", { points: pts.join(" ") }, "tl-prof-lines"), "IR size (lines) after each pass"));
    root.appendChild(text(PAD_L, PAD_T + H + PAD_B - 4, "passes in pipeline order (" + n + ")", "tl-prof-axis"));
    root.addEventListener("click", function (ev) {
      var target = ev.target.closest ? ev.target.closest("[data-pos]") : null;
      if (!target) return;
      var q = root.querySelector(".tl-prof-bar.sel");
      if (q) q.classList.remove("sel");
      target.classList.add("sel");
      ctx.select(parseInt(target.getAttribute("data-pos"), 10));
    });
    host.appendChild(root);
    return root;
  }

  function summary(ctx) {
    var c = compileParts(ctx.recs, ctx.meta || {});
    var box = el("div", "tl-prof-summary");
    function part(label, v, cls, tip) {
      var s = el("span", "tl-prof-part " + cls, label + " " + fmt(v) + (c.wall > 0 ? " (" + pct(v, c.wall) + ")" : ""));
      if (tip) s.title = tip;
      box.appendChild(s);
    }
    box.appendChild(el("b", null, "compile " + fmt(c.wall)));
    part("passes", c.passes, "passes", "sum of the top-level passes (nested passes are inside them)");
    part("codegen", c.codegen, "codegen", "TIR to source (on tvm_ffi the device compiler runs here)");
    if (c.exact) part("backend build", c.backend, "backend", "after codegen until the compile ended: the execution backend's adapter (cython/nvrtc compile the generated source here)");
    part("untimed", c.untimed, "untimed", "between passes: TileLang's own Python and tltrace's IR capture");
    return box;
  }

  // The "Profile" button (first in the toolbar) and its panel, hidden, above `main`;
  // `open(panel)` fills the panel the first time it is shown. Returns the panel, or null
  // when the page has no toolbar or main view, or already has the button.
  function profilePanel(main, tip, open) {
    var tools = document.querySelector(".tl-tools");
    if (!tools || !main || document.getElementById("tl-profile")) return null;
    var panel = el("section", "tl-profile");
    panel.id = "tl-profile";
    panel.hidden = true;
    main.parentNode.insertBefore(panel, main);
    var btn = el("button", null, "Profile");
    btn.type = "button";
    btn.id = "tl-profile-btn";
    btn.title = tip;
    tools.insertBefore(btn, tools.firstChild);
    var drawn = false;
    btn.addEventListener("click", function () {
      panel.hidden = !panel.hidden;
      btn.classList.toggle("active", !panel.hidden);
      if (panel.hidden || drawn) return;
      drawn = true;
      open(panel);
    });
    return panel;
  }

  function attach(ctx) {
    var state = { log: true };
    var head = el("div", "tl-prof-head"), chart = el("div", "tl-prof-chart");
    function draw() {
      while (head.firstChild) head.removeChild(head.firstChild);
      head.appendChild(summary(ctx));
      var scale = el("button", "tl-prof-scale", state.log ? "linear scale" : "log scale");
      scale.type = "button";
      scale.title = "Switch the time axis between log and linear";
      scale.addEventListener("click", function () { state.log = !state.log; draw(); });
      head.appendChild(scale);
      var legend = el("span", "tl-prof-legend", "bar: duration \u00B7 line: IR lines after the pass \u00B7 click a bar to open the pass");
      head.appendChild(legend);
      drawCompile(chart, ctx, state);
    }
    var panel = profilePanel(document.getElementById("tl-main"),
      "Where the compile spent its time: pass durations along the pipeline and IR size", draw);
    if (!panel) return;
    panel.appendChild(head);
    panel.appendChild(chart);
  }

  // ---- an invocation: time per pass name over its compiles ----------------------------------------
  function quantile(sorted, q) {
    if (!sorted.length) return 0;
    var at = (sorted.length - 1) * q, i = Math.floor(at), f = at - i;
    return i + 1 < sorted.length ? sorted[i] + f * (sorted[i + 1] - sorted[i]) : sorted[i];
  }
  // Returns rows [{name, total, compiles, min, q1, median, q3, max}], slowest total first.
  function aggregateRows(compiles) {
    var by = new Map();
    (compiles || []).forEach(function (c) {
      var times = c && c.times;
      if (!times || typeof times !== "object") return;
      Object.keys(times).forEach(function (name) {
        var v = +times[name];
        if (!(v >= 0)) return;
        if (!by.has(name)) by.set(name, []);
        by.get(name).push(v);
      });
    });
    var rows = [];
    by.forEach(function (vals, name) {
      vals.sort(function (a, b) { return a - b; });
      var total = 0;
      vals.forEach(function (v) { total += v; });
      rows.push({ name: name, total: total, compiles: vals.length, min: vals[0], q1: quantile(vals, 0.25),
        median: quantile(vals, 0.5), q3: quantile(vals, 0.75), max: vals[vals.length - 1] });
    });
    rows.sort(function (a, b) { return b.total - a.total || (a.name < b.name ? -1 : 1); });
    return rows;
  }

  function drawAggregate(host, compiles, opts) {
    opts = opts || {};
    while (host.firstChild) host.removeChild(host.firstChild);
    var rows = aggregateRows(compiles), top = opts.top || 25, shown = rows.slice(0, top);
    if (!rows.length) { host.appendChild(el("p", "tl-empty", "No pass timings recorded yet.")); return null; }
    var wall = 0;
    (compiles || []).forEach(function (c) { wall += +c.wall || 0; });
    var ROW = 18, LABEL = 230, BAR = 260, GAP = 24, BOX = 260, top0 = 20;
    var width = LABEL + BAR + GAP + BOX + 90, height = top0 + shown.length * ROW + 8;
    var root = svg("svg", { width: width, height: height, role: "img" }, "tl-prof-svg tl-prof-agg");
    root.setAttribute("aria-label", "Time per pass name over the invocation's compiles");
    var tmax = shown[0].total || 1e-9, smax = 1e-9;
    shown.forEach(function (r) { if (r.max > smax) smax = r.max; });
    root.appendChild(text(LABEL, 12, "total over " + (compiles || []).length + " compile(s)", "tl-prof-axis"));
    root.appendChild(text(LABEL + BAR + GAP, 12, "per compile: min \u2013 quartiles \u2013 max (0 \u2013 " + fmt(smax) + ")", "tl-prof-axis"));
    shown.forEach(function (r, i) {
      var yy = top0 + i * ROW, g = svg("g", null, "tl-prof-aggrow");
      g.setAttribute("data-name", r.name);
      g.appendChild(text(LABEL - 6, yy + 12, r.name.length > 34 ? r.name.slice(0, 33) + "\u2026" : r.name, "tl-prof-name", "end"));
      g.appendChild(svg("rect", { x: LABEL, y: yy + 3, width: Math.max(1, BAR * r.total / tmax), height: ROW - 6 },
        "tl-prof-bar " + (/^(codegen|backend build|untimed)/.test(r.name) ? "codegen" : "changed")));
      g.appendChild(text(LABEL + Math.max(1, BAR * r.total / tmax) + 4, yy + 12,
        fmt(r.total) + (wall > 0 ? " \u00B7 " + pct(r.total, wall) : ""), "tl-prof-tick"));
      var bx = LABEL + BAR + GAP;
      function sx(v) { return bx + BOX * v / smax; }
      g.appendChild(svg("line", { x1: sx(r.min), x2: sx(r.max), y1: yy + ROW / 2, y2: yy + ROW / 2 }, "tl-prof-whisker"));
      g.appendChild(svg("rect", { x: sx(r.q1), y: yy + 4, width: Math.max(1, sx(r.q3) - sx(r.q1)), height: ROW - 8 }, "tl-prof-box"));
      g.appendChild(svg("line", { x1: sx(r.median), x2: sx(r.median), y1: yy + 3, y2: yy + ROW - 3 }, "tl-prof-median"));
      title(g, r.name + "\ntotal " + fmt(r.total) + " over " + r.compiles + " compile(s)\nper compile: min " + fmt(r.min) +
        ", median " + fmt(r.median) + ", max " + fmt(r.max));
      root.appendChild(g);
    });
    host.appendChild(root);
    if (rows.length > shown.length) host.appendChild(el("p", "tl-prof-more", (rows.length - shown.length) + " more pass name(s) not shown"));
    return root;
  }

  // The index rows' compiles for drawAggregate: each finished row carries pu: {name: microseconds}.
  function compilesOfRows(rows) {
    var compiles = [];
    (rows || []).forEach(function (r) {
      if (!r || !r.pu || typeof r.pu !== "object") return;
      var times = {};
      Object.keys(r.pu).forEach(function (k) { var v = +r.pu[k]; if (v >= 0) times[k] = v / 1e6; });
      compiles.push({ run: r.run_id, wall: +r.seconds || 0, times: times });
    });
    return compiles;
  }

  // The invocation index: a "Profile" button and a panel above the compiles' table.
  // ctx.rows: the index's compile rows; each finished one carries pu: {name: microseconds}.
  function attachIndex(ctx) {
    profilePanel(document.querySelector(".ix-main"),
      "Time per pass name over this invocation's compiles: summed, and its spread per compile", function (panel) {
      var compiles = compilesOfRows(ctx.rows);
      var head = el("div", "tl-prof-head");
      head.appendChild(el("b", null, compiles.length + " finished compile(s)"));
      head.appendChild(el("span", "tl-prof-legend", "bar: time summed over the compiles (share of their compile time) \u00B7 box: " +
        "per compile, min \u2013 quartiles \u2013 max; nested passes count in their parent too"));
      panel.appendChild(head);
      var chart = el("div", "tl-prof-chart");
      panel.appendChild(chart);
      drawAggregate(chart, compiles, { top: 30 });
    });
  }

  var api = { attach: attach, attachIndex: attachIndex, drawAggregate: drawAggregate, aggregateRows: aggregateRows,
              compileParts: compileParts, compilesOfRows: compilesOfRows, quantile: quantile, fmt: fmt, lineCount: lineCount };
  if (typeof module === "object" && module.exports) module.exports = api;
  else scope.tltraceProfile = api;
})(typeof window !== "undefined" ? window : this);
