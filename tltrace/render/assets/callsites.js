/* tltrace invocation index: compiles grouped by call site (the manifest's `stack`, callsites/stack.py).
 *
 * The index groups its rows under their call sites as a tree (tlparse's stack trie) when they
 * came from more than one, in its default order (a click on a column sorts plainly). The compile
 * report's header names the call site itself (report-remarks.js). The trie is the twin of tltrace/history/callsites.py: a branch with one child
 * and no compile of its own is folded into it.
 *
 * The pure parts (no DOM) run under node too (module.exports, tests/test_callsites.py):
 * framesOf, label, build (the folded trie) and walk (its nodes in order, with their depth).
 * @requires core.js
 */
(function (root) {
  "use strict";

  var C = root.TLCore || (typeof module === "object" && module.exports ? require("./core.js") : null);

  // ---- the pure parts ---------------------------------------------------------------------------
  function framesOf(stack) {
    if (!Array.isArray(stack)) return [];
    var out = [];
    for (var i = 0; i < stack.length; i++) {
      var f = stack[i];
      if (!f || typeof f !== "object") return [];
      out.push({ file: String(f.file === undefined ? "?" : f.file), line: typeof f.line === "number" ? f.line : 0, func: String(f.func === undefined ? "?" : f.func) });
    }
    return out;
  }
  function base(path) { var i = Math.max(path.lastIndexOf("/"), path.lastIndexOf("\\")); return path.slice(i + 1); }
  function label(f) { return f.file.charAt(0) === "(" ? f.file + " " + f.func : base(f.file) + ":" + f.line + " " + f.func; }
  function keyOf(f) { return f.file + "\u0000" + f.line + "\u0000" + f.func; }

  // The folded trie of `stacks` (manifest `stack` values): nodes {frames, items, children}; the
  // compiles without a stack sit in the root's items.
  function build(stacks) {
    var root = { frames: [], items: [], children: new Map() };
    stacks.forEach(function (stack, pos) {
      var node = root;
      framesOf(stack).forEach(function (f) {
        var k = keyOf(f);
        if (!node.children.has(k)) node.children.set(k, { frames: [f], items: [], children: new Map() });
        node = node.children.get(k);
      });
      node.items.push(pos);
    });
    (function fold(node) {
      node.children.forEach(function (child) {
        fold(child);
        while (child.children.size === 1 && !child.items.length) {
          var only = child.children.values().next().value;
          child.frames = child.frames.concat(only.frames);
          child.items = only.items; child.children = only.children;
        }
      });
    })(root);
    return root;
  }
  // The nodes below the root in order, as [depth, node] (the root's children at depth 0).
  function walk(root) {
    var out = [];
    (function visit(node, depth) {
      node.children.forEach(function (child) { out.push([depth, child]); visit(child, depth + 1); });
    })(root, 0);
    return out;
  }
  function sites(stacks) {
    var seen = new Set();
    stacks.forEach(function (s) { var f = framesOf(s); if (f.length) seen.add(f.map(keyOf).join("\u0001")); });
    return seen.size;
  }
  function nodeLabel(node) { return node.frames.map(label).join(" \u203A "); }

  if (typeof module === "object" && module.exports) {
    module.exports = { framesOf: framesOf, label: label, build: build, walk: walk, sites: sites, nodeLabel: nodeLabel };
    return;
  }

  // ---- the invocation index: rows under their call sites ---------------------------------------
  // After each render of the table (in its default order), rows are put under their call sites.
  function attachIndex(ctx) {
    var body = root.document.getElementById("ix-body");
    if (!body || sites(ctx.rows.map(function (r) { return r.stack; })) < 2) return;
    var busy = false;
    function group() {
      if (busy || ctx.sorted()) return;
      busy = true;
      var trs = Array.prototype.slice.call(body.querySelectorAll("tr[data-run]"));
      var byRun = new Map(ctx.rows.map(function (r) { return [r.run_id, r]; }));
      var shown = trs.map(function (tr) { return byRun.get(tr.getAttribute("data-run")); });
      var tree = build(shown.map(function (r) { return r ? r.stack : null; }));
      var cols = trs.length ? trs[0].children.length : 1;
      var frag = root.document.createDocumentFragment();
      tree.items.forEach(function (i) { frag.appendChild(trs[i]); });
      walk(tree).forEach(function (dn) {
        var tr = C.el("tr", "ix-site"), td = C.el("td", null, nodeLabel(dn[1]));
        td.colSpan = cols;
        td.style.paddingLeft = (0.5 + dn[0] * 1.2) + "em";
        td.title = dn[1].frames.map(function (x) { return x.file + ":" + x.line + " " + x.func; }).join("\n");
        tr.appendChild(td);
        frag.appendChild(tr);
        dn[1].items.forEach(function (i) { frag.appendChild(trs[i]); });
      });
      C.clear(body);
      body.appendChild(frag);
      busy = false;
    }
    if (root.MutationObserver) new root.MutationObserver(function () { if (!body.querySelector("tr.ix-site")) group(); }).observe(body, { childList: true });
    group();
  }

  root.tltraceCallSites = { attachIndex: attachIndex };
})(typeof window !== "undefined" ? window : this);
