/*
 * The dashboard's model, without the DOM: the same fold as workflow_hub.reporting.ActivityView,
 * the same status as workflow_hub.reporting.aggregate, and a bounded feed of hook events.
 *
 * It is a classic script so that the page loads it with a plain <script> tag (no module MIME
 * type, no build step) and node loads it with require(): the test suite folds the same frames
 * here and in Python and compares the results (tests/dashboard/test_dashboard_fold.py).
 */
(function (global) {
  "use strict";

  var READY = "ready";

  function formatCursor(cursor) {
    return cursor.epoch + ":" + cursor.revision;
  }

  /*
   * Rules (docs/reporters.md, src/workflow_hub/_view.py): a snapshot replaces everything and is
   * refused only when older than the view (same epoch, lower revision); a changed or removed
   * frame must carry the view's epoch and a strictly higher revision, else it is refused and the
   * view is out of sync until the next snapshot; one of another epoch also marks the view
   * superseded; while the source is not ready such frames only advance the cursor.
   */
  function ActivityView() {
    this.availability = null;
    // Why the source is unknown, when its last snapshot said (C3's optional `detail`: absent
    // from a ready snapshot and from a source that did not say; a pre-C3 frame never has it).
    this.detail = null;
    this.cursor = null;
    this._roots = new Map();
    this.inSync = false;
    this.rejected = 0;
    this.superseded = false;
  }

  ActivityView.prototype.roots = function () {
    return this.superseded ? [] : Array.from(this._roots.values());
  };

  ActivityView.prototype.get = function (rootRunId) {
    return this.superseded ? undefined : this._roots.get(rootRunId);
  };

  ActivityView.prototype.known = function () {
    return this.availability === READY && !this.superseded;
  };

  ActivityView.prototype.apply = function (frame) {
    if (frame.kind === "snapshot") {
      return this._applySnapshot(frame);
    }
    if (frame.kind !== "changed" && frame.kind !== "removed") {
      throw new TypeError("expected a frame, got kind " + JSON.stringify(frame.kind));
    }
    var rejection = this._checkSequence(frame.cursor);
    if (rejection !== null) {
      if (rejection === "foreign_epoch") {
        this.superseded = true;
      }
      return this._reject(rejection);
    }
    this.cursor = frame.cursor;
    if (this.availability !== READY) {
      return { kind: "advanced", rootIds: [], rejection: null };
    }
    if (frame.kind === "changed") {
      var id = frame.root.rootRunId;
      var kind = this._roots.has(id) ? "replaced" : "added";
      this._roots.set(id, frame.root);
      return { kind: kind, rootIds: [id], rejection: null };
    }
    if (!this._roots.delete(frame.rootRunId)) {
      return { kind: "advanced", rootIds: [], rejection: null };
    }
    return { kind: "removed", rootIds: [frame.rootRunId], rejection: null };
  };

  ActivityView.prototype._checkSequence = function (cursor) {
    var current = this.cursor;
    if (current === null) return "no_snapshot";
    if (cursor.epoch !== current.epoch) return "foreign_epoch";
    if (cursor.revision <= current.revision) return "stale_revision";
    return null;
  };

  ActivityView.prototype._reject = function (rejection) {
    this.rejected += 1;
    this.inSync = false;
    return { kind: "rejected", rootIds: [], rejection: rejection };
  };

  ActivityView.prototype._applySnapshot = function (frame) {
    var current = this.cursor;
    var cursor = frame.cursor;
    if (current !== null && cursor.epoch === current.epoch && cursor.revision < current.revision) {
      return this._reject("stale_revision");
    }
    // Keyed like the hub: a duplicate id keeps the last value at the first position, which is
    // what Map.set does.
    var keyed = new Map();
    (frame.roots || []).forEach(function (root) {
      keyed.set(root.rootRunId, root);
    });
    this.cursor = cursor;
    this.availability = frame.availability;
    this.detail = typeof frame.detail === "string" && frame.detail ? frame.detail : null;
    this._roots = keyed;
    this.inSync = true;
    this.superseded = false;
    return { kind: "reset", rootIds: Array.from(keyed.keys()), rejection: null };
  };

  /*
   * The decision table of workflow_hub.reporting.aggregate (first row wins): working, then
   * blocked, then unknown (not ready, no snapshot, out of sync), else idle. Unknown is never idle.
   */
  var WORKING_RANK = { retrying: 0, executing: 1, automatic_continuation: 2 };
  var BLOCKED_RANK = { awaiting_input: 0, manual_intervention: 1 };
  var SEPARATOR = " \u00b7 ";

  function firstByRank(reasons, rank) {
    var size = Object.keys(rank).length;
    var best = null;
    var bestRank = Infinity;
    reasons.forEach(function (reason) {
      var value = Object.prototype.hasOwnProperty.call(rank, reason) ? rank[reason] : size;
      if (value < bestRank) {
        best = reason;
        bestRank = value;
      }
    });
    return best;
  }

  function verb(count, singular, plural) {
    return count + " " + (count === 1 ? singular : plural);
  }

  function aggregate(view) {
    var roots = view.roots();
    var working = [];
    var blocked = [];
    var attention = false;
    var otherAttention = 0;
    roots.forEach(function (root) {
      if (root.state === "working") working.push(root.reason);
      if (root.state === "blocked") blocked.push(root.reason);
      if (root.needsAttention || root.state === "blocked") attention = true;
      if (root.needsAttention && root.state !== "blocked") otherAttention += 1;
    });
    var awaiting = blocked.filter(function (r) { return r === "awaiting_input"; }).length;
    var manual = blocked.filter(function (r) { return r === "manual_intervention"; }).length;

    var blockedParts = [];
    if (awaiting) blockedParts.push(awaiting + " waiting for input");
    if (manual) blockedParts.push(verb(manual, "needs intervention", "need intervention"));
    if (blocked.length > awaiting + manual) {
      blockedParts.push(blocked.length - awaiting - manual + " blocked");
    }
    var attentionParts = [];
    if (otherAttention) {
      attentionParts.push(verb(otherAttention, "needs attention", "need attention"));
    }

    var state;
    var reason;
    var parts;
    if (working.length) {
      state = "working";
      reason = firstByRank(
        working.filter(function (r) { return r !== "stopping"; }),
        WORKING_RANK
      );
      if (reason === null) reason = "stopping";
      parts = [working.length + " working"].concat(blockedParts, attentionParts);
    } else if (blocked.length) {
      state = "blocked";
      reason = firstByRank(blocked, BLOCKED_RANK);
      parts = blockedParts.concat(attentionParts);
    } else if (view.availability !== READY || !view.inSync) {
      state = "unknown";
      reason = null;
      var detail;
      if (view.availability === null) detail = "no snapshot yet";
      else if (view.availability !== READY) detail = view.detail || "source " + view.availability;
      else if (view.superseded) detail = "source replaced";
      else detail = "view out of sync";
      parts = ["activity unknown: " + detail].concat(attentionParts);
    } else {
      state = "idle";
      var paused = roots.filter(function (root) { return root.reason === "paused"; }).length;
      reason = paused ? "paused" : "quiescent";
      parts = [paused ? paused + " paused" : "idle"].concat(attentionParts);
    }
    return {
      state: state,
      reason: reason,
      attention: attention,
      roots: roots.length,
      working: working.length,
      blocked: blocked.length,
      awaitingInput: awaiting,
      message: parts.join(SEPARATOR),
    };
  }

  function pad(number) {
    return (number < 10 ? "0" : "") + number;
  }

  /* HH:MM:SS of an epoch-milliseconds timestamp, in local time (as the demo prints it). */
  function clockTime(milliseconds) {
    var date = new Date(milliseconds);
    return pad(date.getHours()) + ":" + pad(date.getMinutes()) + ":" + pad(date.getSeconds());
  }

  /* A stage or tool as people know it, as the demo's plain output names it: a written id
     stands alone; a generated one (its last part longer than 16 characters, a Celery task's
     UUID) follows the node's name. Characters are counted as Python counts them (code
     points, not UTF-16 units). */
  function nameNode(id, name) {
    return Array.from(id.slice(id.lastIndexOf(":") + 1)).length <= 16 ? id : name + " " + id;
  }

  /* Characters (code points) of a failure's error on a hook event's line: the same number as
     EVENT_ERROR_MAX in workflow_hub/_cli/_output.py. */
  var EVENT_ERROR_MAX = 160;
  /* What Python's str.split() splits on: every run of it becomes one space, as there. */
  var WHITESPACE = /[\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+/g;

  /* A failure's error (C3) on one line: "TimeoutError: deadline passed", or the message alone
     without a type; whitespace runs one space; cut to EVENT_ERROR_MAX characters with "…". */
  function eventError(error) {
    var text = (error.type ? error.type + ": " + error.message : error.message)
      .replace(WHITESPACE, " ").replace(/^ | $/g, "");
    var characters = Array.from(text);
    return characters.length <= EVENT_ERROR_MAX ? text
      : characters.slice(0, EVENT_ERROR_MAX - 1).join("") + "\u2026";
  }

  /* One line for a hook event, the same words as the demo's plain output; a failed run, stage
     or tool says its error last. */
  function describeEvent(event) {
    var target = event.target;
    switch (event.type) {
      case "workflow_stage_completed":
        return "stage completed " + nameNode(target.stageId, target.stageName) + " (" + event.delivery + ")";
      case "workflow_lifecycle": {
        var previous = target.previousStatus ? target.previousStatus + " \u2192 " : "";
        var action = target.kind === "run" && target.action ? " [" + target.action + " requested]" : "";
        var name = target.kind === "stage" ? nameNode(target.stageId, target.stageName)
          : target.kind === "tool" ? nameNode(target.toolNodeId, target.toolName)
          : target.promptId || target.runId;
        var replay = event.delivery === "replay" ? " (replay)" : "";
        var error = target.error ? eventError(target.error) : "";
        var failure = error ? ": " + error : "";
        return target.kind + " " + name + ": " + previous + target.status + action + replay + failure;
      }
      case "workflow_activity_changed":
        return (
          "activity changed " + event.root.rootRunId + " \u2192 " +
          event.root.state + "/" + event.root.reason
        );
      case "workflow_heartbeat":
        return "heartbeat " + event.runId + " at " + clockTime(event.scheduledAt);
      default:
        return String(event.type);
    }
  }

  // A short badge per event type; a lifecycle event is labelled by its target's kind.
  var LABELS = {
    workflow_stage_completed: "completed",
    workflow_activity_changed: "activity",
    workflow_heartbeat: "heartbeat",
  };

  /* When an event happened, HH:MM:SS in local time: its occurredAt, or a heartbeat's
     scheduledAt; "" for an event without either. */
  function eventTime(event) {
    var at = typeof event.occurredAt === "number" ? event.occurredAt : event.scheduledAt;
    return typeof at === "number" && isFinite(at) ? clockTime(at) : "";
  }

  /* The latest hook events, newest first, at most `limit` of them; each entry {seq, type,
     label, rootRunId, text, time (HH:MM:SS), timeOwn (false: the time of the event before)}. */
  function EventFeed(limit) {
    this.limit = limit;
    this.entries = [];
    this.received = 0;
    this.dropped = 0;
    this.lastTime = "";
  }

  EventFeed.prototype.push = function (type, event) {
    this.received += 1;
    var entry = {
      seq: this.received,
      type: type,
      label: LABELS[type] || (event.target && event.target.kind) || type,
      rootRunId: event.rootRunId || (event.root && event.root.rootRunId) || "",
      text: describeEvent(event),
      time: eventTime(event),
      timeOwn: true,
    };
    // An activity change carries no time of its own: it is the consequence of the fact just
    // before it (the tracker publishes both at once), so it reads that fact's time; the first
    // event of a page without one reads the time it arrived.
    if (entry.time) {
      this.lastTime = entry.time;
    } else {
      entry.time = this.lastTime || clockTime(Date.now());
      entry.timeOwn = false;
    }
    this.entries.unshift(entry);
    if (this.entries.length > this.limit) this.entries.length = this.limit;
    return entry;
  };

  /* The server dropped `count` events for this client (its buffer overflowed); or, from a
     fleet server, events may be missing for `reason` (count null when unknown). */
  EventFeed.prototype.drop = function (count, reason) {
    var known = typeof count === "number";
    if (known) this.dropped += count;
    this.received += 1;
    var entry = {
      seq: this.received,
      type: "dropped",
      label: "dropped",
      rootRunId: "",
      time: "",
      timeOwn: false,
      text: reason
        ? (known ? count + " " : "") + "events may be missing (" + reason + ")"
        : count + " event" + (count === 1 ? "" : "s") + " dropped (this page fell behind)",
    };
    this.entries.unshift(entry);
    if (this.entries.length > this.limit) this.entries.length = this.limit;
    return entry;
  };

  var api = {
    ActivityView: ActivityView,
    EventFeed: EventFeed,
    aggregate: aggregate,
    describeEvent: describeEvent,
    eventTime: eventTime,
    formatCursor: formatCursor,
  };
  if (typeof module === "object" && module.exports) {
    module.exports = api;
  } else {
    global.WorkflowHubFold = api;
  }
})(typeof globalThis !== "undefined" ? globalThis : this);
