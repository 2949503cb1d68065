/* tltrace report: the PTX and SASS stages (tltrace run --ptx, --sass), linked to the CUDA source.
 *
 * A stage record (role "ptx" or "sass", stages/recorder.py) shows its input and its text side by
 * side (report-pass.js); the Source pane links its lines to Python lines (sourcemap.js). This file
 * links the generated CUDA source, the PTX and the SASS by kernel.cu line: clicking a line of any of
 * the three shows a strip with its kernel.cu line, marks the lines of the view that come from it,
 * and opens the others there. The SASS view marks spill loads and stores (LDL, STL) and starts with
 * the instruction mix of each Python line (LDG, STG, LDS, STS, MMA, BAR, LDL, STL), each row
 * picking its line in the Source pane.
 *
 * Not in the report's head: render/pages.py appends this script (and report-machine.css) once to a
 * report, before its first stage record, and the head's CSP names both by hash. It starts itself
 * once the page has (DOMContentLoaded: report.js's start ran first, it registered first).
 * The pure parts (no DOM) run under node too (module.exports, tests/test_stages.py, against
 * stages/ptx.py and stages/sass.py): ptxCuLines, sassCuLines, opClass and mix.
 * @requires core.js report-state.js report-nav.js sourcemap.js
 */
(function (root) {
  "use strict";

  var C = root.TLCore || {}, el = C.el;
  var MIX = ["LDG", "STG", "LDS", "STS", "MMA", "BAR", "LDL", "STL"];
  var CLASS = {
    LDG: "LDG", STG: "STG", LDS: "LDS", LDSM: "LDS", STS: "STS", HMMA: "MMA", HGMMA: "MMA", IMMA: "MMA",
    DMMA: "MMA", QGMMA: "MMA", IGMMA: "MMA", BGMMA: "MMA", UTCHMMA: "MMA", BAR: "BAR", LDL: "LDL", STL: "STL"
  };
  var INSN = /^\s*\/\*[0-9a-f]{4,}\*\/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)/;
  var MARK = /^\s*\/\/## kernel\.cu:(\d+)\s*$/;
  var FILE = /^\s*\.file\s+(\d+)\s+"([^"]*)"/;
  var LOC = /^\s*\.loc\s+(\d+)\s+(\d+)\s+(\d+)(?:.*?\binlined_at\s+(\d+)\s+(\d+)\s+(\d+))?/;
  var FUNC = /^\s*(?:\.visible\s+|\.weak\s+)?\.(?:entry|func)\b/;

  // ---- pure ------------------------------------------------------------------------------------
  function isInstruction(line) {
    var s = line.trim();
    return s !== "" && ".{}/$".indexOf(s[0]) < 0 && s[s.length - 1] !== ":";
  }
  // The kernel.cu line behind each line of a PTX text, or null (stages/ptx.py loc_lines).
  function ptxCuLines(text) {
    var lines = String(text).split("\n"), out = [], cu = null, cur = null, sites = new Map(), i, m;
    for (i = 0; i < lines.length; i++) {
      m = lines[i].indexOf(".file") >= 0 ? FILE.exec(lines[i]) : null;
      if (m && (m[2] === "kernel.cu" || /\/kernel\.cu$/.test(m[2]))) { cu = parseInt(m[1], 10); break; }
    }
    for (i = 0; i < lines.length; i++) {
      var line = lines[i];
      m = line.indexOf(".loc") >= 0 ? LOC.exec(line) : null;
      if (m) {
        var f = parseInt(m[1], 10), ln = parseInt(m[2], 10);
        if (m[4] === undefined) cur = f === cu ? ln : null;
        else {
          var sf = parseInt(m[4], 10), sl = parseInt(m[5], 10), key = m[4] + ":" + m[5] + ":" + m[6];
          cur = sf === cu ? sl : (sites.has(key) ? sites.get(key) : null);
          sites.set(m[1] + ":" + m[2] + ":" + m[3], cur);
        }
        out.push(cur);
        continue;
      }
      if (FUNC.test(line) || line[0] === "}") { cur = null; out.push(null); continue; }
      out.push(cur !== null && isInstruction(line) ? cur : null);
    }
    return out;
  }
  // The kernel.cu line of each line of a stored SASS text (stages/sass.py cu_lines).
  function sassCuLines(text) {
    var out = [], cur = null;
    String(text).split("\n").forEach(function (line) {
      if (line.indexOf("//##") >= 0) { var m = MARK.exec(line); cur = m ? parseInt(m[1], 10) : null; out.push(cur); }
      else if (line.lastIndexOf(".text.", 0) === 0 || line.lastIndexOf("//---", 0) === 0) { cur = null; out.push(null); }
      else out.push(INSN.test(line) ? cur : null);
    });
    return out;
  }
  // The mix class of a SASS line's instruction (stages/sass.py opcode_class), else null.
  function opClass(line) {
    var m = INSN.exec(line);
    return m && Object.prototype.hasOwnProperty.call(CLASS, m[1]) ? CLASS[m[1]] : null;
  }
  // Per Python line of a SASS text's map ({files, lines}): [{file, line, insns, LDG, ..., STL}], by file and line.
  function mix(text, map) {
    var rows = new Map();
    String(text).split("\n").forEach(function (line, i) {
      if (!INSN.test(line)) return;
      var v = map && i < map.lines.length ? map.lines[i] : null;
      if (!Array.isArray(v)) return;
      var key = map.files[v[0]] + "\u0000" + v[1], r = rows.get(key);
      if (!r) {
        r = { file: map.files[v[0]], line: v[1], insns: 0 };
        MIX.forEach(function (k) { r[k] = 0; });
        rows.set(key, r);
      }
      r.insns++;
      var c = opClass(line);
      if (c) r[c]++;
    });
    return Array.from(rows.values()).sort(function (a, b) {
      return a.file < b.file ? -1 : a.file > b.file ? 1 : a.line - b.line;
    });
  }

  // ---- the page ----------------------------------------------------------------------------------
  var M = { recs: [], texts: null, select: null, cu: new Map(), maps: null, pending: false, at: null };

  function byRole(role) {
    var found = null;
    M.recs.forEach(function (r) {
      if (r.status !== "codegen" || !r.after_hash) return;
      if (role === "device" ? (r.role === "device" || !r.role) : r.role === role) found = r;
    });
    return found;
  }
  function currentRec() {
    var li = root.document.querySelector("li.tl-pass.selected");
    if (!li) return null;
    var ix = parseInt(li.getAttribute("data-index"), 10);
    for (var i = 0; i < M.recs.length; i++) if (M.recs[i].index === ix) return M.recs[i];
    return null;
  }
  // The kernel.cu line of each line of a record's after text (cached by its hash); the CUDA source's own lines.
  function cuOf(rec) {
    if (!rec || !rec.after_hash || !M.texts) return null;
    if (!M.cu.has(rec.after_hash)) {
      var text = M.texts.get(rec.after_hash);
      if (text === undefined) return null;
      var cu = rec.role === "ptx" ? ptxCuLines(text) : rec.role === "sass" ? sassCuLines(text)
        : text.split("\n").map(function (_, i) { return i + 1; });
      M.cu.set(rec.after_hash, cu);
    }
    return M.cu.get(rec.after_hash);
  }
  // The records whose lines are linked: [CUDA, PTX, SASS] (a missing one is null).
  function chain() { return [byRole("device"), byRole("ptx"), byRole("sass")]; }
  function isStage(r) { return r && (r.role === "ptx" || r.role === "sass"); }
  function panesOf() { return root.document.querySelectorAll("#tl-view .tl-panes > .tl-pane"); }
  // The rec whose text a pane of the current view shows: its input (0) or its output (1).
  function paneRec(r, n) {
    if (n === 1) return r;
    var ch = chain();
    return r.role === "ptx" ? ch[0] : r.role === "sass" ? ch[1] : null;
  }

  function onClick(ev) {
    var r = currentRec();
    if (!r || r.status !== "codegen") return;
    var ch = chain();
    if (!isStage(r) && r !== ch[0]) return;
    if (!ch[1] && !ch[2]) return;  // no stage in this report: nothing to link
    var tr = ev.target.closest(".tl-pane tbody tr");
    if (!tr || ev.target.closest("button")) return;
    var pane = tr.closest(".tl-pane"), panes = Array.prototype.slice.call(panesOf()), n = panes.indexOf(pane);
    var rec = paneRec(r, n), cu = cuOf(rec);
    if (!cu) return;
    var i = Array.prototype.indexOf.call(tr.parentNode.children, tr);
    show(cu[i] === undefined ? null : cu[i]);
  }
  function show(line) {
    M.at = line;
    mark();
    strip();
  }
  // Marks the lines of the view that come from kernel.cu line M.at.
  function mark() {
    var view = root.document.getElementById("tl-view");
    view.querySelectorAll(".tl-mc-hit").forEach(function (x) { x.classList.remove("tl-mc-hit"); });
    var r = currentRec();
    if (M.at === null || !r) return null;
    var first = null;
    Array.prototype.forEach.call(panesOf(), function (p, n) {
      var cu = cuOf(paneRec(r, n));
      if (!cu) return;
      p.querySelectorAll("tbody tr").forEach(function (tr, i) {
        if (cu[i] === M.at) { tr.classList.add("tl-mc-hit"); if (n === 1 && !first) first = tr; }
      });
    });
    return first;
  }
  function strip() {
    var view = root.document.getElementById("tl-view"), old = view.querySelector(".tl-mc-strip");
    if (old) old.parentNode.removeChild(old);
    if (M.at === null) {
      var none = el("div", "tl-mc-strip", "this line has no kernel.cu line");
      view.insertBefore(none, view.firstChild);
      return;
    }
    var box = el("div", "tl-mc-strip");
    box.appendChild(el("b", null, "kernel.cu:" + M.at));
    var names = ["CUDA", "PTX", "SASS"];
    chain().forEach(function (rec, k) {
      if (!rec) return;
      var cu = cuOf(rec), hits = [];
      if (cu) cu.forEach(function (v, i) { if (v === M.at) hits.push(i); });
      var b = el("button", "tl-mc-open", names[k] + " \u00D7" + hits.length);
      b.type = "button";
      b.disabled = !hits.length;
      b.title = hits.length ? "Open " + rec.name + " at line " + (hits[0] + 1) : "no " + names[k] + " line comes from kernel.cu:" + M.at;
      b.addEventListener("click", function () { open(rec, hits[0]); });
      box.appendChild(b);
    });
    view.insertBefore(box, view.firstChild);
  }
  function open(rec, line) {
    var at = M.at;
    for (var pos = 0; pos < M.recs.length; pos++) if (M.recs[pos] === rec) { M.select(pos); break; }
    M.at = at;
    refresh();
    var panes = panesOf(), pane = panes[panes.length - 1];
    var tr = pane ? pane.querySelectorAll("tbody tr")[line] : null;
    if (tr) tr.scrollIntoView({ block: "center" });
  }

  // ---- the SASS view: spills and the instruction mix ---------------------------------------------
  // The map of a record's after text, read from the page's source-map chunks when first needed.
  function mapOf(rec) {
    if (!M.maps) {
      M.maps = { srec: new Map(), smap: new Map() };
      var nodes = root.document.querySelectorAll("script.tl-d");
      for (var i = 0; i < nodes.length; i++) {
        (C.chunkValues(nodes[i]) || []).forEach(function (d) {
          if (d.t === "srec") M.maps.srec.set(d.i, d.a);
          else if (d.t === "smap" && typeof d.h === "string") M.maps.smap.set(d.h, d);
        });
      }
    }
    var h = M.maps.srec.get(rec.index);
    return h ? M.maps.smap.get(h) || null : null;
  }
  function base(path) { var s = String(path); return s.slice(Math.max(s.lastIndexOf("/"), s.lastIndexOf("\\")) + 1); }
  function sassView(r) {
    var view = root.document.getElementById("tl-view");
    if (view.querySelector(".tl-mc-mix")) return;
    var text = M.texts ? M.texts.get(r.after_hash) : undefined;
    if (text === undefined) return;
    var panes = panesOf(), pane = panes[panes.length - 1];
    var spills = { LDL: 0, STL: 0 };
    if (pane) {
      var lines = text.split("\n");
      pane.querySelectorAll("tbody tr").forEach(function (tr, i) {
        var c = i < lines.length ? opClass(lines[i]) : null;
        if (c === "LDL" || c === "STL") { tr.classList.add("tl-mc-spill"); spills[c]++; }
      });
    }
    var rows = mix(text, mapOf(r));
    var box = el("details", "tl-mc-mix");
    box.open = true;
    box.appendChild(el("summary", null, "Instruction mix per Python line (" + rows.length + " lines; spills: " +
      spills.LDL + " LDL, " + spills.STL + " STL)"));
    var table = el("table", "tl-mc-table"), thead = el("thead"), hr = el("tr");
    ["Python line", "insns"].concat(MIX).forEach(function (h) { hr.appendChild(el("th", null, h)); });
    thead.appendChild(hr);
    table.appendChild(thead);
    var tbody = el("tbody");
    rows.forEach(function (x) {
      var tr = el("tr", x.LDL || x.STL ? "spill" : null);
      tr.setAttribute("data-src", x.file + ":" + x.line);
      var first = el("td", "src", base(x.file) + ":" + x.line);
      first.title = x.file + ":" + x.line + " (click to show it)";
      tr.appendChild(first);
      tr.appendChild(el("td", null, x.insns));
      MIX.forEach(function (k) { tr.appendChild(el("td", x[k] ? null : "zero", x[k])); });
      tr.addEventListener("click", function () { if (root.tltraceSourceMap) root.tltraceSourceMap.pick(x.file, x.line); });
      tbody.appendChild(tr);
    });
    table.appendChild(tbody);
    box.appendChild(table);
    var at = view.querySelector(".tl-panes");  // inside the codegen view's wrapper (report-edit.js)
    if (at && at.parentNode) at.parentNode.insertBefore(box, at);
    else view.appendChild(box);
  }

  function refresh() {
    M.pending = false;
    var r = currentRec();
    if (!r) return;
    if (r.role === "sass") sassView(r);
    var view = root.document.getElementById("tl-view");
    if (M.at !== undefined && M.at !== null && (isStage(r) || r === chain()[0]) && !view.querySelector(".tl-mc-strip")) {
      mark();
      strip();
    }
  }
  function later() {
    if (M.pending) return;
    M.pending = true;
    (root.requestAnimationFrame || setTimeout)(refresh);
  }
  function attach(ctx) {
    M.recs = ctx.recs || []; M.texts = ctx.texts || null; M.select = ctx.select;
    if (!M.recs.some(isStage)) return;  // no --ptx, --sass: nothing to do
    var view = root.document.getElementById("tl-view");
    view.addEventListener("click", onClick);
    if (root.MutationObserver) new MutationObserver(later).observe(view, { childList: true });
    refresh();
  }

  if (root.document && root.TLReport) {
    var start = function () {
      var R = root.TLReport;
      attach({ recs: R.S.recs, texts: R.S.texts, select: R.select });
    };
    if (root.document.readyState === "loading") root.document.addEventListener("DOMContentLoaded", start);
    else start();
  }

  var api = { attach: attach, ptxCuLines: ptxCuLines, sassCuLines: sassCuLines, opClass: opClass, mix: mix, MIX: MIX };
  if (typeof module === "object" && module.exports) module.exports = api;
  else root.tltraceMachine = api;
})(typeof window !== "undefined" ? window : this);
