/*
 * The fleet's page: a status line for the whole fleet and a table of its sources (name order,
 * filterable): status, roots, working, waiting, last seen and whether a source crashed (stopped
 * refreshing) or declared itself unavailable. The table is v1/sources, polled: the page holds no
 * stream of its own, whatever the number of sources. A source's name opens its roots in place:
 * the single hub's dashboard of that source (served under sources/<name>/) in a frame under its
 * row, which opens one stream while it is open. The token is shared with the frames through
 * sessionStorage (the same key as the dashboard's).
 */
(function () {
  "use strict";

  var TOKEN_KEY = "workflow-hub.token";
  var POLL_MS = 2000;
  var status = document.querySelector('[data-testid="fleet-status"]');
  var list = document.querySelector('[data-testid="sources"]');
  var empty = document.querySelector('[data-testid="sources-empty"]');
  var form = document.querySelector('[data-testid="token-form"]');
  var input = document.getElementById("token-input");
  var timer = null;

  function token() {
    try {
      return window.sessionStorage.getItem(TOKEN_KEY);
    } catch (error) {
      return null;
    }
  }

  function storeToken(value) {
    try {
      window.sessionStorage.setItem(TOKEN_KEY, value);
    } catch (error) {
      // Without storage the frames cannot share the token; they then ask for it themselves.
    }
  }

  var address = new URL(window.location.href);
  if (address.searchParams.has("token")) {
    storeToken(address.searchParams.get("token"));
    address.searchParams.delete("token");
    window.history.replaceState(window.history.state, "", address.pathname + address.search);
  }

  function setStatus(state, text) {
    status.dataset.state = state;
    status.textContent = text;
  }

  var body = list.querySelector("tbody");
  var filter = document.getElementById("filter");
  var rows = new Map(); // source -> {row, details}

  function cell(row, className) {
    var node = document.createElement("td");
    if (className) node.className = className;
    row.appendChild(node);
    return node;
  }

  function newRow(info) {
    var row = document.createElement("tr");
    row.dataset.source = info.source;
    var name = cell(row, "c-name");
    var button = document.createElement("button");
    button.type = "button";
    button.className = "open";
    button.textContent = info.source;
    button.setAttribute("aria-expanded", "false");
    name.appendChild(button);
    ["c-state", "num c-roots", "num c-working", "num c-blocked", "wide c-seen", "c-note"].forEach(function (c) {
      cell(row, c);
    });
    var entry = { row: row, details: null, path: info.path };
    button.addEventListener("click", function () {
      // The source's roots, in place: its single-hub page opens under its row (one stream
      // while it is open, none otherwise).
      if (entry.details) {
        entry.details.remove();
        entry.details = null;
        button.setAttribute("aria-expanded", "false");
        return;
      }
      var details = document.createElement("tr");
      details.className = "details";
      details.dataset.details = info.source;
      var holder = document.createElement("td");
      holder.colSpan = 7;
      var frame = document.createElement("iframe");
      frame.title = "source " + info.source;
      frame.dataset.source = info.source;
      frame.src = entry.path;
      holder.appendChild(frame);
      details.appendChild(holder);
      row.after(details);
      entry.details = details;
      button.setAttribute("aria-expanded", "true");
    });
    return entry;
  }

  function ago(seconds) {
    if (seconds === null || seconds === undefined) return "—";
    var age = Math.max(0, Date.now() / 1000 - seconds);
    if (age < 60) return Math.round(age) + "s ago";
    if (age < 3600) return Math.round(age / 60) + "m ago";
    return Math.round(age / 3600) + "h ago";
  }

  function note(info) {
    if (info.stale) return "stopped refreshing (crashed?)";
    if (info.availability === "unavailable") return "declared unavailable";
    if (info.availability === null) return "not seen yet";
    if (info.availability !== "ready") return words(info.availability);
    return info.attention ? "needs attention" : "";
  }

  function fleetState(sources, readable) {
    // One scheduler that cannot be seen means the fleet cannot be called idle.
    if (!readable) return "unknown";
    var states = sources.map(function (info) { return info.state; });
    if (states.indexOf("working") >= 0) return "working";
    if (states.indexOf("blocked") >= 0) return "blocked";
    if (!states.length || states.indexOf("unknown") >= 0) return "unknown";
    return "idle";
  }

  function show(sources, readable) {
    var seen = new Set();
    var counts = {};
    sources.forEach(function (info) {
      seen.add(info.source);
      counts[info.state] = (counts[info.state] || 0) + 1;
      var entry = rows.get(info.source);
      if (!entry) {
        entry = newRow(info);
        rows.set(info.source, entry);
        var next = null;
        rows.forEach(function (other, name) {
          if (name > info.source && (!next || name < next.row.dataset.source)) next = other;
        });
        body.insertBefore(entry.row, next ? next.row : null);
      }
      var row = entry.row;
      row.dataset.state = info.state;
      row.dataset.availability = info.availability || "unknown";
      row.dataset.stale = info.stale ? "true" : "false";
      row.querySelector(".c-state").textContent = info.state;
      row.querySelector(".c-roots").textContent = info.roots;
      row.querySelector(".c-working").textContent = info.working;
      row.querySelector(".c-blocked").textContent = info.blocked;
      row.querySelector(".c-seen").textContent = ago(info.last_seen);
      row.querySelector(".c-note").textContent = note(info);
    });
    rows.forEach(function (entry, name) {
      if (!seen.has(name)) {
        // Retired: it leaves the table (and its open page).
        if (entry.details) entry.details.remove();
        entry.row.remove();
        rows.delete(name);
      }
    });
    applyFilter();
    var parts = ["working", "blocked", "unknown", "idle"].filter(function (state) {
      return counts[state];
    }).map(function (state) { return counts[state] + " " + state; });
    var state = fleetState(sources, readable);
    var text = "fleet " + state + ": " + sources.length + " source" +
      (sources.length === 1 ? "" : "s") + (parts.length ? " (" + parts.join(", ") + ")" : "");
    if (!readable) text += " · Redis cannot be read";
    setStatus(readable ? "live" : "reconnecting", text);
    status.dataset.fleet = state;
    empty.hidden = rows.size > 0;
    list.hidden = rows.size === 0;
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

  function words(value) {
    return String(value).replace(/_/g, " ");
  }

  function poll() {
    window.clearTimeout(timer);
    var headers = {};
    var current = token();
    if (current) headers.Authorization = "Bearer " + current;
    window.fetch(new URL("v1/sources", document.baseURI).toString(), {
      headers: headers,
      cache: "no-store",
    }).then(
      function (response) {
        if (response.status === 401 || response.status === 403) {
          setStatus("needs-token", "needs a token");
          form.hidden = false;
          input.focus();
          return null;
        }
        return response.json().then(function (answer) {
          show(answer.sources, answer.readable !== false);
          timer = window.setTimeout(poll, POLL_MS);
        });
      },
      function () {
        setStatus("reconnecting", "reconnecting");
        timer = window.setTimeout(poll, POLL_MS);
      }
    );
  }

  form.addEventListener("submit", function (submit) {
    submit.preventDefault();
    if (!input.value) return;
    storeToken(input.value);
    input.value = "";
    form.hidden = true;
    rows.forEach(function (entry) {
      if (!entry.details) return;
      var frame = entry.details.querySelector("iframe");
      frame.src = frame.src; // the frames take the token from sessionStorage when they load
    });
    poll();
  });

  poll();
})();
