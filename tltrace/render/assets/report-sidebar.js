/* tltrace compile report: the pass list, the phase tabs, the status badges and the filters they set.
 * One part of the report's script (report-state.js has the shared state, report.js starts the page);
 * the parts share window.TLReport, where each puts its functions.
 * @requires report-state.js core.js report-view.js
 */
(function () {
  "use strict";

  var R = window.TLReport, S = R.S, C = window.TLCore, V = window.TLView;

  // ---- sidebar, filters --------------------------------------------------------------------------
  function buildSidebar() {
    var list = R.$("tl-passes");
    C.clear(list);
    var frag = document.createDocumentFragment();
    S.items = S.recs.map(function (r, pos) {
      var li = C.el("li", "tl-pass");
      li.setAttribute("data-pos", pos);
      li.setAttribute("data-status", r.status);
      li.setAttribute("data-phase", r.phase);
      li.setAttribute("data-index", r.index);
      li.title = r.name + " (" + r.phase + ")";
      li.appendChild(C.el("span", "tl-dot " + r.status, R.DOTS[r.status] || "?"));
      li.appendChild(C.el("span", "ix", r.index));
      var nm = C.el("span", "nm", (r.depth ? "\u21B3 " : "") + r.name);
      if (r.depth) nm.style.paddingLeft = (r.depth * 14) + "px";
      li.appendChild(nm);
      var st = C.el("span", "st");
      if (r.status === "changed" && !r.added && !r.removed) {
        st.appendChild(C.el("span", "ws", "ws"));  // no line differs: a newline or whitespace change
        st.title = "only whitespace or the newline at the end changed";
      } else if (r.status === "changed") {
        st.appendChild(C.el("span", "add", "+" + (r.added || 0)));
        st.appendChild(document.createTextNode(" "));
        st.appendChild(C.el("span", "del", "\u2212" + (r.removed || 0)));
      }
      li.appendChild(st);
      li.appendChild(C.el("span", "dur", V.fmtDuration(r.duration_s)));
      frag.appendChild(li);
      return li;
    });
    list.appendChild(frag);
    list.addEventListener("click", function (ev) {
      var li = ev.target.closest("li.tl-pass");
      if (li) R.select(parseInt(li.getAttribute("data-pos"), 10));
    });
  }
  function applyFilters() {
    S.visible = [];
    for (var pos = 0; pos < S.recs.length; pos++) {
      var r = S.recs[pos];
      var ok = (S.phase === null || r.phase === S.phase) &&
        (S.filter === null || r.status === S.filter) &&
        !(S.hideNoop && r.status === "noop");
      S.items[pos].classList.toggle("hidden", !ok);
      if (ok) S.visible.push(pos);
    }
    document.querySelectorAll(".tl-badge[data-filter]").forEach(function (b) {
      b.classList.toggle("active", b.getAttribute("data-filter") === S.filter);
    });
    document.querySelectorAll(".tl-tab").forEach(function (t) {
      var ph = t.getAttribute("data-phase");
      t.classList.toggle("active", (ph === "" ? null : ph) === S.phase);
    });
    if (S.visible.indexOf(S.sel) < 0 && S.missing === null) {
      if (S.visible.length) R.select(S.visible[0]);
      else { S.sel = -1; markSelected(); R.showPass(-1); }
    }
  }
  function buildSummary() {
    var bar = R.$("tl-summary");
    C.clear(bar);
    var counts = { changed: 0, noop: 0, failed: 0, codegen: 0 };
    S.recs.forEach(function (r) { counts[r.status] = (counts[r.status] || 0) + 1; });
    bar.appendChild(C.el("span", "tl-total", S.recs.length + " passes"));
    [["changed", "changed"], ["noop", "no-op"], ["failed", "failed"], ["codegen", "codegen"]].forEach(function (p) {
      var label = R.DOTS[p[0]] + " " + counts[p[0]] + " " + p[1];
      if (p[0] === "noop") { bar.appendChild(C.el("span", "tl-badge noop", label)); return; }
      var b = C.button(label, "Show only " + p[1] + " passes (click again for all)", function () {
        S.filter = S.filter === p[0] ? null : p[0];
        applyFilters();
      });
      b.className = "tl-badge " + p[0];
      b.setAttribute("data-filter", p[0]);
      bar.appendChild(b);
    });
    if (S.bad) bar.appendChild(C.el("span", "tl-warn", S.bad + " damaged data chunk" + (S.bad === 1 ? "" : "s") +
      " skipped (the run was cut short)"));
  }
  function buildTabs() {
    var tabs = R.$("tl-tabs");
    C.clear(tabs);
    function tab(label, phase, n) {
      var t = C.button(label, null, function () { S.phase = phase; applyFilters(); });
      t.className = "tl-tab";
      t.setAttribute("data-phase", phase === null ? "" : phase);
      t.appendChild(C.el("span", "n", n));
      tabs.appendChild(t);
    }
    tab("All", null, S.recs.length);
    S.phases.forEach(function (ph) {
      var n = 0;
      S.recs.forEach(function (r) { if (r.phase === ph) n++; });
      tab(ph, ph, n);
    });
  }

  function markSelected() {
    document.querySelectorAll("li.tl-pass.selected").forEach(function (n) { n.classList.remove("selected"); });
    var li = S.items[S.sel];
    if (li) {
      li.classList.add("selected");
      if (li.scrollIntoViewIfNeeded) li.scrollIntoViewIfNeeded(false);
      else li.scrollIntoView({ block: "nearest" });
    }
  }

  R.buildSidebar = buildSidebar;
  R.applyFilters = applyFilters;
  R.buildSummary = buildSummary;
  R.buildTabs = buildTabs;
  R.markSelected = markSelected;
})();
