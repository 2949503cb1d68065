/* tltrace compile report: compare a pass with the same pass of another compile (window.TLCompare):
 * a sibling of this invocation, or a compile of an earlier invocation of the script ({"t":"earlier"}).
 *
 * file:// pages cannot read each other, so the other report is loaded in a hidden sandboxed
 * frame ("#tl-embed"); it answers a pass reference (TLCore.refOf: name, name#k) with that pass's
 * output text, and "list" with every pass's reference and output hash and its facts, by
 * postMessage. Only the frame we made is listened to, and a framed report answers
 * only its parent. The page's CSP allows frames of local files (frame-src file:).
 *
 * The comparison is drawn at the top of the pass view and scrolled into view; it names the
 * facts that changed (`wgmma 1 → 0`), how many passes' outputs differ, and
 * steps from one differing pass to the next (codegen included); with layouts.js, the layouts
 * that changed and both grids (TLLayouts.compare). The select keeps its choice.
 *
 * create(ctx) -> {picker(sibs, runId), start(runId, label), stop(), onPass(), listen()}; ctx
 * gives the report's state: recs(), meta(), earlier(), selected(), select(pos), refOf(pos),
 * textOf(hash), view(), embedded, and diffTable(A, B) -> {same, table}.
 * @requires core.js
 */
