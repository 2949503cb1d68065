/* tltrace compile report: the run's state, and reloading a running report where its reader was.
 * One part of the report's script (report-state.js has the shared state, report.js starts the page);
 * the parts share window.TLReport, where each puts its functions.
 * @requires report-state.js report-logic.js
 */
(function () {
  "use strict";

  var R = window.TLReport, S = R.S;

  // ---- run state, and reloading while the run goes on ------------------------------------------------
  // The writer appends to this file as passes finish and ends with the final status. A file still
  // saying "running" that has not changed for STALE_MS belongs to a run that was killed.
  function fileAge() {
    var t = Date.parse(document.lastModified);
    return isNaN(t) ? 0 : Math.max(0, Date.now() - t);
  }
  function runState() { return window.TLReportLogic.runStateOf(S.meta, fileAge(), R.STALE_MS); }
  var STATE_KEY = "tltrace-reload:" + location.pathname;
  function scheduleRefresh() {
    if (runState() !== "running") return;
    setTimeout(function tick() {
      var busy = S.aligning || R.isTextField(document.activeElement) ||
        (window.getSelection && String(window.getSelection()) !== "");
      if (busy) { setTimeout(tick, R.REFRESH_MS); return; }
      try {
        window.sessionStorage.setItem(STATE_KEY, JSON.stringify({
          view: R.$("tl-view").scrollTop, list: R.$("tl-passes").scrollTop, expandAll: S.expandAll,
          phase: S.phase, filter: S.filter, hideNoop: S.hideNoop, sel: S.sel >= 0 ? R.fragmentOf(S.sel) : null
        }));
      } catch (e) { /* no session storage: reload anyway */ }
      location.reload();
    }, R.REFRESH_MS);
  }
  function takeSavedState() {
    try {
      var raw = window.sessionStorage.getItem(STATE_KEY);
      window.sessionStorage.removeItem(STATE_KEY);
      return raw ? JSON.parse(raw) : null;
    } catch (e) { return null; }
  }

  R.fileAge = fileAge;
  R.runState = runState;
  R.scheduleRefresh = scheduleRefresh;
  R.takeSavedState = takeSavedState;
})();
