/* tltrace compile report: compare a pass with the same pass of a sibling compile (window.TLCompare).
 *
 * file:// pages cannot read each other, so the sibling's report is loaded in a hidden sandboxed
 * frame ("#tl-embed"); it answers a pass reference (TLCore.refOf: name, name#k) with that pass's
 * output text by postMessage. Only the frame we made is listened to, and a framed report
 * answers only its parent. The page's CSP allows frames of local files (frame-src file:).
 *
 * create(ctx) -> {start(runId, label), stop(), onPass(), listen()}; ctx gives the report's
 * state: recs(), meta(), selected(), refOf(pos), textOf(hash), view(), embedded, and
 * diffTable(A, B) -> {same, table} for the side-by-side view.
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

  function create(ctx) {
    var cur = null;  // {runId, label, frame, ready, asked}

    function start(runId, label) {
      stop();
      if (!runId || !C.safeId(runId)) return;
      var frame = C.el("iframe", "tl-cmp-frame");
      frame.hidden = true;
      frame.setAttribute("sandbox", "allow-scripts");
      frame.src = "../" + runId + "/report.html#tl-embed";
      cur = { runId: runId, label: label, frame: frame, ready: false, asked: null };
      root.document.body.appendChild(frame);
      var box = C.el("div", "tl-compare");
      box.id = "tl-compare";
      box.appendChild(C.el("p", "tl-empty", "Loading " + label + "\u2026"));
      ctx.view().appendChild(box);
    }
    function stop() {
      if (cur && cur.frame.parentNode) cur.frame.parentNode.removeChild(cur.frame);
      cur = null;
      var box = root.document.getElementById("tl-compare");
      if (box) box.parentNode.removeChild(box);
      var pick = root.document.querySelector(".tl-compare-pick");
      if (pick) pick.value = "";
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
    function show(d) {
      var old = root.document.getElementById("tl-compare");
      if (old) old.parentNode.removeChild(old);
      var pos = ctx.selected(), r = ctx.recs()[pos];
      var box = C.el("div", "tl-compare");
      box.id = "tl-compare";
      var head = C.el("div", "tl-compare-head");
      head.appendChild(C.el("b", null, "Output of " + ctx.refOf(pos) + ": this compile (left) vs " + cur.label + " (right)"));
      var btn = C.button("Stop comparing", "Close the comparison", stop);
      btn.className = "tl-compare-stop";
      head.appendChild(btn);
      box.appendChild(head);
      var mine = output(ctx, r);
      if (!d.found || typeof d.text !== "string" || mine === undefined) {
        box.appendChild(C.el("p", "tl-empty", d.found ? "The text is not in one of the reports." :
          "That compile has no such pass: " + (d.error || "")));
      } else {
        var got = ctx.diffTable(C.splitLines(mine), C.splitLines(d.text));
        if (got.same) box.appendChild(C.el("p", "tl-notice", "The outputs are identical."));
        box.appendChild(got.table);
      }
      ctx.view().appendChild(box);
    }
    function onMessage(ev) {
      var d = ev.data;
      if (!d || typeof d !== "object" || typeof d.tltrace !== "string") return;
      if (ctx.embedded && ev.source === root.parent && d.tltrace === "get") { answer(String(d.ref)); return; }
      if (!cur || ev.source !== cur.frame.contentWindow) return;
      if (d.tltrace === "ready") { cur.ready = true; onPass(); }
      else if (d.tltrace === "pass" && d.ref === cur.asked) show(d);
    }
    function listen() {
      root.addEventListener("message", onMessage);
      if (ctx.embedded) root.parent.postMessage({ tltrace: "ready" }, "*");  // a sibling asks for our passes
    }
    return { start: start, stop: stop, onPass: onPass, listen: listen };
  }

  root.TLCompare = { create: create };
})(window);
