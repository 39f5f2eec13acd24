/*
 * What a source's liveness says, in the one wording of every view of a fleet: this page's note
 * and `workflow-hub watch redis://` (`liveness_note` in _cli/_watch_fleet.py, which a test
 * holds to this file). `info` is a source as /v1/sources and /v1/fleet describe it: `stale` (its
 * mirror stopped refreshing), `declared` (its own last frame says it is unavailable) and
 * `last_seen` (seconds since the epoch). Only a source that stopped without a word is
 * "crashed?"; one that declared itself unavailable stays declared, with the time it stopped
 * (local time). Null for a live source: its status says how it is doing.
 */
(function (global) {
  "use strict";

  var CRASHED = "crashed?";
  var DECLARED = "declared unavailable";

  function clock(seconds) {
    var at = new Date(seconds * 1000);
    return [at.getHours(), at.getMinutes(), at.getSeconds()].map(function (part) {
      return (part < 10 ? "0" : "") + part;
    }).join(":");
  }

  function livenessNote(info) {
    if (!info || !(info.stale || info.declared)) return null;
    var at = info.last_seen === null || info.last_seen === undefined ? null : clock(info.last_seen);
    if (info.stale && !info.declared) {
      return CRASHED + (at === null ? "" : " (no refresh since " + at + ")");
    }
    if (!info.stale) return DECLARED;
    return DECLARED + (at === null ? " (stopped)" : " (stopped at " + at + ")");
  }

  var api = { CRASHED: CRASHED, DECLARED: DECLARED, livenessNote: livenessNote };
  if (typeof module === "object" && module.exports) {
    module.exports = api;
  } else {
    global.WorkflowHubLiveness = api;
  }
})(typeof globalThis !== "undefined" ? globalThis : this);
