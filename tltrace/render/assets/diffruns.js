/* tltrace diff-runs page: built from the JSON data block with textContent only (never innerHTML),
 * under the same CSP as the pass report (this script is allowed by its hash, nothing else runs).
 * Layouts that changed (data.layouts, docs/layouts.md) are drawn side by side with layouts.js.
 * @requires core.js layouts.js
 */
(function () {
  "use strict";
  window.TLCore.initTheme();
  if (!window.TLCore.pageComplete("tltrace-data")) return;  // the file is cut short: the notice says so

  var data = JSON.parse(document.getElementById("tltrace-data").textContent);
  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function or(v, d) { return v === undefined || v === null ? d : v; }
  function label(p) { return p.phase + "/" + p.name + (p.occurrence > 1 ? "#" + p.occurrence : ""); }
  function anchor(p) { return "pass-" + or(p.a_index, "x") + "-" + or(p.b_index, "x"); }
  function statusClass(s) {
    return s === "same" ? "s-same" : s === "output differs" ? "s-output" : s === "input differs" ? "s-input" : "s-only";
  }

  (data.layouts || []).forEach(function (ch) {  // both grids of each buffer whose layout changed
    var box = document.getElementById("layouts"), row = el("div", { "class": "tl-lay-pair", "data-buffer": ch.buffer });
    box.hidden = false;
    box.appendChild(el("h3", {}, ch.buffer + " (" + ch.change + ")"));
    [["A", ch.a], ["B", ch.b]].forEach(function (s) {
      var side = el("div", { "class": "tl-lay-side", "data-side": s[0] });
      side.appendChild(el("b", {}, s[0]));
      if (s[1]) window.TLLayouts.grid(side, s[1]); else side.appendChild(el("p", {}, "no layout"));
      row.appendChild(side);
    });
    box.appendChild(row);
  });

  var runs = document.getElementById("runs");
  ["a", "b"].forEach(function (side) {
    var r = data[side];
    var tr = el("tr");
    tr.appendChild(el("td", {}, side.toUpperCase()));
    tr.appendChild(el("td", {}, r.signature || r.kernel || "?"));
    tr.appendChild(el("td", { "class": "dim" },
      [r.script + "  " + r.run_id, (r.target || "?") + "/" + (r.backend || "?"), r.passes + " passes", r.status].join(", ")));
    runs.appendChild(tr);
  });

  var verdict = document.getElementById("verdict");
  verdict.textContent = data.same ? "The runs are the same, pass by pass."
    : Object.keys(data.counts).filter(function (s) { return data.counts[s]; })
      .map(function (s) { return data.counts[s] + " " + s; }).join(", ");
  verdict.classList.add(data.same ? "same" : "diff");

  var firsts = document.getElementById("firsts");
  function say(what, p) {
    if (!p) return;
    var li = el("li");
    li.appendChild(el("span", {}, what + ": "));
    li.appendChild(el("a", { href: "#" + anchor(p) }, label(p)));
    li.appendChild(el("span", { "class": "dim" }, "  (A #" + or(p.a_index, "-") + ", B #" + or(p.b_index, "-") + ")"));
    firsts.appendChild(li);
  }
  say("first pass whose output differs", data.first_output_change);
  say("first pass whose input matched but output differs", data.first_output_divergence);
  say("first pass whose input differs", data.first_input_divergence);
  // The facts that changed (docs/facts.md), as the terminal names them.
  if (Array.isArray(data.facts) && data.facts.length) {
    firsts.appendChild(el("li", { "class": "facts" }, "facts: " + data.facts.map(function (c) {
      return c.name + " " + String(c.a) + " \u2192 " + String(c.b);
    }).join(", ")));
  }
  // Each codegen role links to its diff below (a real diff under "codegen device: differs").
  var cgDiffs = data.diffs.filter(function (d) { return d.codegen; });
  Object.keys(data.codegen || {}).forEach(function (role) {
    var li = el("li", {}, "codegen " + role + ": " + data.codegen[role]);
    var d = cgDiffs.filter(function (x) { return x.label.split("/").pop().replace(/^codegen_/, "") === role; })[0];
    if (d) { li.appendChild(el("span", {}, "  ")); li.appendChild(el("a", { href: "#" + anchor(d) }, "see the diff")); }
    firsts.appendChild(li);
  });

  // Two compiles of different inputs (two sizes): every pass's input differs, which says nothing.
  // What tells them apart is a pass that did different work: it changed the IR in one, not the other.
  var first = data.passes.length ? data.passes[0] : null;
  var fromStart = !!(data.first_input_divergence && first &&
    data.first_input_divergence.a_index === first.a_index && data.first_input_divergence.b_index === first.b_index);
  function work(p) { return p.status === "input differs" && p.a_status !== p.b_status; }
  var hidden = 0;
  if (fromStart) {
    var n = data.passes.filter(function (p) { return p.status === "input differs"; }).length;
    var nw = data.passes.filter(work).length;
    firsts.appendChild(el("li", { "class": "note" },
      "The compiles start from different IR (" + (data.a.signature || "A") + " vs " + (data.b.signature || "B") +
      "), so the input of every pass differs (" + n + "). Listed: the " + nw + " pass" + (nw === 1 ? "" : "es") +
      " that did different work (changed the IR in one compile, not in the other)."));
  }
  var tbody = document.querySelector("#passes tbody");
  data.passes.forEach(function (p) {
    if (fromStart && p.status === "input differs" && !work(p)) { hidden++; return; }
    var tr = el("tr");
    tr.appendChild(el("td", { "class": "dim" }, or(p.a_index, "-")));
    tr.appendChild(el("td", { "class": "dim" }, or(p.b_index, "-")));
    var td = el("td");
    if (p.status !== "same") td.appendChild(el("a", { href: "#" + anchor(p) }, label(p)));
    else td.textContent = label(p);
    tr.appendChild(td);
    var what = work(p) ? "did different work: A " + p.a_status + ", B " + p.b_status : p.status;
    tr.appendChild(el("td", { "class": statusClass(p.status) }, what));
    tbody.appendChild(tr);
  });
  if (hidden) {
    var more = el("tr", { "class": "dim" });
    more.appendChild(el("td", { colspan: "4" }, "\u2026 " + hidden + " passes whose input differs and that did the same kind of work"));
    tbody.appendChild(more);
  }

  var diffs = document.getElementById("diffs");
  if (!data.diffs.length) diffs.appendChild(el("p", { "class": "dim" }, "No pass differs."));
  data.diffs.forEach(function (d, i) {
    var det = el("details", { id: anchor(d) });
    if (d.open) det.open = true;
    var sum = el("summary");
    sum.appendChild(el("strong", {}, d.label));
    sum.appendChild(el("span", { "class": statusClass(d.status) }, "  " + d.status));
    if (d.note) sum.appendChild(el("span", { "class": "dim" }, "  " + d.note));
    // Step pass by pass: the previous and next differing pass, opened and scrolled to.
    [["\u2190 previous", i - 1], ["next \u2192", i + 1]].forEach(function (x) {
      var to = data.diffs[x[1]];
      if (!to) return;
      var a = el("a", { href: "#" + anchor(to), "class": "tl-step" }, x[0]);
      a.addEventListener("click", function () { var t = document.getElementById(anchor(to)); if (t) t.open = true; });
      sum.appendChild(el("span", {}, "  "));
      sum.appendChild(a);
    });
    det.appendChild(sum);
    var pre = el("pre", { "class": "diff" });
    // Each line comes as [kind, text] from the diff engine; a bare string is an old-style line.
    d.diff.forEach(function (line) {
      var kind = Array.isArray(line) ? String(line[0]) : "same", text = Array.isArray(line) ? line[1] : line;
      pre.appendChild(el("span", { "class": "k-" + kind.replace(/[^a-z]/g, "") }, text));
    });
    if (!d.diff.length) pre.appendChild(el("span", { "class": "dim" }, "(outputs are identical)"));
    det.appendChild(pre);
    diffs.appendChild(det);
  });
  document.documentElement.setAttribute("data-ready", "1");
})();
