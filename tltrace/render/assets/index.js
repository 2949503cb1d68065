/* tltrace invocation index.
 *
 * Data, not markup: <script type="application/json" class="tl-d"> chunks appended as the
 * compiles of one invocation start and finish ({"t":"imeta"} once, then {"t":"c"} per compile
 * event; a later chunk of the same run_id replaces the earlier). A chunk cut short by a kill
 * does not parse and is skipped. Everything is built with textContent, never innerHTML.
 *
 * The pure parts (no DOM) run under node too (module.exports, tests/test_index_js.py):
 * addRow (a compile chunk into the rows), normalizeRows (what the table shows of a row),
 * comparator (the default order, or by a column), filterRows (the text and status filters) and
 * distinctLabels (signatures without the words every compile shares: what a narrow window shows).
 *
 * A compile row may carry `facts` (docs/facts.md; render/index.py INDEX_FACTS): each becomes a
 * sortable column `f_<name>` of the "facts" group, shown when some row knows it.
 * @requires core.js profile.js callsites.js
 */
(function (root) {
  "use strict";

  var COLS = [
    { key: "label", title: "signature", cls: "sig" },
    { key: "status", title: "status" },
    { key: "failed_at", title: "failed at" },
    { key: "passes", title: "passes", num: true },
    { key: "changed", title: "changed", num: true },
    { key: "failed", title: "failed", num: true },
    { key: "seconds", title: "compile s", num: true },
    { key: "order", title: "#", num: true },
    { key: "run_id", title: "run" }
  ];
  // The facts column group: render/index.py INDEX_FACTS, in its order.
  var FACT_COLS = [
    { key: "tma_load", title: "tma" },
    { key: "wgmma", title: "wgmma" },
    { key: "mma", title: "mma" },
    { key: "cp_async", title: "cp.async" },
    { key: "syncthreads", title: "syncs" },
    { key: "threads", title: "threads" },
    { key: "smem_dynamic", title: "smem dyn" },
    { key: "num_stages", title: "stages" },
    { key: "warp_specialized", title: "ws" },
    { key: "registers", title: "regs" },
    { key: "spill_bytes", title: "spills" }
  ];
  var BAD = { failed: 1, error: 1, damaged: 1, interrupted: 1, exited: 1, incomplete: 1 };
  var STALE_MS = 120000;  // an index untouched this long while compiles say "running": their process was killed
  var C = root.TLCore || (typeof module === "object" && module.exports ? require("./core.js") : null);
  var str = C.str;

  // ---- the pure parts ---------------------------------------------------------------------------
  // A compile chunk d (its run_id already checked) into rows/byId: a later chunk of a run replaces
  // the earlier in its place; `order` is the order the compiles started in.
  function addRow(rows, byId, d) {
    if (byId.has(d.run_id)) {
      d.order = rows[byId.get(d.run_id)].order;
      rows[byId.get(d.run_id)] = d;
    } else {
      d.order = rows.length + 1;
      byId.set(d.run_id, rows.length);
      rows.push(d);
    }
  }

  // The fields the table shows, from the stored row; `stale`: the page was last written long ago,
  // so a compile still "running" was killed. Returns the number of processes the rows come from.
  function normalizeRows(rows, stale) {
    var procs = new Map();  // process label -> first appearance (the index groups by process)
    rows.forEach(function (r) {
      r.process = typeof r.rank === "number" ? "rank " + r.rank : typeof r.pid === "number" ? "pid " + r.pid : "";
      if (!procs.has(r.process)) procs.set(r.process, procs.size);
      r.procOrder = procs.get(r.process);
      r.status = str(r.status || "running");
      if (r.status === "error") r.status = "failed";
      if (r.status === "running" && stale) r.status = "incomplete";  // as the compile's own report says
      r.label = str(r.signature || r.kernel || r.run_id);
      // A compile that has not ended: its row is the one written when it started, whose counts are
      // not known yet (not 0 passes).
      r.unfinished = (r.status === "running" || r.status === "incomplete") && !(r.passes > 0);
      if (r.unfinished) { r.passes = null; r.changed = null; r.failed = null; }
      r.failed_at = str(r.failed_at);
      r.seconds = typeof r.seconds === "number" && isFinite(r.seconds) ? Math.round(r.seconds * 1000) / 1000 : null;
      var facts = r.facts && typeof r.facts === "object" ? r.facts : {};
      FACT_COLS.forEach(function (f) {
        var v = facts[f.key];
        r["f_" + f.key] = typeof v === "number" && isFinite(v) ? v : v === true ? 1 : v === false ? 0 : null;
      });
      r.search = (r.label + " " + r.status + " " + r.failed_at + " " + str(r.kernel) + " " + r.run_id + " " + r.process).toLowerCase();
    });
    return procs.size;
  }

  // The facts columns some row has a value of (the index shows only those), as table columns.
  function factColumns(rows) {
    return FACT_COLS.filter(function (f) {
      return rows.some(function (r) { return r["f_" + f.key] !== null && r["f_" + f.key] !== undefined; });
    }).map(function (f) {
      return { key: "f_" + f.key, title: f.title, num: true, fact: f.key };
    });
  }

  // The rows' order: by column `sort` (dir 1 or -1; empty values last, then start order), or
  // without one, failed compiles first, then unfinished, then by process, each in start order.
  function comparator(sort, dir) {
    return function (a, b) {
      if (sort) {
        var x = a[sort], y = b[sort];
        var nx = x === null || x === undefined || x === "", ny = y === null || y === undefined || y === "";
        if (nx !== ny) return nx ? 1 : -1;
        if (!nx && x !== y) return (typeof x === "number" && typeof y === "number" ? x - y : (String(x) < String(y) ? -1 : 1)) * dir;
        return a.order - b.order;
      }
      var ra = BAD[a.status] ? 0 : a.status === "complete" ? 2 : 1;
      var rb = BAD[b.status] ? 0 : b.status === "complete" ? 2 : 1;
      if (ra !== rb) return ra - rb;
      return a.procOrder !== b.procOrder ? a.procOrder - b.procOrder : a.order - b.order;
    };
  }

  // The rows the filters keep: `text` anywhere in a row's searchable fields (any case), and the
  // status menu's choice ("" all, "failed", "complete", "running": unfinished and not failed).
  function filterRows(rows, text, status) {
    var f = text.toLowerCase();
    return rows.filter(function (r) {
      if (f && r.search.indexOf(f) < 0) return false;
      if (status === "failed") return !!BAD[r.status];
      if (status === "complete") return r.status === "complete";
      if (status === "running") return r.status !== "complete" && !BAD[r.status];
      return true;
    });
  }

  // Signatures without the words every one of them shares (the kernel, the first word, stays; a
  // field name goes with its shared value): {shared: the words left out, short: label -> what is
  // left}. render/table.py distinct_cut cuts the terminal's signature column the same way, so a
  // row is never cut where it differs from the others.
  var KEYED = { grid: 1, thr: 1, smem: 1 };
  function distinctLabels(labels) {
    var split = labels.filter(function (v) { return v; }).map(function (v) { return String(v).split(" "); });
    var common = new Set(), shared = [], short = new Map();
    if (split.length > 1) {
      var n = Math.min.apply(null, split.map(function (w) { return w.length; }));
      for (var i = 1; i < n; i++) {
        if (split.every(function (w) { return w[i] === split[0][i]; })) common.add(i);
      }
    }
    labels.forEach(function (v) {
      var words = String(v).split(" "), keep = words.map(function (w, i) { return !common.has(i); });
      words.forEach(function (w, i) {  // a field name goes and stays with its value
        if (i > 0 && KEYED[w]) keep[i] = i + 1 < words.length && !common.has(i + 1);
      });
      short.set(v, words.filter(function (w, i) { return keep[i]; }).join(" ") || String(v));
    });
    if (split.length > 1) {
      split[0].forEach(function (w, i) {
        if (common.has(i) && !KEYED[w]) shared.push(i > 1 && KEYED[split[0][i - 1]] ? split[0][i - 1] + " " + w : w);
      });
    }
    return { shared: shared, short: short };
  }

  if (typeof module === "object" && module.exports) {
    module.exports = { addRow: addRow, normalizeRows: normalizeRows, comparator: comparator, filterRows: filterRows, factColumns: factColumns, distinctLabels: distinctLabels, BAD: BAD };
    return;
  }

  // ---- the page ---------------------------------------------------------------------------------
  // fit: 0 the whole table; 1 without the # and run columns; 2 also signatures without their shared words.
  var S = { meta: {}, rows: [], byId: new Map(), sort: null, dir: 1, filter: "", status: "", bad: 0, fit: 0, labels: null };
  var el = C.el, safeId = C.safeId;
  C.initTheme();
  function $(id) { return document.getElementById(id); }

  function load() {
    S.bad = C.readChunks(function (d) {
      if (d.t === "imeta") {
        for (var k in d) if (Object.prototype.hasOwnProperty.call(d, k) && k !== "t") S.meta[k] = d[k];
      } else if (d.t === "iend") {
        S.ended = true;  // the invocation finished: no further compile will be listed
      } else if (d.t === "c" && typeof d.run_id === "string" && safeId(d.run_id)) {
        addRow(S.rows, S.byId, d);
      }
    });
    var t = Date.parse(document.lastModified);
    S.processes = normalizeRows(S.rows, !isNaN(t) && Date.now() - t >= STALE_MS);
    if (S.processes > 1) COLS.splice(1, 0, { key: "process", title: "process" });
    var facts = factColumns(S.rows);
    COLS.splice.apply(COLS, [COLS.length - 2, 0].concat(facts));  // before "#" and "run"
  }

  function hrefOf(r) { return str(S.meta.base || ".run_records/") + r.run_id + "/report.html"; }

  function buildHead() {
    var head = $("ix-head");
    COLS.forEach(function (c) {
      var th = el("th", (c.num ? "num" : "") + (c.fact ? " ix-fact" : "") || null, c.title);
      th.setAttribute("data-key", c.key);
      th.title = (c.fact ? "fact " + c.fact + " (docs/facts.md). " : "") + "Sort by " + c.title + " (click again to reverse)";
      th.addEventListener("click", function () {
        if (S.sort === c.key) S.dir = -S.dir; else { S.sort = c.key; S.dir = 1; }
        render();
      });
      head.appendChild(th);
    });
  }

  function render() {
    var body = $("ix-body");
    var rows = filterRows(S.rows, S.filter, S.status);
    rows.sort(comparator(S.sort, S.dir));
    document.querySelectorAll("#ix-head th").forEach(function (th) {
      var k = th.getAttribute("data-key");
      if (k === S.sort) th.setAttribute("aria-sort", S.dir > 0 ? "ascending" : "descending");
      else th.removeAttribute("aria-sort");
    });
    var frag = document.createDocumentFragment();
    var from = (location.hash.match(/^#run=([A-Za-z0-9_.\-]+)$/) || [])[1];
    rows.forEach(function (r) {
      var tr = document.createElement("tr");
      tr.setAttribute("data-run", r.run_id);
      tr.setAttribute("data-status", r.status);
      if (r.run_id === from) tr.className = "ix-from";
      COLS.forEach(function (c) {
        var td = el("td", (c.cls || "") + (c.num ? " num" : ""));
        var v = r[c.key];
        if (c.key === "label") {
          var a = el("a", null, S.fit > 1 && S.labels ? S.labels.short.get(r.label) : r.label);
          a.href = hrefOf(r);
          a.title = r.label;
          td.appendChild(a);
        } else if ((c.key === "passes" || c.key === "changed" || c.key === "failed") && r.unfinished) {
          // Not "0": the row was written when the compile started; its report shows the passes so far.
          if (c.key === "passes") td.appendChild(el("span", "ix-soon", r.status === "running" ? "running" : "not finished"));
          td.title = "not known until the compile ends: its report shows the passes recorded so far";
        } else if (c.key === "status") {
          td.appendChild(el("span", "ix-st " + r.status, r.status));
        } else if (c.key === "failed_at") {
          if (r.failed_at) td.appendChild(el("span", "ix-failat", r.failed_at));
          if (r.error) td.title = str(r.error);
        } else if (c.fact === "warp_specialized") {
          td.textContent = v === 1 ? "yes" : v === 0 ? "no" : "";
        } else if (c.key === "seconds" && typeof v === "number") {
          td.textContent = v.toFixed(2);
        } else {
          td.textContent = v === null || v === undefined ? "" : String(v);
        }
        tr.appendChild(td);
      });
      frag.appendChild(tr);
    });
    while (body.firstChild) body.removeChild(body.firstChild);
    body.appendChild(frag);
    document.querySelectorAll("#ix-head th").forEach(function (th) {
      var k = th.getAttribute("data-key");
      th.hidden = S.fit > 0 && (k === "order" || k === "run_id");
    });
    if (S.fit > 0) {
      body.querySelectorAll("tr").forEach(function (tr) {
        var cells = tr.children;
        COLS.forEach(function (c, i) { if (c.key === "order" || c.key === "run_id") cells[i].hidden = true; });
      });
    }
    $("ix-empty").hidden = S.rows.length > 0;
    document.documentElement.setAttribute("data-shown", String(rows.length));
  }

  // A window too narrow for the table: the # and run columns go (each row's link keeps its run), then
  // signatures lose the words every compile shares (said above the table); the page never scrolls
  // sideways, and a signature is never cut where it differs.
  function fit() {
    var main = document.querySelector(".ix-main"), table = $("ix-table"), note = $("ix-shared");
    S.fit = 0;
    render();
    while (S.fit < 2 && table.scrollWidth > main.clientWidth - 24) {
      if (!S.labels) S.labels = distinctLabels(S.rows.map(function (r) { return r.label; }));
      S.fit++;
      render();
    }
    var shared = S.fit > 1 && S.labels ? S.labels.shared : [];
    note.hidden = !shared.length;
    note.textContent = shared.length ? "every compile: " + shared.join(" ") : "";
  }

  function buildHeader() {
    var m = S.meta;
    $("ix-script").textContent = str(m.script);
    document.title = "tltrace: " + str(m.script || "index") + " (" + S.rows.length + " compiles)";
    var nbad = 0, nrun = 0;
    S.rows.forEach(function (r) { if (BAD[r.status]) nbad++; else if (r.status !== "complete") nrun++; });
    var st = $("ix-status");
    st.className = "tl-runstatus " + (nbad ? "error" : nrun ? "running" : "complete");
    st.textContent = S.rows.length + " compile" + (S.rows.length === 1 ? "" : "s") +
      (nbad ? ", " + nbad + " failed" : "") + (nrun ? ", " + nrun + " unfinished" : "") +
      (S.processes > 1 ? ", in " + S.processes + " processes" : "");
    var meta = $("ix-meta");
    function item(label, value, code) {
      if (value === undefined || value === null || value === "") return;
      var s = el("span");
      s.title = label + " " + value;
      s.appendChild(document.createTextNode(label + " "));
      s.appendChild(el(code ? "code" : "b", null, value));
      meta.appendChild(s);
    }
    item("invocation", m.invocation, true);
    if (typeof m.started === "number" && isFinite(m.started)) item("started", new Date(m.started * 1000).toLocaleString());
    item("command", m.command_line, true);
    var from = (location.hash.match(/^#run=([A-Za-z0-9_.\-]+)$/) || [])[1];
    if (from && !S.byId.has(from)) {
      var note = $("ix-note");
      note.hidden = false;
      note.textContent = "The compile you came from (" + from + ") belongs to an older invocation; this index shows the newest. " +
        "'tltrace show SCRIPT " + from + " --html' rebuilds a report, 'tltrace show SCRIPT -N --html' an older index.";
    }
  }

  function start() {
    if (!C.pageComplete("tl-data")) return;  // the file ends inside the page skeleton: the notice says so
    load();
    // An invocation of one compile: its index would be a table of one row; open the compile.
    if (S.ended && S.rows.length === 1 && !location.hash) {
      location.replace(hrefOf(S.rows[0]));
      return;
    }
    buildHead();
    buildHeader();
    var filter = $("ix-filter"), sel = $("ix-status-filter"), timer = null;
    filter.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(function () { S.filter = filter.value; render(); }, 120);
    });
    sel.addEventListener("change", function () { S.status = sel.value; render(); });
    C.wireTheme($("tl-theme"));
    fit();
    var resized = null;
    window.addEventListener("resize", function () { clearTimeout(resized); resized = setTimeout(fit, 100); });
    if (window.tltraceProfile) window.tltraceProfile.attachIndex({ rows: S.rows });
    if (window.tltraceCallSites) window.tltraceCallSites.attachIndex({ rows: S.rows, sorted: function () { return S.sort !== null; } });
    document.documentElement.setAttribute("data-ready-ms", String(Math.round(performance.now())));
    document.documentElement.setAttribute("data-ready", "1");
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})(typeof window !== "undefined" ? window : this);
