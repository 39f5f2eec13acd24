/*
 * The fleet's page: what needs a person first, then a table of the sources.
 *
 * The headline says how many roots in how many sources need a person and why ("3 roots in 2
 * sources need attention: 2 waiting for input, 1 failed at deploy", views.js' words) and which
 * sources crashed ("3 sources crashed: a, b, c"); the status line after it says the state of the
 * whole fleet. The table puts the sources whose roots need a person first, then those that
 * crashed, then those whose state is unknown, then the rest by name; its states are coloured
 * badges with a symbol and a word, its notes say why (the liveness wording: fleet_liveness.js).
 * The filters are the single hub's (controls.js, views.js): a source is shown when its name,
 * status or note holds the search, or when one of its roots matches the view (state, reason,
 * labels, search); "needs attention only" keeps the sources that need a person or crashed. The
 * view lives in the address fragment (`#label=team:infra&attention=1`): a link reproduces it,
 * and an opened source's page opens on the same view of its roots.
 *
 * One stream, whatever the number of sources or of sources opened: /v1/fleet?frames=all, with
 * EventSource. It starts with a picture of the fleet (a `fleet` event, then every source's
 * snapshot), then a `source` event whenever a source's description changes, every source's
 * frames (folded here with fold.js, so that the page knows each source's roots), `retired`
 * when one leaves and `readable` when Redis stops or starts answering. A source's name opens
 * its roots in place: the single hub's dashboard of that source (served under
 * sources/<name>/?feed=parent) in a frame under its row, which opens no stream of its own: this
 * page asks a fresh snapshot of it (reconnecting with `snapshot=<name>&since=<last id>`), posts
 * its frames, its name, whether it is live (a dead source's page says "stopped at HH:MM:SS",
 * never "live") and its hook events (fleet_events.js) to the frame.
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
  var Fold = window.WorkflowHubFold;
  var Views = window.WorkflowHubViews;
  var MIN_RETRY_MS = 250;
  var MAX_RETRY_MS = 4000;
  var GONE_AFTER_MS = goneAfterMs(); // 10 s; `?gone_after=SECONDS` in the address changes it
  var GONE_RETRY_MS = 10000;
  var FRAME_KINDS = ["snapshot", "changed", "removed"];
  var NAMED = 3; // crashed sources named in the headline, the rest counted
  var LABELS_SHOWN = 6; // labels drawn in a source's row, the rest counted
  var NARROW = "(max-width: 40rem)";
  var SYMBOLS = {
    working: "▶", blocked: "■", idle: "○", unknown: "?", failed: "✗", crashed: "✕",
    stopped: "○", attention: "⚠",
  };
  var status = document.querySelector('[data-testid="fleet-status"]');
  var attentionLine = document.querySelector('[data-testid="fleet-attention"]');
  var crashedLine = document.querySelector('[data-testid="fleet-crashed"]');
  var list = document.querySelector('[data-testid="sources"]');
  var empty = document.querySelector('[data-testid="sources-empty"]');
  var shownLine = document.querySelector('[data-testid="fleet-shown"]');
  var form = document.querySelector('[data-testid="token-form"]');
  var input = document.getElementById("token-input");
  var body = list.querySelector("tbody");
  var filters = document.querySelector('[data-testid="fleet-filters"]');
  var filtersBox = document.querySelector('[data-testid="filters-box"]');
  var filtersActive = document.querySelector('[data-role="filters-active"]');
  var shareLink = document.querySelector('[data-testid="fleet-link"]');
  var skip = document.querySelector(".skip");

  var rows = new Map(); // source -> {row, info, details, frame, ready, said}
  var views = new Map(); // source -> its roots, folded from its frames (fold.js)
  var dirty = new Set(); // sources whose roots changed since the last drawing
  var stream = null;
  var lastEventId = null;
  var fresh = new Set(); // followed sources the next connection asks a snapshot of
  var selection = { all: false, names: [] }; // whose frames the stream carries (wantedSelection)
  var MAX_SELECTED = 100; // the server's limit of named sources; past it, frames=all
  var readable = true;
  var connection = "connecting"; // live | reconnecting | gone | needs-token
  var retryTimer = null;
  var retryDelay = MIN_RETRY_MS;
  var downSince = null;
  var drawTimer = null;
  var order = ""; // the table's order, as drawn

  function goneAfterMs() {
    var given = new URL(window.location.href).searchParams.get("gone_after");
    var seconds = given === null ? NaN : Number(given);
    return isFinite(seconds) && seconds > 0 ? seconds * 1000 : 10000;
  }

  Token.takeFromAddress();

  function element(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function plural(count, noun) {
    return count + " " + noun + (count === 1 ? "" : "s");
  }

  // --- what a source needs --------------------------------------------------------------

  function viewOf(source) {
    var view = views.get(source);
    if (!view) {
      view = new Fold.ActivityView();
      views.set(source, view);
    }
    return view;
  }

  function crashed(info) {
    return Boolean(info.stale && !info.declared);
  }

  function dead(info) {
    return Boolean(info.stale || info.declared);
  }

  /*
   * What the page knows of a source's roots: {roots, needs (views.js' headline of them),
   * labels ["key:value", ...] of all its roots, sorted}. Computed again only after a frame of
   * the source (dirty), so that a quiet source costs nothing per drawing.
   */
  function rootsOf(entry, source) {
    if (entry.known && !dirty.has(source)) return entry.known;
    var view = views.get(source);
    var roots = view && view.known() ? view.roots() : [];
    var labels = new Set();
    roots.forEach(function (root) {
      if (!root.labels) return;
      Object.keys(root.labels).forEach(function (key) { labels.add(key + ":" + root.labels[key]); });
    });
    entry.known = {
      roots: roots,
      needs: Views.headline(roots),
      labels: Array.from(labels).sort(),
    };
    return entry.known;
  }

  /* 0: roots that need a person; 1: crashed; 2: state unknown; 3: the rest (by name). */
  function rankOf(entry) {
    var info = entry.info;
    if (connection !== "live") return 3;
    if (crashed(info)) return 1;
    if (dead(info) || info.state === "unknown" || info.availability !== "ready") return 2;
    if (entry.known.needs.count || info.attention || info.blocked) return 0;
    return 3;
  }

  /* Why a source needs a person, in the dashboard's words ("failed at deploy: health check
     timed out (TimeoutError)", "2 waiting for input"); the first failure's error on the row. */
  function needsNote(known) {
    var needs = known.needs;
    var parts = needs.parts.map(function (part) {
      return part.count === 1 ? part.why : part.count + " " + part.why;
    });
    var rest = needs.count - needs.parts.reduce(function (sum, part) { return sum + part.count; }, 0);
    if (rest) parts.push("and " + rest + " more");
    var text = parts.join(", ");
    if (needs.parts.length && needs.parts[0].why.indexOf("failed at ") === 0) {
      for (var i = 0; i < known.roots.length; i += 1) {
        var why = Views.attentionOf(known.roots[i]);
        if (why !== needs.parts[0].why) continue;
        var failure = Views.failuresOf(known.roots[i])[0];
        if (failure && failure.message) {
          text = text.replace(why, why + ": " + failure.message +
            (failure.type ? " (" + failure.type + ")" : ""));
        }
        break;
      }
    }
    return text;
  }

  function note(entry) {
    var info = entry.info;
    if (connection !== "live") return "server unreachable";
    var said = Liveness.livenessNote(info); // crashed? or declared unavailable (stopped at …)
    if (said !== null) return said;
    if (info.availability === null) return "not seen yet";
    if (info.availability !== "ready") {
      // Why it is unknown, when the source (or the fleet's follower) said: C3's detail.
      return Views.words(info.availability) + (info.detail ? ": " + info.detail : "");
    }
    if (entry.known.needs.count) return needsNote(entry.known);
    return info.attention ? "needs attention" : "";
  }

  // What a row's status says: the source's last description while the stream is up; `unknown`
  // while the server cannot be reached (the page cannot know), never the last state.
  function rawState(info) {
    return connection === "live" ? info.state : "unknown";
  }

  /* The badge: "crashed?" for a source that stopped without a word, "stopped" for one that
     declared itself unavailable, "failed" for an idle source whose roots failed (never "idle"
     beside a failure), else its state. */
  function shownState(entry) {
    var info = entry.info;
    if (connection !== "live") return "unknown";
    if (crashed(info)) return "crashed";
    if (info.declared) return "stopped";
    if (info.state === "idle" && entry.known.needs.count) return "failed";
    return info.state;
  }

  var STATE_WORDS = { crashed: "crashed?", stopped: "stopped" };

  function badge(value) {
    var node = element("span", "badge state-" + value);
    var symbol = element("span", "symbol", SYMBOLS[value] || "•");
    symbol.setAttribute("aria-hidden", "true");
    node.appendChild(symbol);
    node.appendChild(document.createTextNode(" " + (STATE_WORDS[value] || Views.words(value))));
    node.dataset.value = value;
    return node;
  }

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
    ["c-state", "num narrow-hidden c-roots", "num narrow-hidden c-working", "num narrow-hidden c-blocked",
      "wide c-seen", "c-note"].forEach(
      function (c) { cell(row, c); }
    );
    row.querySelector(".c-note").appendChild(element("span", "why"));
    var entry = {
      row: row, info: info, details: null, frame: null, ready: false, known: null, said: "",
      labels: "", rank: 3,
    };
    button.addEventListener("click", function () {
      if (entry.details) close(info.source, entry);
      else open(info.source, entry);
      button.setAttribute("aria-expanded", entry.details ? "true" : "false");
    });
    return entry;
  }

  /* The view an opened source's page starts with: the fleet's, less a search that the
     source's own name or status answered. */
  function rootView(entry) {
    var view = Object.assign({}, controls.view, { group: "" });
    if (view.q && sourceText(entry).indexOf(view.q.toLowerCase()) >= 0) view.q = "";
    return view;
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
    frame.src = entry.info.path + "?feed=parent" + Views.formatView(rootView(entry));
    holder.appendChild(frame);
    details.appendChild(holder);
    entry.row.after(details);
    details.hidden = entry.row.hidden;
    entry.details = details;
    entry.frame = frame;
    entry.ready = false; // selected once the frame says it listens (a "ready" message)
    entry.said = "";
  }

  function close(source, entry) {
    if (entry.details) entry.details.remove();
    var selected = entry.ready;
    entry.details = null;
    entry.frame = null;
    entry.ready = false;
    fresh.delete(source);
    if (window.WorkflowHubFleetEvents) window.WorkflowHubFleetEvents.unfollow(source);
    if (selected) reconnect(); // a fresh snapshot for it when it opens again
    scheduleDraw(); // and its frames no longer followed unless it needs a person
  }

  function post(entry, message) {
    if (entry.frame && entry.ready && entry.frame.contentWindow) {
      entry.frame.contentWindow.postMessage(message, window.location.origin);
    }
  }

  // The opened page's heading and liveness: its name, and the note of a dead source (then its
  // page says it stopped, never "live").
  function tellSource(entry) {
    if (!entry.ready) return;
    var said = dead(entry.info) ? Liveness.livenessNote(entry.info) : null;
    var key = JSON.stringify([entry.info.source, said]);
    if (key === entry.said) return;
    entry.said = key;
    post(entry, { type: "source", name: entry.info.source, stopped: said });
  }

  window.addEventListener("message", function (message) {
    if (message.origin !== window.location.origin) return;
    rows.forEach(function (entry, source) {
      if (!entry.frame || message.source !== entry.frame.contentWindow) return;
      var data = message.data || {};
      if (data.type === "ready") {
        entry.ready = true;
        fresh.add(source);
        tellSource(entry);
        post(entry, { type: "connection", state: connection === "live" ? "connecting" : connection });
        if (window.WorkflowHubFleetEvents) {
          window.WorkflowHubFleetEvents.follow(source, function (event) { post(entry, event); });
        }
        reconnect(); // its snapshot, then its frames
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

  // Whose it is: the labels of the source's roots (where the page follows them), each a link
  // that narrows the fleet to the sources whose roots carry it.
  function drawLabels(entry, labels) {
    var key = labels.join("\n");
    if (key === entry.labels) return;
    entry.labels = key;
    var holder = entry.row.querySelector(".c-note");
    var old = holder.querySelector("ul.labels");
    if (old) old.remove();
    if (!labels.length) return;
    var items = element("ul", "labels");
    items.setAttribute("aria-label", "labels");
    labels.slice(0, LABELS_SHOWN).forEach(function (label) {
      var at = label.indexOf(":");
      var link = element("a", "label", label.slice(0, at) + ": " + label.slice(at + 1));
      link.href = Views.formatView({ labels: [label] });
      link.dataset.label = label;
      link.title = "Show only sources with roots labelled " + label;
      var item = element("li");
      item.appendChild(link);
      items.appendChild(item);
    });
    if (labels.length > LABELS_SHOWN) {
      items.appendChild(element("li", "", "+" + (labels.length - LABELS_SHOWN)));
    }
    holder.appendChild(items);
  }

  function drawRow(entry) {
    var info = entry.info;
    var row = entry.row;
    var known = rootsOf(entry, info.source);
    var state = rawState(info);
    var shown = shownState(entry);
    entry.rank = rankOf(entry);
    row.dataset.state = state;
    row.dataset.shown = shown;
    row.dataset.rank = String(entry.rank);
    row.dataset.availability = connection === "live" ? info.availability || "unknown" : "unknown";
    row.dataset.stale = info.stale ? "true" : "false";
    row.dataset.needs = String(connection === "live" ? known.needs.count : 0);
    var stateCell = row.querySelector(".c-state");
    if (stateCell.dataset.value !== shown) {
      stateCell.dataset.value = shown;
      stateCell.replaceChildren(badge(shown));
    }
    row.querySelector(".c-roots").textContent = info.roots;
    row.querySelector(".c-working").textContent = info.working;
    row.querySelector(".c-blocked").textContent = info.blocked;
    // A source that refreshes is seen now; one that stopped, since its last refresh.
    row.querySelector(".c-seen").textContent =
      info.stale || info.last_seen === null ? ago(info.last_seen) : "now";
    row.querySelector(".c-note .why").textContent = note(entry);
    drawLabels(entry, known.labels);
    tellSource(entry);
  }

  function upsert(info) {
    var entry = rows.get(info.source);
    if (!entry) {
      entry = newEntry(info);
      rows.set(info.source, entry);
      body.appendChild(entry.row); // placed by the next drawing (sortRows)
      order = "";
    } else {
      entry.info = info;
    }
    dirty.add(info.source); // its row is drawn again
    return entry;
  }

  function retire(source) {
    var entry = rows.get(source);
    views.delete(source);
    dirty.delete(source);
    if (!entry) return;
    // Retired: it leaves the table (and its open page).
    if (entry.details) entry.details.remove();
    if (window.WorkflowHubFleetEvents) window.WorkflowHubFleetEvents.unfollow(source);
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
    Array.from(views.keys()).forEach(function (name) {
      if (!seen.has(name)) views.delete(name);
    });
    readable = fleet.readable !== false;
  }

  /* Sources that need a person first, then crashed, then unknown, then the rest; by name
     within each. The rows move only when the order changed. */
  function sortRows() {
    var entries = Array.from(rows.entries()).sort(function (a, b) {
      return a[1].rank - b[1].rank || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);
    });
    var key = entries.map(function (pair) { return pair[1].rank + " " + pair[0]; }).join("\n");
    if (key === order) return;
    order = key;
    entries.forEach(function (pair) {
      var entry = pair[1];
      body.appendChild(entry.row);
      if (entry.details) body.appendChild(entry.details);
    });
  }

  // --- the view (controls.js and views.js, as the single hub's page) -----------------------

  function sourceText(entry) {
    return (entry.info.source + " " + entry.row.dataset.state + " " +
      entry.row.querySelector(".c-state").textContent + " " +
      entry.row.querySelector(".c-note .why").textContent).toLowerCase();
  }

  function shows(entry, view) {
    var attention = view.attention || view.group === "attention";
    if (attention && entry.rank > 1) return false;
    var needle = view.q ? view.q.toLowerCase() : "";
    var named = needle !== "" && sourceText(entry).indexOf(needle) >= 0;
    var rootsView = {
      group: "", state: view.state, reason: view.reason, attention: false,
      labels: view.labels || [], q: named ? "" : view.q,
    };
    if (Views.isEmpty(rootsView)) return true;
    return Views.select(entry.known.roots, rootsView).roots.length > 0;
  }

  function applyFilter() {
    var view = controls.view;
    var shown = 0;
    rows.forEach(function (entry) {
      var hidden = !shows(entry, view);
      entry.row.hidden = hidden;
      if (entry.details) entry.details.hidden = hidden;
      if (!hidden) shown += 1;
    });
    var described = Views.describeView(view);
    filtersActive.textContent = described ? ": " + described : "";
    shownLine.hidden = rows.size === 0;
    shownLine.textContent = (described
      ? "Showing " + shown + " of " + plural(rows.size, "source") + ": " + described
      : "Showing all " + plural(rows.size, "source")) +
      ". Needing attention first, then crashed, then the rest by name.";
    shareLink.href = window.location.pathname + window.location.search + (Views.formatView(view) || "#");
  }

  function onView() {
    applyFilter();
    followSelection(); // a filter of roots: every source's frames
    // An opened source's page follows the view of the fleet.
    rows.forEach(function (entry) {
      if (!entry.frame || !entry.frame.contentWindow) return;
      try {
        var fragment = Views.formatView(rootView(entry));
        if (entry.frame.contentWindow.location.hash !== fragment) {
          entry.frame.contentWindow.location.hash = fragment;
        }
      } catch (error) {
        // not loaded yet: it opens with the view of the moment it was opened
      }
    });
  }

  var controls = new window.WorkflowHubControls.Controls(filters, onView);
  // A narrow screen (a phone) opens on the sources: the filters fold into one line, which
  // says the view in force.
  if (window.matchMedia && window.matchMedia(NARROW).matches) filtersBox.open = false;

  // A label in a row narrows the fleet to the sources whose roots carry it too.
  body.addEventListener("click", function (click) {
    var link = click.target.closest && click.target.closest("a.label");
    if (!link || click.ctrlKey || click.metaKey || click.shiftKey || click.button !== 0) return;
    click.preventDefault();
    controls.addLabel(link.dataset.label);
  });

  // The skip link lands on the table, without touching the fragment (which holds the view).
  skip.addEventListener("click", function (click) {
    click.preventDefault();
    list.focus();
  });

  // --- the headline ------------------------------------------------------------------------

  function fleetState(counts, count) {
    // One scheduler that cannot be seen means the fleet cannot be called idle.
    if (!readable || connection !== "live") return "unknown";
    if (counts.working) return "working";
    if (counts.blocked) return "blocked";
    if (!count || counts.unknown) return "unknown";
    return "idle";
  }

  /* "3 roots in 2 sources need attention: 2 waiting for input, 1 failed at deploy": the
     single hub's headline (views.js) over the roots of every live source. */
  function drawAttention() {
    var roots = [];
    var sources = 0;
    rows.forEach(function (entry) {
      if (entry.rank !== 0) return;
      sources += 1;
      roots = roots.concat(entry.known.roots);
    });
    var needs = Views.headline(roots);
    var text = "";
    if (needs.count) {
      text = needs.text.replace(
        /^\d+ needs? attention/,
        plural(needs.count, "root") + " in " + plural(sources, "source") +
          (needs.count === 1 ? " needs" : " need") + " attention"
      );
    } else if (sources) {
      text = plural(sources, "source") + (sources === 1 ? " needs" : " need") + " attention";
    }
    attentionLine.hidden = !text;
    attentionLine.dataset.sources = String(sources);
    attentionLine.dataset.roots = String(needs.count);
    attentionLine.replaceChildren(symbolOf("attention"), document.createTextNode(" " + text));
    return sources;
  }

  function symbolOf(value) {
    var symbol = element("span", "symbol", SYMBOLS[value]);
    symbol.setAttribute("aria-hidden", "true");
    return symbol;
  }

  /* "3 sources crashed: a, b, c" (no refresh and no goodbye; each row says since when), and
     the sources that stopped with a goodbye after it. */
  function drawCrashed() {
    var gone = [];
    var stopped = 0;
    rows.forEach(function (entry, name) {
      if (connection !== "live") return;
      if (crashed(entry.info)) gone.push(name);
      else if (entry.info.declared) stopped += 1;
    });
    gone.sort();
    var parts = [];
    if (gone.length) {
      var named = gone.slice(0, NAMED).join(", ");
      if (gone.length > NAMED) named += " and " + (gone.length - NAMED) + " more";
      parts.push(plural(gone.length, "source") + " crashed: " + named);
    }
    if (stopped) parts.push(plural(stopped, "source") + " stopped (declared unavailable)");
    crashedLine.hidden = !parts.length;
    crashedLine.dataset.crashed = String(gone.length);
    crashedLine.replaceChildren(symbolOf("crashed"), document.createTextNode(" " + parts.join(" · ")));
    return gone.length;
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
    var sources = drawAttention();
    var gone = drawCrashed();
    document.title = (sources + gone ? "⚠ " + (sources + gone) + " · " : "") + "fleet " + state +
      " · workflow-hub";
    empty.hidden = rows.size > 0;
    list.hidden = rows.size === 0;
  }

  // A burst of events (a picture, a busy fleet) is drawn at most every 50 ms.
  function scheduleDraw() {
    if (drawTimer !== null) return;
    drawTimer = window.setTimeout(draw, 50);
  }

  function draw() {
    drawTimer = null;
    dirty.forEach(function (source) {
      var entry = rows.get(source);
      if (entry) drawRow(entry);
    });
    dirty.clear();
    sortRows();
    applyFilter();
    drawStatus();
    followSelection();
  }

  function redrawAll() {
    rows.forEach(function (entry, source) { dirty.add(source); });
    scheduleDraw();
  }

  // The ages of sources that stopped refreshing move on without any event.
  window.setInterval(function () {
    rows.forEach(function (entry) {
      if (entry.info.stale) {
        entry.row.querySelector(".c-seen").textContent = ago(entry.info.last_seen);
      }
    });
  }, 5000);

  // --- the stream ------------------------------------------------------------------------

  function setConnection(state) {
    if (state === connection) return;
    connection = state;
    rows.forEach(function (entry) { post(entry, { type: "connection", state: state }); });
    redrawAll();
  }

  /*
   * Whose frames the stream carries: the sources a person opened and those whose description
   * says they need one (so the table says why, in the dashboard's words) — not the frames of
   * every scheduler, which a table of 1 000 sources does not show (docs/decisions.md). Every
   * source's (`frames=all`) while the view filters roots (labels, a root state or reason): the
   * page then finds the sources whose roots match, and past MAX_SELECTED named sources.
   */
  function wantedSelection() {
    var view = controls.view;
    if (view.labels.length || view.state || view.reason) return { all: true, names: [] };
    var names = [];
    rows.forEach(function (entry, name) {
      if (entry.frame || needsPerson(entry.info)) names.push(name);
    });
    if (names.length > MAX_SELECTED) return { all: true, names: [] };
    return { all: false, names: names.sort() };
  }

  function needsPerson(info) {
    return !dead(info) && Boolean(info.attention || info.blocked);
  }

  function sameSelection(a, b) {
    return a.all === b.all && a.names.join("\n") === b.names.join("\n");
  }

  // After a drawing: a source that came to need a person (or stopped needing one), a filter of
  // roots set or cleared: the one stream again, resumed, with the new selection.
  function followSelection() {
    if (!sameSelection(wantedSelection(), selection)) reconnect();
  }

  function streamUrl() {
    var url = new URL("v1/fleet", document.baseURI);
    var current = Token.get();
    if (current) url.searchParams.set("token", current); // EventSource cannot send headers
    var wanted = wantedSelection();
    // From some sources' frames to every source's, a fresh picture (every snapshot); a source
    // newly named gets its snapshot (`snapshot=`) on a resumed stream.
    if (wanted.all && !selection.all) lastEventId = null;
    wanted.names.forEach(function (name) {
      if (selection.all || selection.names.indexOf(name) < 0) fresh.add(name);
    });
    if (!wanted.all) {
      // The roots of a source no longer followed are forgotten: never shown as they were.
      Array.from(views.keys()).forEach(function (name) {
        if (wanted.names.indexOf(name) < 0) {
          views.delete(name);
          dirty.add(name);
        }
      });
    }
    selection = wanted;
    if (wanted.all) url.searchParams.set("frames", "all");
    else wanted.names.forEach(function (name) { url.searchParams.append("source", name); });
    if (lastEventId) {
      url.searchParams.set("since", lastEventId);
      var opened = wanted.all ? [] : wanted.names;
      if (wanted.all) rows.forEach(function (entry, name) { if (entry.ready) opened.push(name); });
      opened.forEach(function (name) {
        if (fresh.has(name)) url.searchParams.append("snapshot", name);
      });
    }
    return url.toString();
  }

  function reconnect() {
    if (connection === "needs-token") return;
    if (stream) connect(); // a fresh snapshot of an opened source: the one stream again, resumed
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
        viewOf(data.source).apply(data.frame);
        dirty.add(data.source);
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
