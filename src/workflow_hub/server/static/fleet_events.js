/*
 * The fleet page's hook feed: every source's hook events over one EventSource (v1/events),
 * newest first, at most FEED_LIMIT of them, each labelled with its source and the clock time it
 * happened (fold.js' eventTime, as the single hub's feed). The stream is open while the feed's
 * section is, or while a source is opened in place: the opened source's page gets its own
 * events from this stream (WorkflowHubFleetEvents.follow, called by fleet.js), so the page
 * still holds one stream for the fleet and one for the hooks, whatever the number of sources
 * opened. A fleet page left alone holds no hook stream. Wherever events may be missing
 * (trimmed, dropped by a mirror, a new instance of a source, Redis unreachable, a reconnect the
 * server could not resume) the server sends `dropped`, shown as its own line (and in the
 * opened page of the source it names, or of every opened source when it names none): the feed
 * never skips silently. The browser reconnects by itself with Last-Event-ID; after an error
 * that closed the stream the page reconnects with `since=<last event id>`.
 */
(function () {
  "use strict";

  var Fold = window.WorkflowHubFold;
  var Token = window.WorkflowHubToken;
  var FEED_LIMIT = 100;
  var RETRY_MS = 2000;
  var EVENT_TYPES = [
    "workflow_lifecycle",
    "workflow_stage_completed",
    "workflow_activity_changed",
    "workflow_heartbeat",
  ];
  var LABELS = {
    workflow_lifecycle: "lifecycle",
    workflow_stage_completed: "completed",
    workflow_activity_changed: "activity",
    workflow_heartbeat: "heartbeat",
  };
  var section = document.querySelector('[data-testid="fleet-feed-section"]');
  var list = document.querySelector('[data-testid="fleet-feed"]');
  var status = document.querySelector('[data-testid="fleet-feed-status"]');
  if (!section || !list || !status) return;

  var followers = new Map(); // source -> function(message): an opened source's page
  var received = 0;
  var lastId = null;
  var source = null;
  var drawTimer = null;
  var pending = [];

  function streamUrl() {
    var url = new URL("v1/events", document.baseURI);
    var current = Token.get();
    if (current) url.searchParams.set("token", current); // EventSource cannot send headers
    if (lastId) url.searchParams.set("since", lastId);
    return url.toString();
  }

  function entry(kind, origin, label, text, time) {
    var item = document.createElement("li");
    item.className = "event";
    item.dataset.type = kind;
    item.dataset.source = origin || "";
    if (time) {
      var clock = document.createElement("time");
      clock.className = "clock";
      clock.dataset.testid = "event-time";
      clock.textContent = time;
      item.appendChild(clock);
      item.appendChild(document.createTextNode(" "));
    }
    var name = document.createElement("span");
    name.className = "badge";
    name.textContent = origin || "fleet";
    var badge = document.createElement("span");
    badge.className = "badge event-" + label;
    badge.textContent = label;
    item.appendChild(name);
    item.appendChild(document.createTextNode(" "));
    item.appendChild(badge);
    item.appendChild(document.createTextNode(" " + text));
    return item;
  }

  function add(item) {
    received += 1;
    pending.push(item);
    if (drawTimer !== null) return;
    drawTimer = window.setTimeout(draw, 100); // many events: one redraw
  }

  function draw() {
    drawTimer = null;
    for (var index = 0; index < pending.length; index += 1) {
      list.insertBefore(pending[index], list.firstChild);
    }
    pending = [];
    while (list.children.length > FEED_LIMIT) list.removeChild(list.lastChild);
    status.textContent =
      "The latest " + list.children.length + " of " + received + " (at most " + FEED_LIMIT + ").";
  }

  function describe(event) {
    return Fold && Fold.describeEvent ? Fold.describeEvent(event) : String(event.type);
  }

  var retryTimer = null;

  function disconnect() {
    window.clearTimeout(retryTimer);
    if (source) source.close();
    source = null;
    section.dataset.stream = "closed";
  }

  function connect() {
    disconnect();
    var stream = new window.EventSource(streamUrl());
    source = stream;
    stream.onopen = function () {
      if (source !== stream) return;
      section.dataset.stream = "open"; // events from here on reach the feed and opened sources
      if (!received) status.textContent = "No hook events yet.";
    };
    EVENT_TYPES.forEach(function (type) {
      stream.addEventListener(type, function (message) {
        if (source !== stream) return;
        lastId = message.lastEventId || lastId;
        var data = JSON.parse(message.data);
        var event = data.event;
        var label = LABELS[type] || type;
        if (type === "workflow_lifecycle" && event.target && event.target.kind) {
          label = event.target.kind;
        }
        var time = Fold && Fold.eventTime ? Fold.eventTime(event) : "";
        add(entry(type, data.source, label, describe(event), time));
        var follower = followers.get(data.source);
        if (follower) follower({ type: "event", kind: type, event: event });
      });
    });
    stream.addEventListener("dropped", function (message) {
      if (source !== stream) return;
      lastId = message.lastEventId || lastId;
      var data = JSON.parse(message.data);
      var count = data.count === null || data.count === undefined ? "" : data.count + " ";
      var text = count + "events may be missing: " + (data.reason || "dropped");
      if (data.detail) text += " (" + data.detail + ")";
      add(entry("dropped", data.source, "dropped", text, ""));
      followers.forEach(function (follower, name) {
        if (!data.source || data.source === name) {
          follower({ type: "dropped", count: data.count, reason: data.reason || "dropped" });
        }
      });
    });
    stream.onerror = function () {
      if (source !== stream) return;
      section.dataset.stream = "reconnecting";
      if (stream.readyState === window.EventSource.CLOSED) {
        status.textContent = "Hook events: reconnecting…";
        retryTimer = window.setTimeout(connect, RETRY_MS);
      }
    };
  }

  function wanted() {
    return section.open || followers.size > 0;
  }

  section.addEventListener("toggle", function () {
    if (section.open) {
      if (!received) status.textContent = "Hook events appear once connected.";
      if (!source) connect(); // since=<last id>: what came while it was closed, or `dropped`
    } else if (!wanted()) {
      disconnect();
    }
  });

  // An opened source's page: its hook events from now on, over this page's one hook stream.
  window.WorkflowHubFleetEvents = {
    follow: function (name, post) {
      followers.set(name, post);
      if (!source) connect();
    },
    unfollow: function (name) {
      followers.delete(name);
      if (!wanted()) disconnect();
    },
  };
})();
