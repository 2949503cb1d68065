/* tltrace layouts view: which thread and register hold each element of a fragment, and how a
 * shared buffer is swizzled (window.TLLayouts; docs/layouts.md).
 *
 * A report carries this script after its data, only when its compile has layouts (render/pages.py
 * layouts_tag; the head's CSP names its hash). meta.layouts (render/pages.py) is {final: [entry], failed}: each buffer's layout as the compile
 * left it. A "Layouts" button in the Facts strip opens a panel: pick a buffer; a fragment is
 * drawn coloured by thread, a shared layout by bank. The whole buffer is one canvas (drawn in
 * one pass, whatever its size) and the labelled cells are a window of it (WIN x WIN, moved by
 * clicking the canvas or the arrows), so a 256x256 fragment opens at once. Filters dim every
 * cell but those of one thread or one register; a replicated fragment's cell names every thread
 * that holds it. A shared layout also shows the bank conflicts of a warp reading row-wise or
 * column-wise at the element width. `grid(box, entry)` draws one buffer into any box (the
 * diff-runs page draws both sides of a changed layout with it, and `compare` the report's
 * "compare with…"). Threads are threadIdx.x, as the header's "threads 128–383" counts them. A
 * slice of more than X.MAX_VIEW cells, or a damaged entry, is a line saying so, not a grid.
 * @requires core.js layouts-expr.js
 */
