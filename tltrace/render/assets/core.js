/* tltrace page core: what every page (compile report, invocation index, diff-runs) shares.
 *
 * - prefs and theme: one saved theme for every page, the system's by default;
 * - data chunks: <script type="application/json" class="tl-d"> blocks (or packed, type
 *   tl/z or, chained, tl/zc: chunkText inflates them), a chunk cut short by a kill does not
 *   parse and is counted, not shown;
 * - safeId: a run id that may go into a relative link;
 * - el / setText: DOM built with textContent only, invisible bidi controls shown as boxes;
 * - passRef: the one pass-name grammar (name, phase/name, name#k, index, any case), the twin
 *   of tltrace/format/passref.py (tests/test_passref.py runs both over the same cases).
 * Runs in the pages (window.TLCore) and under node (module.exports) for the pure parts.
 */
(function (root) {
  "use strict";

  // ---- prefs and theme (file:// pages may refuse storage) ---------------------------------------
  function getPref(key) { try { return root.localStorage.getItem(key); } catch (e) { return null; } }
  function setPref(key, value) { try { root.localStorage.setItem(key, value); } catch (e) { /* private mode */ } }
  function applyTheme(theme) { root.document.documentElement.setAttribute("data-theme", theme); }
  function initialTheme(saved, systemDark) {
    return saved === "dark" || saved === "light" ? saved : systemDark ? "dark" : "light";
  }
  function initTheme() {
    var dark = !!(root.matchMedia && root.matchMedia("(prefers-color-scheme: dark)").matches);
    applyTheme(initialTheme(getPref("tltrace-theme"), dark));
  }
  function wireTheme(button) {
    if (!button) return;
    button.addEventListener("click", function () {
      var next = root.document.documentElement.getAttribute("data-theme") === "dark" ? "light" : "dark";
      applyTheme(next);
      setPref("tltrace-theme", next);
    });
  }

  // ---- data ------------------------------------------------------------------------------------------
  // Calls onChunk(object) for each data chunk in document order; returns how many were damaged.
  function readChunks(onChunk) {
    var nodes = root.document.querySelectorAll("script.tl-d"), bad = 0;
    for (var i = 0; i < nodes.length; i++) {
      var list = chunkValues(nodes[i]);
      if (list === null) bad++;
      else for (var j = 0; j < list.length; j++) onChunk(list[j]);
    }
    return bad;
  }
  // The chunk objects an element holds, parsed once per element: one object, or a batch (a JSON
  // array of them, render/pages.py data_chunk); null when it is damaged.
  var parsed = typeof WeakMap === "function" ? new WeakMap() : null;
  function chunkValues(node) {
    var v = parsed ? parsed.get(node) : undefined;
    if (v !== undefined) return v;
    var text = chunkText(node), d = null;
    try { d = JSON.parse(text); } catch (e) { d = null; }
    if (Array.isArray(d)) v = d.every(function (x) { return x && typeof x === "object" && !Array.isArray(x); }) ? d : null;
    else v = d && typeof d === "object" ? [d] : null;
    if (parsed) parsed.set(node, v);
    return v;
  }
  // The JSON text of a chunk element: as it is, or a packed one (render/pages.py data_chunk) inflated
  // by unpack.js's tlInflate, once per element ("" when it is cut or corrupt: it does not parse).
  // A chained one (pages.Packer) was deflated with the JSON of the chained chunks before it as its
  // dictionary (the last 32 KB): they are inflated in page order, and after a damaged one none is.
  var PACKED = "tl/z", CHAINED = "tl/zc", WINDOW = 32768;
  var inflated = typeof WeakMap === "function" ? new WeakMap() : null;
  var chain = { done: 0, hist: new Uint8Array(0), broken: false };
  function chunkText(node) {
    if (node.type !== PACKED && node.type !== CHAINED) return node.textContent;
    var t = inflated ? inflated.get(node) : undefined;
    if (t !== undefined) return t;
    if (node.type === CHAINED && inflated) {
      var all = root.document.querySelectorAll('script.tl-d[type="' + CHAINED + '"]');
      for (; chain.done < all.length && !inflated.has(node); chain.done++) inflateChained(all[chain.done]);
      return inflated.has(node) ? inflated.get(node) : "";
    }
    try { t = root.tlInflate(node.textContent); } catch (e) { t = ""; }
    if (inflated) inflated.set(node, t);
    return t;
  }
  function inflateChained(node) {
    var t = "";
    if (!chain.broken) {
      try { t = root.tlInflate(node.textContent, chain.hist); } catch (e) { chain.broken = true; }
    }
    if (!chain.broken) {
      var b = new root.TextEncoder().encode(t), h = new Uint8Array(Math.min(WINDOW, chain.hist.length + b.length));
      var keep = h.length - b.length;
      if (keep > 0) h.set(chain.hist.subarray(chain.hist.length - keep), 0);
      h.set(keep >= 0 ? b : b.subarray(b.length - h.length), Math.max(keep, 0));
      chain.hist = h;
    }
    inflated.set(node, t);
  }
  function parseChunk(text) {
    var d;
    try { d = JSON.parse(text); } catch (e) { return null; }
    return d && typeof d === "object" && !Array.isArray(d) ? d : null;
  }
  // A text stored as changes to an earlier one (render/delta.py): ops are literal lines (a string,
  // lines joined by "\n") or [i, n], lines i..i+n-1 of the base; null when they do not fit the base.
  function applyDelta(base, ops, newlineAtEnd) {
    if (typeof base !== "string" || !Array.isArray(ops)) return null;
    var a = base === "" ? [] : splitLines(base), lines = [];
    for (var k = 0; k < ops.length; k++) {
      var op = ops[k];
      if (typeof op === "string") {
        var lit = op.split("\n");
        for (var m = 0; m < lit.length; m++) lines.push(lit[m]);
      } else if (Array.isArray(op) && op.length === 2 && Number.isInteger(op[0]) && Number.isInteger(op[1]) &&
                 op[0] >= 0 && op[1] > 0 && op[0] + op[1] <= a.length) {
        for (var i = op[0]; i < op[0] + op[1]; i++) lines.push(a[i]);
      } else {
        return null;
      }
    }
    var end = newlineAtEnd ? "\n" : "";
    return lines.length ? lines.join("\n") + end : end;
  }
  function safeId(v) { return typeof v === "string" && /^[A-Za-z0-9_.\-]+$/.test(v) && v !== "." && v !== ".."; }
  function str(v) { return v === undefined || v === null ? "" : String(v); }

  // ---- DOM --------------------------------------------------------------------------------------------
  // Invisible characters that reorder or break a line (bidi overrides, isolates, marks, U+2028/9)
  // would make code display as something it is not ("Trojan Source"): show them as visible boxes.
  var CTL = /[\u061C\u200E\u200F\u2028\u2029\u202A-\u202E\u2066-\u2069]/;
  var CTL_ALL = /[\u061C\u200E\u200F\u2028\u2029\u202A-\u202E\u2066-\u2069]/g;
  function ctlName(c) { return "U+" + c.charCodeAt(0).toString(16).toUpperCase(); }
  function appendText(n, text) {
    var doc = root.document;
    if (!CTL.test(text)) { n.appendChild(doc.createTextNode(text)); return; }
    var last = 0;
    text.replace(CTL_ALL, function (c, at) {
      if (at > last) n.appendChild(doc.createTextNode(text.slice(last, at)));
      var box = doc.createElement("span");
      box.className = "tl-ctl";
      box.title = "invisible control character " + ctlName(c) + " (shown, not applied)";
      box.textContent = ctlName(c);
      n.appendChild(box);
      last = at + 1;
      return c;
    });
    if (last < text.length) n.appendChild(doc.createTextNode(text.slice(last)));
  }
  function setText(n, text) {
    text = String(text);
    if (!CTL.test(text)) { n.textContent = text; return n; }
    n.textContent = "";
    appendText(n, text);
    return n;
  }
  function el(tag, cls, text) {
    var n = root.document.createElement(tag);
    if (cls) n.className = cls;
    if (text !== undefined && text !== null) setText(n, text);
    return n;
  }
  function splitLines(text) {
    if (text === undefined || text === null) return null;
    var lines = text.split("\n");
    if (lines.length > 1 && lines[lines.length - 1] === "") lines.pop();
    return lines;
  }
  function clear(n) { while (n.firstChild) n.removeChild(n.firstChild); }
  function button(label, title, onclick) {
    var b = el("button", null, label);
    b.type = "button";
    if (title) b.title = title;
    b.addEventListener("click", onclick);
    return b;
  }

  // ---- pass references (twin of tltrace/format/passref.py) --------------------------------------------------
  // parseRef("LowerTileOp#2") -> {index: null, phase: null, name: "LowerTileOp", k: 2}
  function parseRef(ref) {
    ref = String(ref).trim();
    if (/^#?\d+$/.test(ref)) return { index: parseInt(ref.replace(/^#/, ""), 10), phase: null, name: null, k: null };
    var name = ref, k = null, m = /^(.+)#(\d+)$/.exec(ref);
    if (m) { name = m[1]; k = parseInt(m[2], 10); }
    var phase = null, slash = name.indexOf("/");
    if (slash > 0) { phase = name.slice(0, slash); name = name.slice(slash + 1); }
    return { index: null, phase: phase, name: name, k: k };
  }
  function tail(name) {
    var cut = Math.max(name.lastIndexOf("."), name.lastIndexOf("/"));
    return cut >= 0 ? name.slice(cut + 1) : name;
  }
  // The records a NAME (no #k) means: the exact name; else the name in any case; else the end of
  // a dotted name (BindTarget for tirx.BindTarget); else the one name containing it. recs: [{name, phase}].
  function candidates(recs, phase, name) {
    var low = name.toLowerCase();
    var tests = [
      function (r) { return r.name === name; },
      function (r) { return r.name.toLowerCase() === low; },
      function (r) { return tail(r.name).toLowerCase() === low; },
      function (r) { return r.name.toLowerCase().indexOf(low) >= 0; }
    ];
    for (var t = 0; t < tests.length; t++) {
      var hits = [];
      for (var i = 0; i < recs.length; i++) {
        var r = recs[i];
        if ((phase === null || String(r.phase).toLowerCase() === phase.toLowerCase()) && tests[t](r)) hits.push(i);
      }
      if (hits.length) return hits;
    }
    return [];
  }
  // resolveRef(recs, ref) -> {pos, matches: [pos...], error}: pos -1 with an error when nothing or
  // several different names match; `matches` lists every occurrence of the name found.
  function resolveRef(recs, ref) {
    var whole = [], i;
    for (i = 0; i < recs.length; i++) if (recs[i].name === String(ref)) whole.push(i);
    if (whole.length) return { pos: whole[0], matches: whole, error: null };  // a name holding '/' or '#k'
    var p = parseRef(ref);
    if (p.index !== null) {
      for (i = 0; i < recs.length; i++) if (recs[i].index === p.index) return { pos: i, matches: [i], error: null };
      return { pos: -1, matches: [], error: "no pass with index " + p.index };
    }
    if (!p.name) return { pos: -1, matches: [], error: "no pass named " + JSON.stringify(ref) };
    var hits = candidates(recs, p.phase, p.name);
    var names = [];
    hits.forEach(function (h) { if (names.indexOf(recs[h].name) < 0) names.push(recs[h].name); });
    if (names.length > 1) {
      return { pos: -1, matches: hits, error: "pass " + JSON.stringify(ref) + " matches several passes (" + names.slice(0, 5).join(", ") + ")" };
    }
    if (!hits.length) return { pos: -1, matches: [], error: "no pass named " + JSON.stringify(ref) };
    var k = p.k === null ? 1 : p.k;
    if (k < 1 || k > hits.length) {
      return { pos: -1, matches: hits, error: "pass " + JSON.stringify(names[0]) + " ran " + hits.length + " time(s); #" + k + " does not exist" };
    }
    return { pos: hits[k - 1], matches: hits, error: null };
  }
  // The reference a link uses for recs[pos]: its name, with #k from the 2nd occurrence on.
  function refOf(recs, pos) {
    var r = recs[pos], k = 0;
    for (var i = 0; i <= pos; i++) if (recs[i].name === r.name) k++;
    return k > 1 ? r.name + "#" + k : r.name;
  }

  // ---- a page cut short ---------------------------------------------------------------------------------
  // Each page starts with a notice (#tl-incomplete) saying that the file ends before the page
  // does; it sits before the CSS and this script, so a file cut inside them (whose hash then no
  // longer matches the CSP: nothing runs) still says something. Once this script runs it hides
  // the notice; a page whose skeleton is cut short (its last fixed element, `lastId`, missing)
  // shows it again and is not started: it would only throw on the elements that are not there.
  function pageComplete(lastId) {
    var doc = root.document, notice = doc.getElementById("tl-incomplete");
    var whole = !!doc.getElementById(lastId);
    if (notice) notice.hidden = whole;
    return whole;
  }
  if (root.document && root.document.getElementById) {
    var cutNotice = root.document.getElementById("tl-incomplete");
    if (cutNotice) cutNotice.hidden = true;  // this script is whole; pageComplete() decides at start
  }

  var api = {
    pageComplete: pageComplete,
    getPref: getPref, setPref: setPref, applyTheme: applyTheme, initialTheme: initialTheme,
    initTheme: initTheme, wireTheme: wireTheme, readChunks: readChunks, chunkValues: chunkValues, chunkText: chunkText, parseChunk: parseChunk, applyDelta: applyDelta,
    safeId: safeId, str: str, el: el, setText: setText, appendText: appendText, clear: clear, button: button, splitLines: splitLines,
    parseRef: parseRef, resolveRef: resolveRef, refOf: refOf
  };
  if (typeof module === "object" && module.exports) module.exports = api;
  else root.TLCore = api;
})(typeof window !== "undefined" ? window : this);
