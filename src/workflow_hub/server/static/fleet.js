/*
 * The fleet's page: a status line for the whole fleet and a table of its sources (name order,
 * filterable): status, roots, working, waiting, last seen and whether a source stopped without a
 * word (crashed?) or declared itself unavailable (the wording: fleet_liveness.js).
 *
 * One stream, whatever the number of sources or of sources opened: /v1/fleet, with EventSource.
 * It starts with a picture of the fleet (a `fleet` event), then a `source` event whenever a
 * source's description changes, `retired` when one leaves and `readable` when Redis stops or
 * starts answering. A source's name opens its roots in place: the single hub's dashboard of that
 * source (served under sources/<name>/?feed=parent) in a frame under its row, which opens no
 * stream of its own: this page selects the source on its one stream (reconnecting with
 * `source=<name>&snapshot=<name>&since=<last id>`) and posts the source's frames to the frame.
 *
 * Reconnects resume with `since=<last event id>`: the server replays what was missed or sends
 * a fresh picture. While the server cannot be reached, every source shows `unknown` (never its
 * last state); after GONE_AFTER_MS (10 s, `?gone_after=SECONDS`) the page says the server went away and tries again every
 * GONE_RETRY_MS. The token is shared with the frames through sessionStorage (token.js).
 */
(function () {
  "use strict";

  var Token = window.WorkflowHubToken;
  var Liveness = window.WorkflowHubLiveness;
  var MIN_RETRY_MS = 250;
  var MAX_RETRY_MS = 4000;
  var GONE_AFTER_MS = goneAfterMs(); // 10 s; `?gone_after=SECONDS` in the address changes it
  var GONE_RETRY_MS = 10000;
  var FRAME_KINDS = ["snapshot", "changed", "removed"];
  var status = document.querySelector('[data-testid="fleet-status"]');
  var list = document.querySelector('[data-testid="sources"]');
  var empty = document.querySelector('[data-testid="sources-empty"]');
  var form = document.querySelector('[data-testid="token-form"]');
  var input = document.getElementById("token-input");
  var body = list.querySelector("tbody");
  var filter = document.getElementById("filter");

  var rows = new Map(); // source -> {row, info, details, frame, ready}
  var stream = null;
  var lastEventId = null;
  var fresh = new Set(); // opened sources the next connection asks a snapshot of
  var readable = true;
  var connection = "connecting"; // live | reconnecting | gone | needs-token
  var retryTimer = null;
  var retryDelay = MIN_RETRY_MS;
  var downSince = null;
  var drawTimer = null;

  function goneAfterMs() {
    var given = new URL(window.location.href).searchParams.get("gone_after");
    var seconds = given === null ? NaN : Number(given);
    return isFinite(seconds) && seconds > 0 ? seconds * 1000 : 10000;
  }

  Token.takeFromAddress();

  // --- the table -------------------------------------------------------------------------

  function cell(row, className) {
    var node = document.createElement("td");
    if (className) node.className = className;
    row.appendChild(node);
    return node;
  }

  function newEntry(info) {
    var row = document.createElement("tr");
    row.dataset.source = info.source;
    var name = cell(row, "c-name");
    var button = document.createElement("button");
    button.type = "button";
    button.className = "open";
    button.textContent = info.source;
    button.setAttribute("aria-expanded", "false");
    name.appendChild(button);
    ["c-state", "num narrow-hidden c-roots", "num narrow-hidden c-working", "num c-blocked",
      "wide c-seen", "c-note"].forEach(
      function (c) { cell(row, c); }
    );
    var entry = { row: row, info: info, details: null, frame: null, ready: false };
    button.addEventListener("click", function () {
      if (entry.details) close(info.source, entry);
      else open(info.source, entry);
      button.setAttribute("aria-expanded", entry.details ? "true" : "false");
    });
    return entry;
  }

  // A source's roots, in place: its single-hub page under its row, fed by this page's stream.
  function open(source, entry) {
    var details = document.createElement("tr");
    details.className = "details";
    details.dataset.details = source;
    var holder = document.createElement("td");
    holder.colSpan = 7;
    var frame = document.createElement("iframe");
    frame.title = "source " + source;
    frame.dataset.source = source;
    frame.src = entry.info.path + "?feed=parent";
    holder.appendChild(frame);
    details.appendChild(holder);
    entry.row.after(details);
    entry.details = details;
    entry.frame = frame;
    entry.ready = false; // selected once the frame says it listens (a "ready" message)
  }

  function close(source, entry) {
    if (entry.details) entry.details.remove();
    var selected = entry.ready;
    entry.details = null;
    entry.frame = null;
    entry.ready = false;
    fresh.delete(source);
    if (selected) reconnect(); // no more of its frames
  }

  function post(entry, message) {
    if (entry.frame && entry.ready && entry.frame.contentWindow) {
      entry.frame.contentWindow.postMessage(message, window.location.origin);
    }
  }

  window.addEventListener("message", function (message) {
    if (message.origin !== window.location.origin) return;
    rows.forEach(function (entry, source) {
      if (!entry.frame || message.source !== entry.frame.contentWindow) return;
      var data = message.data || {};
      if (data.type === "ready") {
        entry.ready = true;
        fresh.add(source);
        post(entry, { type: "connection", state: connection === "live" ? "connecting" : connection });
        reconnect(); // select it: its snapshot, then its frames
      } else if (data.type === "height" && data.height > 0) {
        entry.frame.style.height = Math.min(Math.ceil(data.height) + 2, 4000) + "px";
      }
    });
  });

  function ago(seconds) {
    if (seconds === null || seconds === undefined) return "—";
    var age = Math.max(0, Date.now() / 1000 - seconds);
    if (age < 60) return Math.round(age) + "s ago";
    if (age < 3600) return Math.round(age / 60) + "m ago";
    return Math.round(age / 3600) + "h ago";
  }

  function words(value) {
    return String(value).replace(/_/g, " ");
  }

  function note(info) {
    if (connection !== "live") return "server unreachable";
    var said = Liveness.livenessNote(info); // crashed? or declared unavailable (stopped at …)
    if (said !== null) return said;
    if (info.availability === null) return "not seen yet";
    if (info.availability !== "ready") return words(info.availability);
    return info.attention ? "needs attention" : "";
  }

  // What a row shows: the source's last description while the stream is up; `unknown` while
  // the server cannot be reached (the page cannot know), never the last state.
  function shownState(info) {
    return connection === "live" ? info.state : "unknown";
  }

  function drawRow(entry) {
    var info = entry.info;
    var row = entry.row;
    var state = shownState(info);
    row.dataset.state = state;
    row.dataset.availability = connection === "live" ? info.availability || "unknown" : "unknown";
    row.dataset.stale = info.stale ? "true" : "false";
    row.querySelector(".c-state").textContent = state;
    row.querySelector(".c-roots").textContent = info.roots;
    row.querySelector(".c-working").textContent = info.working;
    row.querySelector(".c-blocked").textContent = info.blocked;
    // A source that refreshes is seen now; one that stopped, since its last refresh.
    row.querySelector(".c-seen").textContent =
      info.stale || info.last_seen === null ? ago(info.last_seen) : "now";
    row.querySelector(".c-note").textContent = note(info);
  }

  function upsert(info) {
    var entry = rows.get(info.source);
    if (!entry) {
      entry = newEntry(info);
      rows.set(info.source, entry);
      var next = null;
      rows.forEach(function (other, name) {
        if (name > info.source && (!next || name < next.row.dataset.source)) next = other;
      });
      body.insertBefore(entry.row, next ? next.row : null);
    } else {
      entry.info = info;
    }
    drawRow(entry);
    return entry;
  }

  function retire(source) {
    var entry = rows.get(source);
    if (!entry) return;
    // Retired: it leaves the table (and its open page).
    if (entry.details) entry.details.remove();
    entry.row.remove();
    rows.delete(source);
    fresh.delete(source);
  }

  function picture(fleet) {
    var seen = new Set();
    fleet.sources.forEach(function (info) {
      seen.add(info.source);
      upsert(info);
    });
    Array.from(rows.keys()).forEach(function (name) {
      if (!seen.has(name)) retire(name);
    });
    readable = fleet.readable !== false;
  }

  function applyFilter() {
    var needle = filter.value.trim().toLowerCase();
    rows.forEach(function (entry, name) {
      var text = (name + " " + entry.row.dataset.state + " " +
        entry.row.querySelector(".c-note").textContent).toLowerCase();
      var hidden = needle !== "" && text.indexOf(needle) < 0;
      entry.row.hidden = hidden;
      if (entry.details) entry.details.hidden = hidden;
    });
  }

  filter.addEventListener("input", applyFilter);

  function fleetState(counts, count) {
    // One scheduler that cannot be seen means the fleet cannot be called idle.
    if (!readable || connection !== "live") return "unknown";
    if (counts.working) return "working";
    if (counts.blocked) return "blocked";
    if (!count || counts.unknown) return "unknown";
    return "idle";
  }

  function drawStatus() {
    var counts = {};
    rows.forEach(function (entry) {
      var state = entry.row.dataset.state;
      counts[state] = (counts[state] || 0) + 1;
    });
    var parts = ["working", "blocked", "unknown", "idle"].filter(function (state) {
      return counts[state];
    }).map(function (state) { return counts[state] + " " + state; });
    var state = fleetState(counts, rows.size);
    var text = "fleet " + state + ": " + rows.size + " source" +
      (rows.size === 1 ? "" : "s") + (parts.length ? " (" + parts.join(", ") + ")" : "");
    if (connection === "reconnecting") text += " · reconnecting to the server";
    else if (connection === "gone") text += " · the server went away; trying again every " +
      Math.round(GONE_RETRY_MS / 1000) + " s";
    else if (!readable) text += " · Redis cannot be read";
    status.dataset.state = connection !== "live" ? connection : readable ? "live" : "reconnecting";
    status.dataset.fleet = state;
    status.textContent = text;
    empty.hidden = rows.size > 0;
    list.hidden = rows.size === 0;
  }

  // A burst of events (a picture, a busy fleet) is drawn at most every 50 ms.
  function scheduleDraw() {
    if (drawTimer !== null) return;
    drawTimer = window.setTimeout(function () {
      drawTimer = null;
      applyFilter();
      drawStatus();
    }, 50);
  }

  function redrawAll() {
    rows.forEach(drawRow);
    scheduleDraw();
  }

  // The ages of sources that stopped refreshing move on without any event.
  window.setInterval(function () {
    rows.forEach(function (entry) {
      if (entry.info.stale) drawRow(entry);
    });
  }, 5000);

  // --- the stream ------------------------------------------------------------------------

  function setConnection(state) {
    if (state === connection) return;
    connection = state;
    rows.forEach(function (entry) { post(entry, { type: "connection", state: state }); });
    redrawAll();
  }

  function streamUrl() {
    var url = new URL("v1/fleet", document.baseURI);
    var current = Token.get();
    if (current) url.searchParams.set("token", current); // EventSource cannot send headers
    var names = [];
    rows.forEach(function (entry, name) { if (entry.ready) names.push(name); });
    names.sort().forEach(function (name) { url.searchParams.append("source", name); });
    if (lastEventId) {
      url.searchParams.set("since", lastEventId);
      names.forEach(function (name) {
        if (fresh.has(name)) url.searchParams.append("snapshot", name);
      });
    }
    return url.toString();
  }

  function reconnect() {
    if (connection === "needs-token") return;
    if (stream) connect(); // a new selection: the one stream again, resumed
  }

  function connect() {
    window.clearTimeout(retryTimer);
    if (stream) stream.close();
    var source = new window.EventSource(streamUrl());
    var opened = false;
    stream = source;
    source.onopen = function () {
      if (stream !== source) return;
      opened = true;
      retryDelay = MIN_RETRY_MS;
      downSince = null;
      setConnection("live");
      rows.forEach(function (entry) { post(entry, { type: "connection", state: "live" }); });
    };
    function on(kind, handler) {
      source.addEventListener(kind, function (message) {
        if (stream !== source) return;
        if (message.lastEventId) lastEventId = message.lastEventId;
        handler(JSON.parse(message.data), message);
        scheduleDraw();
      });
    }
    on("fleet", picture);
    on("source", upsert);
    on("retired", function (data) { retire(data.source); });
    on("readable", function (data) {
      readable = data.readable;
    });
    FRAME_KINDS.forEach(function (kind) {
      on(kind, function (data, message) {
        var entry = rows.get(data.source);
        // A newly opened source stays "fresh" (asked with snapshot=) until its snapshot has
        // arrived, not merely until the stream opened: a second source opened right after the
        // first replaces the stream, and the first one's snapshot must be asked for again.
        if (kind === "snapshot") fresh.delete(data.source);
        if (entry) {
          post(entry, { type: "frame", data: JSON.stringify(data.frame), id: message.lastEventId });
        }
      });
    });
    source.onerror = function () {
      if (stream !== source) return;
      // Reconnect ourselves (with `since`) rather than let EventSource retry at its own pace:
      // the same path then handles a dropped stream, a stopped server and a refused token.
      var refused = !opened && source.readyState === window.EventSource.CLOSED;
      source.close();
      stream = null;
      if (refused) lastEventId = null;
      if (downSince === null) downSince = Date.now();
      if (connection !== "gone") {
        setConnection(Date.now() - downSince >= GONE_AFTER_MS ? "gone" : "reconnecting");
      }
      scheduleRetry();
    };
  }

  function scheduleRetry() {
    window.clearTimeout(retryTimer);
    var delay = connection === "gone" ? GONE_RETRY_MS : retryDelay;
    retryDelay = Math.min(retryDelay * 2, MAX_RETRY_MS);
    retryTimer = window.setTimeout(probeThenConnect, delay);
  }

  // A HEAD of the stream first: it tells a refused token (401) from a server that is away.
  function probeThenConnect() {
    var headers = {};
    var current = Token.get();
    if (current) headers.Authorization = "Bearer " + current;
    window.fetch(new URL("v1/fleet", document.baseURI).toString(), {
      method: "HEAD",
      headers: headers,
      cache: "no-store",
    }).then(
      function (response) {
        if (response.status === 401 || response.status === 403) {
          connection = "needs-token";
          status.dataset.state = "needs-token";
          status.textContent = "needs a token";
          form.hidden = false;
          input.focus();
          return;
        }
        connect();
      },
      function () {
        if (downSince === null) downSince = Date.now();
        if (Date.now() - downSince >= GONE_AFTER_MS) setConnection("gone");
        else if (connection !== "gone" && connection !== "connecting") setConnection("reconnecting");
        scheduleRetry();
      }
    );
  }

  form.addEventListener("submit", function (submit) {
    submit.preventDefault();
    if (!input.value) return;
    Token.store(input.value);
    input.value = "";
    form.hidden = true;
    connection = "connecting";
    probeThenConnect();
  });

  probeThenConnect();
})();