(function (root) {
  "use strict";

  var C = root.TLCore, X = root.TLLayoutExpr, WIN = 16;

  function hue(v) { return (v * 137.508) % 360; }  // neighbours far apart on the wheel
  function colour(v, dim) { return "hsl(" + hue(v) + "," + (dim ? "12%" : "62%") + "," + (dim ? "88%" : "62%") + ")"; }
  // The same colour as [r, g, b] (the canvas is filled pixel by pixel), cached by value.
  var RGB = {};
  function rgb(v, dim) {
    var key = v + (dim ? "d" : ""), got = RGB[key];
    if (got) return got;
    var h = hue(v) / 360, s = dim ? 0.12 : 0.62, l = dim ? 0.88 : 0.62;
    var q = l < 0.5 ? l * (1 + s) : l + s - l * s, p = 2 * l - q;
    function ch(t) {
      t = t < 0 ? t + 1 : t > 1 ? t - 1 : t;
      var x = t < 1 / 6 ? p + (q - p) * 6 * t : t < 0.5 ? q : t < 2 / 3 ? p + (q - p) * (2 / 3 - t) * 6 : p;
      return Math.round(x * 255);
    }
    return (RGB[key] = [ch(h + 1 / 3), ch(h), ch(h - 1 / 3)]);
  }

  function shapeText(s) { return (s || []).join("\u00d7"); }

  // Every cell of the last two dims at `lead`: {rows, cols, key[] (colour value), cells[] (answers)}.
  function compute(c, lead) {
    var d = X.dims(c.entry), cells = new Array(d.rows * d.cols);
    for (var r = 0; r < d.rows; r++) {
      for (var k = 0; k < d.cols; k++) cells[r * d.cols + k] = X.at(c, X.cellIndex(c.entry, lead, r, k));
    }
    return { rows: d.rows, cols: d.cols, cells: cells };
  }

  function matches(c, cell, filter) {
    if (!filter || filter.value === null) return true;
    if (filter.what === "thread") return cell.thread.indexOf(filter.value) >= 0;
    if (filter.what === "register") return cell.register === filter.value;
    if (filter.what === "bank") return cell.bank === filter.value;
    return true;
  }
  function keyOf(c, cell) { return c.fragment ? cell.thread[0] : cell.bank; }
  function label(c, cell) {
    if (c.fragment) {
      return "T" + cell.thread[0] + (cell.thread.length > 1 ? "+" + (cell.thread.length - 1) : "") + " R" + cell.register;
    }
    return cell.offset + " b" + cell.bank;
  }
  function title(c, r, k, cell) {
    var at = "[" + r + "," + k + "] ";
    if (c.fragment) return at + "thread " + cell.thread.join(", ") + " register " + cell.register;
    return at + "offset " + cell.offset + " bank " + cell.bank;
  }

  // One buffer's grid: canvas of the whole, a labelled window, filters. Returns the view's state.
  // `span`: scale the canvas as for a buffer this many elements across (two grids drawn alike).
  function grid(box, entry, span) {
    var c;
    try { c = X.compile(entry); } catch (e) {
      box.appendChild(C.el("p", "tl-empty", "This layout's expressions cannot be evaluated here (" + e.message + "); tltrace show --layouts prints them."));
      return null;
    }
    var size = X.dims(entry);
    if (size.rows * size.cols > X.MAX_VIEW) {  // docs/layouts.md: refused, not drawn in pieces
      var p = C.el("p", "tl-empty tl-lay-too-big", entry.buffer + " is " + size.rows + "\u00d7" + size.cols +
        " per slice, more than the " + X.MAX_VIEW + " cells this view draws; ask for one element with " +
        "tltrace show --layouts --at " + entry.buffer + " I,J");
      box.appendChild(p);
      return null;
    }
    var st = { c: c, lead: [], r0: 0, c0: 0, filter: { what: "thread", value: null }, data: null };
    var wrap = C.el("div", "tl-lay-grid");
    var tools = C.el("div", "tl-lay-tools"), info = C.el("div", "tl-lay-info");
    var canvas = C.el("canvas", "tl-lay-canvas"), win = C.el("table", "tl-lay-win");
    wrap.appendChild(tools); wrap.appendChild(info);
    var panes = C.el("div", "tl-lay-panes");
    panes.appendChild(canvas); panes.appendChild(win);
    wrap.appendChild(panes);
    box.appendChild(wrap);

    var s = entry.input_shape;
    if (s.length > 2) {  // a leading index (a pipeline stage): one slice at a time
      for (var i = 0; i < s.length - 2; i++) {
        st.lead.push(0);
        tools.appendChild(numberField("dim " + i, 0, s[i] - 1, (function (j) {
          return function (v) { st.lead[j] = v === null ? 0 : v; refresh(); };
        })(i), "0"));
      }
    }
    var filterKind = c.fragment ? ["thread", "register"] : ["bank"];
    filterKind.forEach(function (w) {
      tools.appendChild(numberField("show " + w, 0, 1 << 30, function (v) {
        st.filter = { what: w, value: v };
        tools.querySelectorAll("input[data-filter]").forEach(function (n) { if (n.getAttribute("data-filter") !== w) n.value = ""; });
        draw();
      }, "", w));
    });
    var access = null;
    if (!c.fragment) {
      access = C.el("select", "tl-lay-access");
      [["row", "row-wise access"], ["col", "column-wise access"]].forEach(function (o) {
        var opt = C.el("option", null, o[1]); opt.value = o[0]; access.appendChild(opt);
      });
      access.title = "A warp's 32 lanes read 32 consecutive elements, one each, at the element width";
      access.addEventListener("change", function () { conflictLine(); });
      tools.appendChild(access);
    }
    ["\u2190", "\u2191", "\u2193", "\u2192"].forEach(function (a, i) {
      tools.appendChild(C.button(a, "Move the labelled window", function () {
        var dr = [0, -WIN, WIN, 0][i], dc = [-WIN, 0, 0, WIN][i];
        moveTo(st.r0 + dr, st.c0 + dc);
      }));
    });
    var conflict = C.el("div", "tl-lay-conflicts");
    wrap.insertBefore(conflict, panes);

    function numberField(text, min, max, onchange, initial, filter) {
      var l = C.el("label", null, text + " ");
      var n = C.el("input");
      n.type = "number"; n.min = String(min); n.max = String(max); n.value = initial;
      if (filter) n.setAttribute("data-filter", filter);
      n.addEventListener("input", function () {
        var v = n.value === "" ? null : parseInt(n.value, 10);
        onchange(isNaN(v) ? null : v);
      });
      l.appendChild(n);
      return l;
    }
    function moveTo(r, k) {
      var d = st.data;
      st.r0 = Math.max(0, Math.min(r, d.rows - Math.min(WIN, d.rows)));
      st.c0 = Math.max(0, Math.min(k, d.cols - Math.min(WIN, d.cols)));
      draw();
    }
    function conflictLine() {
      if (c.fragment) return;
      var res = X.conflicts(c, access.value, st.lead);
      C.setText(conflict, (res.access === "row" ? "row-wise" : "column-wise") + " at " + res.width +
        " bytes: " + res.warps + " warps, worst " + res.max_ways + "-way (" + (res.max_ways - 1) +
        " conflicts), mean " + res.mean_ways + "-way");
      conflict.setAttribute("data-max-ways", String(res.max_ways));
    }
    function refresh() {
      st.data = compute(c, st.lead);
      conflictLine();
      moveTo(st.r0, st.c0);
    }
    function draw() {
      var d = st.data, px = Math.max(1, Math.min(24, Math.floor(512 / Math.max(d.rows, d.cols, span || 0))));
      canvas.width = d.cols * px; canvas.height = d.rows * px;
      canvas.setAttribute("data-px", String(px));
      var g = canvas.getContext("2d"), img = g.createImageData(canvas.width, canvas.height), buf = img.data;
      for (var r = 0; r < d.rows; r++) {
        for (var k = 0; k < d.cols; k++) {
          var cell = d.cells[r * d.cols + k], col = rgb(keyOf(c, cell), !matches(c, cell, st.filter));
          for (var y = r * px; y < (r + 1) * px; y++) {
            for (var x = k * px, o = (y * canvas.width + x) * 4; x < (k + 1) * px; x++, o += 4) {
              buf[o] = col[0]; buf[o + 1] = col[1]; buf[o + 2] = col[2]; buf[o + 3] = 255;
            }
          }
        }
      }
      g.putImageData(img, 0, 0);
      g.strokeStyle = "#000"; g.lineWidth = 1;
      g.strokeRect(st.c0 * px + 0.5, st.r0 * px + 0.5, Math.min(WIN, d.cols) * px - 1, Math.min(WIN, d.rows) * px - 1);
      C.clear(win);
      var head = C.el("tr");
      head.appendChild(C.el("th"));
      for (var k2 = st.c0; k2 < Math.min(d.cols, st.c0 + WIN); k2++) head.appendChild(C.el("th", null, String(k2)));
      win.appendChild(head);
      for (var r2 = st.r0; r2 < Math.min(d.rows, st.r0 + WIN); r2++) {
        var tr = C.el("tr");
        tr.appendChild(C.el("th", null, String(r2)));
        for (var k3 = st.c0; k3 < Math.min(d.cols, st.c0 + WIN); k3++) {
          var cl = d.cells[r2 * d.cols + k3], td = C.el("td", null, label(c, cl));
          var on = matches(c, cl, st.filter);
          td.style.background = colour(keyOf(c, cl), !on);
          if (!on) td.className = "tl-lay-dim";
          td.title = title(c, r2, k3, cl);
          td.setAttribute("data-row", String(r2)); td.setAttribute("data-col", String(k3));
          if (c.fragment) {
            td.setAttribute("data-thread", cl.thread.join(","));
            td.setAttribute("data-register", String(cl.register));
          } else {
            td.setAttribute("data-offset", String(cl.offset));
            td.setAttribute("data-bank", String(cl.bank));
          }
          tr.appendChild(td);
        }
        win.appendChild(tr);
      }
      var shown = d.cells.filter(function (x) { return matches(c, x, st.filter); }).length;
      C.setText(info, describe(entry) + (st.filter.value !== null ? " \u2014 " + shown + " of " + d.cells.length + " cells shown" : ""));
    }
    canvas.addEventListener("click", function (ev) {
      var px = parseInt(canvas.getAttribute("data-px"), 10) || 1, b = canvas.getBoundingClientRect();
      var scale = canvas.width / (b.width || canvas.width);
      var k = Math.floor((ev.clientX - b.left) * scale / px), r = Math.floor((ev.clientY - b.top) * scale / px);
      moveTo(r - WIN / 2, k - WIN / 2);
    });
    refresh();
    st.moveTo = moveTo;
    return st;
  }

  function describe(e) {
    var s = e.buffer + ": " + (e.scope || "?") + " " + (e.dtype || "") + " " + shapeText(e.input_shape);
    if (e.kind === "fragment") {
      var rng = e.thread_range;
      s += ", threads " + (rng ? rng[0] + "\u2013" + (rng[0] + rng[1] - 1) : "?") + ", " + shapeText(e.output_shape) + " registers each";
      if (e.replicate > 1) s += ", replicated \u00d7" + e.replicate + " (a cell's T+n: n more threads hold it)";
    } else {
      s += " \u2192 " + shapeText(e.output_shape) + " (colour: 4-byte bank)";
    }
    if (e.pass) s += "; fixed by " + e.pass + (e.record !== null && e.record !== undefined ? " (#" + e.record + ")" : "");
    return s;
  }

  function panel(data) {
    var box = C.el("div", "tl-layouts");
    box.id = "tl-layouts";
    var head = C.el("div", "tl-lay-head");
    head.appendChild(C.el("b", null, "Layouts"));
    var pick = C.el("select", "tl-lay-pick");
    var finals = data.final || [];
    finals.forEach(function (e, i) {
      var o = C.el("option", null, e.buffer + " (" + (e.kind === "fragment" ? "fragment" : e.scope) + " " + shapeText(e.input_shape) + ")");
      o.value = String(i); pick.appendChild(o);
    });
    head.appendChild(pick);
    head.appendChild(C.button("\u00d7", "Close the layouts", function () { box.hidden = true; }));
    box.appendChild(head);
    if (data.failed) {
      var f = data.failed, p = C.el("div", "tl-lay-failed");
      p.appendChild(C.el("b", null, "Layout inference failed at " + f.pass + " (#" + f.record + ")"));
      (f.buffers || []).forEach(function (b) {
        var named = (f.named || []).indexOf(b.buffer) >= 0;
        var s = C.el("div", named ? "tl-lay-named" : null, b.buffer + " " + b.scope + " " + b.dtype + " " + shapeText(b.shape) + (named ? " \u2014 named in the error" : ""));
        s.setAttribute("data-buffer", b.buffer);
        p.appendChild(s);
      });
      if (finals.length) p.appendChild(C.el("div", null, "Below: the layouts fixed before the failure."));
      box.appendChild(p);
    }
    var body = C.el("div", "tl-lay-body");
    box.appendChild(body);
    function show() { C.clear(body); if (finals.length) box.state = grid(body, finals[parseInt(pick.value, 10) || 0]); }
    pick.addEventListener("change", show);
    show();
    return box;
  }

  // The report's comparison (report-compare.js): the buffers whose final layout differs between
  // this compile's (`mine`) and the other's (`theirs`, lists of meta.layouts.final; the rule is
  // model.changed's), and both grids of the one picked, drawn when first opened. Null when
  // neither has layouts. The comparison keeps this box while it follows the selected pass.
  function compare(mine, theirs, label) {
    if (!(mine || []).length && !(theirs || []).length) return null;
    var ch = X.changed(mine, theirs), box = C.el("details", "tl-compare-layouts");
    box.appendChild(C.el("summary", null, ch.length ? "layouts changed: " + ch.map(function (x) {
      return x.buffer + (x.change === "changed" ? "" : " (" + (x.change === "added" ? "only in " + label : "only here") + ")");
    }).join(", ") : "layouts: the same in both compiles"));
    if (!ch.length) return box;
    var pick = C.el("select", "tl-lay-pick"), row = C.el("div", "tl-lay-pair");
    ch.forEach(function (x, i) {
      var o = C.el("option", null, x.buffer + (x.func && x.func !== "main" ? " (" + x.func + ")" : ""));
      o.value = String(i); pick.appendChild(o);
    });
    box.appendChild(pick);
    box.appendChild(row);
    function show() {
      var x = ch[parseInt(pick.value, 10) || 0];
      var span = Math.max.apply(null, [x.a, x.b].map(function (e) {
        var d = e && e.input_shape ? X.dims(e) : { rows: 0, cols: 0 };
        return Math.max(d.rows, d.cols);
      }));  // one scale for both canvases: a bigger buffer looks bigger
      C.clear(row);
      row.setAttribute("data-buffer", x.buffer);
      [["this compile", x.a, "mine"], [label, x.b, "theirs"]].forEach(function (s) {
        var side = C.el("div", "tl-lay-side");
        side.setAttribute("data-side", s[2]);
        side.appendChild(C.el("b", null, s[0]));
        if (s[1]) grid(side, s[1], span); else side.appendChild(C.el("p", "tl-empty", "no layout for " + x.buffer));
        row.appendChild(side);
      });
    }
    pick.addEventListener("change", show);
    box.addEventListener("toggle", function () { if (box.open && !row.firstChild) show(); });
    return box;
  }

  // The button at the head of the Facts strip (rebuilt with it); the panel is built when first opened.
  function mount(meta) {
    var data = meta && meta.layouts, strip = root.document.getElementById("tl-facts");
    if (!data || !strip || (!(data.final || []).length && !data.failed)) return;
    if (root.document.getElementById("tl-layouts-btn")) return;
    strip.hidden = false;
    var b = C.button("Layouts", "Which thread and register hold each element; shared-memory swizzles and banks (docs/layouts.md)", function () {
      var p = root.document.getElementById("tl-layouts");
      if (p) { p.hidden = !p.hidden; return; }
      root.document.body.appendChild(panel(data));
    });
    b.id = "tl-layouts-btn";
    b.className = "tl-lay-btn";
    strip.insertBefore(b, strip.firstChild);  // first: the strip cuts what does not fit
  }

  root.TLLayouts = { mount: mount, grid: grid, panel: panel, describe: describe, compare: compare };
  // A report carries this script after its data (render/pages.py layouts_tag): the header may be
  // built already, so mount now from the last meta chunk, and again each time report-header.js
  // builds the header ("tl-header"; building it clears the Facts strip; mount adds the button once).
  root.document.addEventListener("tl-header", function (ev) { mount(ev.detail); });
  var chunks = root.document.querySelectorAll("script.tl-d"), meta = null;
  for (var i = chunks.length - 1; i >= 0 && !meta; i--) {
    var list = C.chunkValues(chunks[i]) || [];
    for (var j = list.length - 1; j >= 0 && !meta; j--) if (list[j].t === "meta") meta = list[j];
  }
  if (meta) mount(meta);
})(window);