(function (root) {
  "use strict";

  var C = root.TLCore;

  function output(ctx, r) {
    if (!r) return undefined;
    var t = ctx.textOf(r.after_hash);
    return t !== undefined ? t : ctx.textOf(r.before_hash);  // a failed pass: the IR it was given
  }
  function hashOf(r) { return r ? (r.after_hash || r.before_hash || null) : null; }
  function isCodegen(r) { return !!r && (r.status === "codegen" || r.phase === "codegen"); }
  function show(v) { return typeof v === "boolean" ? (v ? "true" : "false") : String(v); }
  // The facts known on both sides that differ, in this report's order: ["wgmma 1 \u2192 0", ...].
  function factChanges(a, b) {
    if (!a || !b || typeof a !== "object" || typeof b !== "object") return [];
    return Object.keys(a).filter(function (k) {
      return Object.prototype.hasOwnProperty.call(b, k) && a[k] !== null && b[k] !== null && show(a[k]) !== show(b[k]);
    }).map(function (k) { return k + " " + show(a[k]) + " \u2192 " + show(b[k]); });
  }

  // A frame that loaded and said nothing within this time is not a report: its run is gone
  // (`tltrace clean` removed it after this page was written); one that never loads, GIVE_UP_MS.
  var SILENT_MS = 1500, GIVE_UP_MS = 20000;

  function create(ctx) {
    var cur = null;  // {runId, label, frame, alive, ready, asked, list, facts, signature}
    var pickEl = null;
    // A framed report says it is there as its script starts, before its frame's load event.
    if (ctx.embedded) root.parent.postMessage({ tltrace: "alive" }, "*");

    function picker(sibs, runId) {
      var mine = (sibs || []).filter(function (x) { return String(x[0]) !== runId; });
      var earlier = (ctx.earlier() || []).filter(function (x) { return C.safeId(String(x[0])); });
      if (!mine.length && !earlier.length) return null;
      var pick = C.el("select", "tl-compare-pick");
      pick.title = "Compare this pass with the same pass of another compile";
      var none = C.el("option", null, "compare with\u2026");
      none.value = "";
      pick.appendChild(none);
      [["this invocation", mine], ["earlier invocations", earlier]].forEach(function (x) {
        var g = C.el("optgroup");
        g.label = x[0];
        x[1].forEach(function (y) {  // [run id, label]
          var o = C.el("option", null, String(y[1]));
          o.value = String(y[0]);
          g.appendChild(o);
        });
        if (x[1].length) pick.appendChild(g);
      });
      pick.addEventListener("change", function () {
        if (!pick.value) { stop(); return; }
        start(pick.value, pick.options[pick.selectedIndex].text);
      });
      pickEl = pick;
      return pick;
    }
    function place(box) {
      var old = root.document.getElementById("tl-compare");
      if (old) old.parentNode.removeChild(old);
      var view = ctx.view();
      view.insertBefore(box, view.firstChild);  // where the reader is looking: the top of the pass
      if (box.scrollIntoView) box.scrollIntoView({ block: "start" });
    }
    function start(runId, label) {
      stop(true);
      if (!runId || !C.safeId(runId)) return;
      var frame = C.el("iframe", "tl-cmp-frame");
      frame.hidden = true;
      frame.setAttribute("sandbox", "allow-scripts");
      frame.src = "../" + runId + "/report.html#tl-embed";
      var mine = { runId: runId, label: label, frame: frame, alive: false, ready: false, asked: null, list: null, facts: null };
      cur = mine;
      function silent() { if (cur === mine && !mine.alive && !mine.ready) gone(mine); }
      frame.addEventListener("load", function () { root.setTimeout(silent, SILENT_MS); });
      root.setTimeout(silent, GIVE_UP_MS);
      root.document.body.appendChild(frame);
      var box = C.el("div", "tl-compare");
      box.id = "tl-compare";
      box.appendChild(C.el("p", "tl-empty", "Loading " + label + "\u2026"));
      place(box);
    }
    // The other compile's report is not there: say so (not "Loading…" for ever) and offer it no more.
    function gone(which) {
      if (which.frame.parentNode) which.frame.parentNode.removeChild(which.frame);
      var box = C.el("div", "tl-compare tl-compare-gone");
      box.id = "tl-compare";
      var head = C.el("div", "tl-compare-head");
      head.appendChild(C.el("b", null, which.label + ": its report is gone"));
      var btn = C.button("Stop comparing", "Close the comparison", function () { stop(); });
      btn.className = "tl-compare-stop";
      head.appendChild(btn);
      box.appendChild(head);
      box.appendChild(C.el("p", "tl-notice", "The run " + which.runId + " is no longer in the trace dir " +
        "(removed by 'tltrace clean', or moved) and cannot be compared; pick another compile."));
      place(box);
      if (pickEl) {
        Array.prototype.forEach.call(pickEl.options, function (o) {
          if (o.value === which.runId) { o.disabled = true; o.text = o.text + " (gone)"; }
        });
      }
    }
    // keepPick: a new choice replaces the old one; the select shows it (it does not spring back).
    function stop(keepPick) {
      if (cur && cur.frame.parentNode) cur.frame.parentNode.removeChild(cur.frame);
      cur = null;
      var box = root.document.getElementById("tl-compare");
      if (box) box.parentNode.removeChild(box);
      if (pickEl && keepPick !== true) pickEl.value = "";
    }
    function onPass() {
      if (!cur || !cur.ready || ctx.selected() < 0) return;
      cur.asked = ctx.refOf(ctx.selected());
      cur.frame.contentWindow.postMessage({ tltrace: "get", ref: cur.asked }, "*");
    }
    function answer(ref) {
      var recs = ctx.recs(), found = C.resolveRef(recs, ref), r = found.pos >= 0 ? recs[found.pos] : null;
      var text = output(ctx, r), meta = ctx.meta();
      root.parent.postMessage({
        tltrace: "pass", ref: ref, found: !!r, error: found.error,
        name: r ? r.name : null, index: r ? r.index : null, status: r ? r.status : null,
        text: text === undefined ? null : text, signature: meta.signature || meta.kernel || ""
      }, "*");
    }
    function answerList() {
      root.parent.postMessage({
        tltrace: "list", facts: ctx.meta().facts || null, layouts: (ctx.meta().layouts || {}).final || null,
        recs: ctx.recs().map(function (r, pos) { return [ctx.refOf(pos), hashOf(r)]; })
      }, "*");
    }
    // Positions of this report's passes whose output differs from the other compile's (or that it lacks).
    function differing() {
      if (!cur || !cur.list) return [];
      var theirs = new Map(cur.list), out = [];
      ctx.recs().forEach(function (r, pos) { if (theirs.get(ctx.refOf(pos)) !== hashOf(r)) out.push(pos); });
      return out;
    }
    function summary() {
      var box = C.el("div", "tl-compare-summary");
      if (!cur.list) return box;
      var facts = factChanges(ctx.meta().facts, cur.facts);
      box.appendChild(C.el("div", "tl-compare-facts", "facts: " + (facts.join(", ") || "no change known")));
      var diff = differing(), recs = ctx.recs(), at = ctx.selected();
      var step = C.el("div", "tl-compare-step", diff.length + " of " + recs.length + " passes' outputs differ ");
      var prev = diff.filter(function (p) { return p < at; }).pop();
      var next = diff.filter(function (p) { return p > at; })[0];
      var cg = diff.filter(function (p) { return isCodegen(recs[p]); })[0];
      [["\u2190 previous differing", prev, "tl-compare-prev"], ["next differing \u2192", next, "tl-compare-next"],
        ["codegen", cg, "tl-compare-codegen"]].forEach(function (x) {
        var b = C.button(x[0], x[0], function () { ctx.select(x[1]); });
        b.className = x[2];
        b.disabled = x[1] === undefined || x[1] === at;
        step.appendChild(b);
      });
      box.appendChild(step);
      if (window.TLLayouts) {  // layouts.js: only in a report whose compile has layouts
        if (cur.lay === undefined) cur.lay = window.TLLayouts.compare((ctx.meta().layouts || {}).final, cur.layouts, cur.label);
      }
      if (cur.lay) box.appendChild(cur.lay);
      return box;
    }
    function draw(d) {
      var pos = ctx.selected(), r = ctx.recs()[pos];
      var box = C.el("div", "tl-compare");
      box.id = "tl-compare";
      var head = C.el("div", "tl-compare-head");
      head.appendChild(C.el("b", null, "Output of " + ctx.refOf(pos) + ": this compile (left) vs " + cur.label + " (right)"));
      var btn = C.button("Stop comparing", "Close the comparison", function () { stop(); });
      btn.className = "tl-compare-stop";
      head.appendChild(btn);
      box.appendChild(head);
      box.appendChild(summary());
      var mine = output(ctx, r);
      if (!d.found || typeof d.text !== "string" || mine === undefined) {
        box.appendChild(C.el("p", "tl-empty", d.found ? "The text is not in one of the reports." :
          "That compile has no such pass: " + (d.error || "")));
      } else {
        var got = ctx.diffTable(C.splitLines(mine), C.splitLines(d.text));
        if (got.same) box.appendChild(C.el("p", "tl-notice", "The outputs are identical."));
        box.appendChild(got.table);
      }
      place(box);
    }
    function onMessage(ev) {
      var d = ev.data;
      if (!d || typeof d !== "object" || typeof d.tltrace !== "string") return;
      if (ctx.embedded && ev.source === root.parent) {
        if (d.tltrace === "get") answer(String(d.ref));
        else if (d.tltrace === "list") answerList();
        return;
      }
      if (!cur || ev.source !== cur.frame.contentWindow) return;
      if (d.tltrace === "alive") {
        cur.alive = true;
      } else if (d.tltrace === "ready") {
        cur.ready = true;
        cur.frame.contentWindow.postMessage({ tltrace: "list" }, "*");
      } else if (d.tltrace === "list") {
        cur.list = Array.isArray(d.recs) ? d.recs : [];
        cur.facts = d.facts && typeof d.facts === "object" ? d.facts : null;
        cur.layouts = Array.isArray(d.layouts) ? d.layouts : null;
        onPass();
      } else if (d.tltrace === "pass" && d.ref === cur.asked) draw(d);
    }
    function listen() {
      root.addEventListener("message", onMessage);
      if (ctx.embedded) root.parent.postMessage({ tltrace: "ready" }, "*");  // a sibling asks for our passes
    }
    return { picker: picker, start: start, stop: stop, onPass: onPass, listen: listen };
  }

  root.TLCompare = { create: create, factChanges: factChanges };
})(window);
