/* tltrace compile report: the header: kernel, run status and metadata, the way back to the index, the sibling switcher, the run's error.
 * One part of the report's script (report-state.js has the shared state, report.js starts the page);
 * the parts share window.TLReport, where each puts its functions.
 * @requires report-state.js core.js report-logic.js sourcemap.js
 */
(function () {
  "use strict";

  var R = window.TLReport, S = R.S, C = window.TLCore;

  // A run whose process died says where and of what (history/loading.py reads them through format/notes.py).
  function diedNote(m) {
    var e = String(m.error || "");
    return e && !/^KeyboardInterrupt/.test(e) ? ": " + e.split("\n")[0] : "";
  }
  function buildHeader() {
    var m = S.meta;
    C.setText(R.$("tl-kernel"), m.kernel || m.script || "");
    document.title = "tltrace: " + (m.kernel || m.script || "report");
    var rs = R.$("tl-runstatus");
    var status = R.runState();
    var n = S.recs.length;
    rs.className = "tl-runstatus " + status;
    rs.textContent = status === "complete" ? "complete" : status === "error" ? "compile failed" :
      status === "interrupted" ? "interrupted (" + n + " pass" + (n === 1 ? "" : "es") + " recorded)" + diedNote(m) :
      status === "exited" ? "the compile ended, but its process exited before its records were written (" + n +
        " pass" + (n === 1 ? "" : "es") + " recorded)" :
      status === "running" ? "running \u2014 " + n + " pass" + (n === 1 ? "" : "es") + " so far" :
      "incomplete: the run did not finish (" + n + " passes recorded; no change to this file for " +
        Math.round(R.fileAge() / 60000) + " min)";
    var meta = R.$("tl-meta");
    C.clear(meta);
    function item(label, value, code) {
      if (value === undefined || value === null || value === "") return;
      var s = C.el("span");
      s.title = label + " " + value;  // the whole value, when the header cuts it off
      s.appendChild(document.createTextNode(label + " "));
      s.appendChild(C.el(code ? "code" : "b", null, value));
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
    buildFacts();
    // The header is built: views that add to it (layouts.js, when the report carries it) hear so.
    document.dispatchEvent(new window.CustomEvent("tl-header", { detail: S.meta }));
  }
  // ---- the Facts strip: what the compiler made of the kernel (docs/facts.md; meta.facts) ----------
  var FACTS = [
    ["arch", "arch"], ["tma_load", "TMA loads"], ["tma_store", "TMA stores"], ["wgmma", "WGMMA"],
    ["mma", "mma"], ["cp_async", "cp.async"], ["ldmatrix", "ldmatrix"], ["mbarrier", "mbarrier"],
    ["syncthreads", "__syncthreads"], ["fences", "fences"], ["launch_bounds", "launch bounds"],
    ["grid", "grid"], ["threads", "threads"], ["smem_dynamic", "smem dyn"], ["smem_static", "smem static"],
    ["num_stages", "stages"], ["warp_specialized", "warp-specialized"], ["max_nreg", "max nreg"],
    ["vector_load_bits", "widest load"], ["vector_store_bits", "widest store"],
    ["registers", "registers"], ["spill_bytes", "spill bytes"], ["stack_frame", "stack frame"]
  ];
  function buildFacts() {
    var box = R.$("tl-facts"), f = S.meta.facts;
    if (!box) return;
    C.clear(box);
    if (!f || typeof f !== "object") { box.hidden = true; return; }
    box.hidden = false;
    var head = C.el("b", null, "Facts");
    head.title = "What the compiler made of this kernel, read off the recorded texts (docs/facts.md; tltrace show --facts)";
    box.appendChild(head);
    var all = [];
    FACTS.forEach(function (x) {
      var v = f[x[0]];
      if (v === undefined || v === null) return;
      var s = C.el("span");
      s.setAttribute("data-fact", x[0]);
      s.appendChild(document.createTextNode(x[1] + " "));
      s.appendChild(C.el("code", null, v === true ? "yes" : v === false ? "no" : String(v)));
      box.appendChild(s);
      all.push(x[0] + " " + String(v));
    });
    box.title = all.join(", ");
  }
  // ---- the compile's launches (run --launches; {"t":"launches"}: history/report_reads.launch_rows) --
  function argText(a) {
    if (!a || typeof a !== "object") return "?";
    var name = a.param ? String(a.param) + " " : "";
    if (Array.isArray(a.shape)) return name + String(a.dtype) + "[" + a.shape.join(", ") + "]";
    if (a.value !== undefined) return name + String(a.value) + " (" + String(a.type) + ")";
    return name + String(a.type || "?");
  }
  function launchCell(tr, cls, text, title) {
    var td = C.el("td", cls, text);
    if (title) td.title = title;
    tr.appendChild(td);
    return td;
  }
  function buildLaunches() {
    var box = R.$("tl-launches"), L = S.launches;
    if (!box) return;
    C.clear(box);
    if (!L || !Array.isArray(L.rows) || !L.rows.length) { box.hidden = true; return; }
    box.hidden = false;
    var more = typeof L.more === "number" && L.more > 0 ? L.more : 0;
    var det = C.el("details");
    det.appendChild(C.el("summary", null, "Launches (" + (L.rows.length + more) + ")"));
    var table = C.el("table", "tl-launches-table");
    var head = C.el("tr");
    ["#", "called at", "grid", "block", "arguments"].forEach(function (h) { head.appendChild(C.el("th", null, h)); });
    table.appendChild(head);
    var sm = window.tltraceSourceMap;
    L.rows.forEach(function (r) {
      var tr = C.el("tr", "tl-launch");
      tr.setAttribute("data-launch", String(r.n));
      launchCell(tr, "n", String(r.n));
      var site = Array.isArray(r.site) ? r.site : null;
      var at = launchCell(tr, "site", site ? String(site[0]).split("/").pop() + ":" + site[1] : "?", site ? site[0] + ":" + site[1] : null);
      if (site && sm && sm.hasSource(String(site[0]))) {
        at.classList.add("go");
        at.addEventListener("click", function () { sm.pick(String(site[0]), site[1]); });
      }
      launchCell(tr, "grid", Array.isArray(r.grid) ? r.grid.join(" \u00d7 ") : "?");
      launchCell(tr, "block", Array.isArray(r.block) ? r.block.join(" \u00d7 ") : "?");
      launchCell(tr, "args", (Array.isArray(r.args) ? r.args : []).map(argText).join(", "));
      table.appendChild(tr);
    });
    det.appendChild(table);
    if (more) det.appendChild(C.el("div", "tl-launches-more", "and " + more + " more (tltrace show --launches lists them all)"));
    box.appendChild(det);
  }
  // ---- invocation: back to the index, switch to a sibling compile (data from {"t":"sibs"}) -------
  function buildNav() {
    var m = S.meta, runId = String(m.run_id || "");
    if (typeof m.index !== "string" || !/^(\.\.\/)+report\.html$/.test(m.index)) return;
    if (location.protocol === "about:") return;  // inline in a notebook (srcdoc): no files beside it
    var nav = C.el("span", "tl-nav");
    var back = C.el("a", null, "\u2191 all compiles");
    back.href = m.index + (C.safeId(runId) ? "#run=" + runId : "");
    back.title = "The invocation's index: every compile, failed first";
    nav.appendChild(back);
    var sibs = (S.sibs || []).filter(function (x) { return Array.isArray(x) && C.safeId(String(x[0])); });
    if (sibs.length > 1) {
      var sel = C.el("select", "tl-switch");
      sel.title = "Switch to another compile of this invocation";
      sibs.forEach(function (x) {
        var o = C.el("option", null, String(x[1]) + (x[2] && x[2] !== "complete" ? " (" + x[2] + ")" : ""));
        o.value = String(x[0]);
        if (o.value === runId) o.selected = true;
        sel.appendChild(o);
      });
      // The same pass (by name and occurrence) in the sibling, when one is selected.
      sel.addEventListener("change", function () {
        location.href = "../" + sel.value + "/report.html" + (S.sel >= 0 ? "#" + encodeURIComponent(R.fragmentOf(S.sel)) : "");
      });
      nav.appendChild(sel);
    }
    // Compare: the same pass of a sibling compile, or of an earlier invocation of the script
    // (report-compare.js: the choice stays in the select until "Stop comparing").
    var pick = R.cmp.picker(sibs, runId);
    if (pick) nav.appendChild(pick);
    document.querySelector(".tl-title").appendChild(nav);
  }
  function firstFailed() { return window.TLReportLogic.firstFailed(S.recs); }
  // A failed run names its error under the header: the failed pass (with a link to it), or, when
  // the compile failed after the last recorded pass (an edited source that does not compile), the
  // error itself, which no pass view shows.
  function buildRunError() {
    var box = R.$("tl-runerror");
    C.clear(box);
    var m = S.meta;
    if (m.status !== "error" || !m.error) { box.hidden = true; return; }
    box.hidden = false;
    var text = String(m.error);
    var fpos = firstFailed();
    var bf = fpos < 0 && m.build_error;  // the backend build failed: its errors first (render/pages.py)
    if (bf) text = bf.text;
    var head = C.el("div", "tl-runerror-head");
    head.appendChild(C.el("span", "tl-dot failed", R.DOTS.failed));
    head.appendChild(C.el("b", null, fpos >= 0 ? "Failed in " + S.recs[fpos].name + ":" :
      bf ? bf.head : "Compile failed after the last recorded pass:"));
    var firstLine = bf ? bf.first : text.split("\n")[0];
    head.appendChild(C.el("span", "msg", firstLine));
    var full = C.el("pre", "tl-runerror-full", text);
    full.hidden = true;
    if (fpos >= 0) {
      var go = C.button("Show pass", "Open the pass that failed", function () { R.select(fpos); });
      go.className = "tl-runerror-go";
      head.appendChild(go);
    } else if (text !== firstLine) {
      var more = C.button("Full error", "Show the whole error message", function () {
        full.hidden = !full.hidden;
        more.textContent = full.hidden ? "Full error" : "Hide error";
      });
      more.className = "tl-runerror-more";
      head.appendChild(more);
    }
    box.appendChild(head);
    if (Array.isArray(m.layout_why) && m.layout_why.length) {  // why layout inference failed (docs/layouts.md)
      var why = C.el("div", "tl-runerror-why");
      m.layout_why.forEach(function (line, k) { why.appendChild(C.el("div", null, (k ? "" : "Why: ") + String(line))); });
      box.appendChild(why);
    }
    box.appendChild(full);
  }

  R.buildHeader = buildHeader;
  R.buildNav = buildNav;
  R.firstFailed = firstFailed;
  R.buildRunError = buildRunError;
  R.buildLaunches = buildLaunches;
})();
