/*
 * The live dashboard: follows /v1/activity (frames) and /v1/events (hook events) with
 * EventSource, folds frames with fold.js exactly as ActivityView does, and draws the result.
 *
 * Connection: the page reconnects by itself, with `since=<last event id>` so that the server
 * resumes from its history (no snapshot) whenever it can. After a reconnect the connection reads
 * `live` when the stream resumed, `resynced` when it began again with a snapshot.
 * A hub that stays unreachable for GONE_AFTER_MS (10 s; `?gone_after=SECONDS` in the address
 * changes it), or whose last snapshot said `unavailable` before its
 * server stopped answering, is `gone`: the page says it went away, keeps its last state and tries
 * again every GONE_RETRY_MS rather than saying `reconnecting` forever.
 * A token (when the server needs one) lives in sessionStorage for this tab only; a `?token=` in
 * the address is moved there and removed from the address bar at once.
 *
 * Inside the fleet's page (`?feed=parent`, in a frame of the same origin) the page opens no
 * stream at all: the fleet page's one stream (/v1/fleet) carries this source's frames and its
 * connection state, and the fleet page posts them here (see fleet.js).
 */
(function () {
  "use strict";

  var Fold = window.WorkflowHubFold;
  var Views = window.WorkflowHubViews;
  var Token = window.WorkflowHubToken;
  var PAGE = 100; // roots drawn at first, and added by each "show more"
  var FEED_LIMIT = 50;
  var MIN_RETRY_MS = 250;
  var MAX_RETRY_MS = 4000;
  var GONE_AFTER_MS = goneAfterMs();
  var GONE_RETRY_MS = 10000;
  var FRAME_KINDS = ["snapshot", "changed", "removed"];
  var EVENT_TYPES = [
    "workflow_lifecycle",
    "workflow_stage_completed",
    "workflow_activity_changed",
    "workflow_heartbeat",
  ];

  // Text symbols beside every label: colour is never the only signal.
  var SYMBOLS = {
    working: "▶", blocked: "■", idle: "○", unknown: "?",
    attention: "⚠", live: "●", reconnecting: "↻", gone: "✕", stopped: "✕", resynced: "⟳", connecting: "○", "needs-token": "!",
    running: "▶", completed: "✓", cached: "✓", failed: "✗", cancelled: "✗", killed: "✗",
    pending: "·", awaiting_input: "?", paused: "‖", blocked_node: "■", skipped: "↷",
  };
  // A narrow screen (a phone) opens on the roots: the filters fold into one line above them.
  var NARROW = "(max-width: 40rem)";

  function $(selector) {
    return document.querySelector(selector);
  }

  var ui = {
    connection: $('[data-testid="connection"]'),
    connectionLabel: $('[data-role="connection-label"]'),
    epoch: $('[data-role="epoch"]'),
    revision: $('[data-role="revision"]'),
    tokenForm: $('[data-testid="token-form"]'),
    tokenInput: $("#token-input"),
    tokenProblem: $('[data-role="token-problem"]'),
    aggregate: $('[data-testid="aggregate"]'),
    aggregateLabel: $('[data-role="aggregate-label"]'),
    aggregateMessage: $('[data-testid="aggregate-message"]'),
    aggregateAttention: $('[data-role="aggregate-attention"]'),
    stale: $('[data-testid="stale"]'),
    noGraph: $('[data-testid="no-graph"]'),
    filtersBox: $('[data-testid="filters-box"]'),
    filtersActive: $('[data-role="filters-active"]'),
    superseded: $('[data-testid="superseded"]'),
    rootCount: $('[data-role="root-count"]'),
    rootsEmpty: $('[data-testid="roots-empty"]'),
    roots: $('[data-testid="roots"]'),
    more: $('[data-testid="more"]'),
    shown: $('[data-testid="shown"]'),
    summary: $('[data-testid="summary"]'),
    filters: $('[data-testid="filters"]'),
    announcer: $('[data-testid="announcer"]'),
    rootsHeading: $("#roots-heading"),
    skip: $(".skip"),
    feedStatus: $('[data-testid="feed-status"]'),
    feed: $('[data-testid="feed"]'),
  };

  var model;
  var connection = "connecting";
  var activity = null;
  var events = null;
  var retryTimer = null;
  var eventsTimer = null;
  var retryDelay = MIN_RETRY_MS;
  var downSince = null; // Date.now() when the hub stopped answering (null while it answers)
  var goneTimer = null;
  var openRoots = new Set(); // ids of the roots whose stages are expanded (pruned on removal)
  var drawn = new Map(); // id -> <li> of the roots drawn now (at most `limit`)
  var limit = PAGE;
  var currentId = null; // the root the keyboard is on (the one <li> with tabindex 0)
  var announced = null;
  var stopped = null; // in a fleet's page: a dead source's liveness ("crashed? (no refresh since …)")
  var controls = null;

  function resetModel() {
    model = {
      view: new Fold.ActivityView(),
      feed: new Fold.EventFeed(FEED_LIMIT),
      lastEventId: null,
      frames: 0,
      snapshots: 0,
      reconnects: 0,
      afterReconnect: false,
      replaced: null, // {from, to}: a snapshot of a new epoch replaced the one shown
    };
  }

  function streamUrl(path, params) {
    var url = new URL(path, document.baseURI);
    var current = Token.get();
    if (current) url.searchParams.set("token", current); // EventSource cannot send headers
    Object.keys(params || {}).forEach(function (key) {
      url.searchParams.set(key, params[key]);
    });
    return url.toString();
  }

  function probe(path, signal) {
    var headers = {};
    var current = Token.get();
    if (current) headers.Authorization = "Bearer " + current;
    return window.fetch(new URL(path, document.baseURI).toString(), {
      headers: headers,
      cache: "no-store",
      signal: signal,
    });
  }

  function askForToken() {
    var refused = Boolean(Token.get());
    closeStreams();
    resetModel();
    openRoots.clear();
    connection = "needs-token";
    ui.tokenProblem.textContent = refused
      ? "The server refused that token. Enter the token the server was started with."
      : "Enter the token the server was started with. It is kept for this tab only and never " +
        "shown in the address bar.";
    ui.tokenForm.hidden = false;
    render();
    renderFeed();
    ui.feedStatus.textContent = "Hook events appear once connected.";
    ui.tokenInput.focus();
  }

  ui.tokenForm.addEventListener("submit", function (submit) {
    submit.preventDefault();
    var value = ui.tokenInput.value;
    ui.tokenInput.value = "";
    if (!value) return;
    Token.store(value);
    ui.tokenForm.hidden = true;
    connection = "connecting";
    render();
    start();
  });

  // --- activity stream -------------------------------------------------------------------

  function closeStreams() {
    window.clearTimeout(retryTimer);
    window.clearTimeout(eventsTimer);
    if (activity) activity.close();
    if (events) events.close();
    activity = null;
    events = null;
  }

  function start() {
    retryDelay = MIN_RETRY_MS;
    probeThenConnect();
    connectEvents();
  }

  function probeThenConnect() {
    probe("v1/snapshot").then(
      function (response) {
        if (response.status === 401 || response.status === 403) {
          askForToken();
        } else {
          connect();
        }
      },
      function () {
        unanswered(true); // the server is not there (yet, or any more)
        scheduleRetry();
      }
    );
  }

  function scheduleRetry() {
    window.clearTimeout(retryTimer);
    var delay = connection === "gone" ? GONE_RETRY_MS : retryDelay;
    retryTimer = window.setTimeout(probeThenConnect, delay);
    retryDelay = Math.min(retryDelay * 2, MAX_RETRY_MS);
  }

  // --- a hub that went away ----------------------------------------------------------------

  function goneAfterMs() {
    var given = new URL(window.location.href).searchParams.get("gone_after");
    var seconds = given === null ? NaN : Number(given);
    return isFinite(seconds) && seconds > 0 ? seconds * 1000 : 10000;
  }

  // The hub did not answer (a stream dropped, a probe found nothing listening): from the first
  // failure on, the page becomes `gone` after GONE_AFTER_MS, or at once when the server is not
  // there and the last picture said the activity was unavailable (its publisher had ended).
  function unanswered(serverGone) {
    if (downSince === null) {
      downSince = Date.now();
      window.clearTimeout(goneTimer);
      goneTimer = window.setTimeout(checkGone, GONE_AFTER_MS);
    }
    if (serverGone && model.view.availability === "unavailable") setConnection("gone");
    else checkGone();
  }

  function checkGone() {
    if (downSince !== null && Date.now() - downSince >= GONE_AFTER_MS && connection !== "gone") {
      setConnection("gone");
    }
  }

  function answered() {
    downSince = null;
    window.clearTimeout(goneTimer);
  }

  function connect() {
    if (activity) activity.close();
    var params = {};
    if (model.lastEventId) params.since = model.lastEventId;
    var source = new window.EventSource(streamUrl("v1/activity", params));
    var opened = false;
    activity = source;
    source.onopen = function () {
      if (activity !== source) return;
      opened = true;
      retryDelay = MIN_RETRY_MS;
      answered();
      setConnection("live");
    };
    FRAME_KINDS.forEach(function (kind) {
      source.addEventListener(kind, function (message) {
        if (activity === source) onFrame(message);
      });
    });
    source.onerror = function () {
      if (activity !== source) return;
      // Reconnect ourselves (with `since`) rather than let EventSource retry at its own pace:
      // the same path then handles a dropped stream, a stopped server and a refused token.
      // EventSource closes for good on an HTTP error (a cursor the server cannot parse, a 5xx)
      // and keeps CONNECTING on a network error (the server went away). A stream refused
      // before it opened is asked for a fresh snapshot next time rather than the same request.
      var refused = !opened && source.readyState === window.EventSource.CLOSED;
      source.close();
      activity = null;
      if (refused) model.lastEventId = null;
      model.afterReconnect = true;
      model.reconnects += 1;
      if (connection !== "gone") setConnection("reconnecting");
      unanswered(false);
      scheduleRetry();
    };
  }

  function onFrame(message) {
    var frame = JSON.parse(message.data);
    var before = model.view.cursor;
    var change = model.view.apply(frame);
    model.frames += 1;
    if (message.lastEventId) model.lastEventId = message.lastEventId;
    if (frame.kind === "snapshot" && change.kind !== "rejected") {
      model.snapshots += 1;
      if (before && before.epoch !== frame.cursor.epoch) {
        model.replaced = { from: before.epoch, to: frame.cursor.epoch };
      }
      if (model.afterReconnect) connection = "resynced";
    }
    scheduleRender();
  }

  // A frame after a quiet spell is drawn at once; a burst of them (a resume, a busy scheduler)
  // is drawn at most every 20 ms.
  var renderTimer = null;
  var lastRender = 0;

  var feedTimer = null;

  function scheduleFeed() {
    if (feedTimer !== null) return;
    feedTimer = window.setTimeout(function () {
      feedTimer = null;
      renderFeed();
    }, 20);
  }

  function scheduleRender() {
    if (renderTimer !== null) return;
    var wait = lastRender + 20 - Date.now();
    if (wait <= 0) {
      render();
      return;
    }
    renderTimer = window.setTimeout(function () {
      renderTimer = null;
      render();
    }, wait);
  }

  function setConnection(state) {
    connection = state;
    renderConnection();
    announce(Fold.aggregate(model.view));
  }

  // --- hook events -----------------------------------------------------------------------

  function connectEvents() {
    window.clearTimeout(eventsTimer);
    if (events) events.close();
    var source = new window.EventSource(streamUrl("v1/events"));
    events = source;
    source.onopen = function () {
      if (events !== source) return;
      if (!model.feed.entries.length) ui.feedStatus.textContent = "No hook events yet.";
    };
    EVENT_TYPES.forEach(function (type) {
      source.addEventListener(type, function (message) {
        if (events !== source) return;
        model.feed.push(type, JSON.parse(message.data));
        scheduleFeed();
      });
    });
    source.addEventListener("dropped", function (message) {
      if (events !== source) return;
      var data = JSON.parse(message.data);
      model.feed.drop(data.count, data.reason);
      scheduleFeed();
    });
    source.onerror = function () {
      if (events !== source) return;
      source.close();
      events = null;
      // Hooks are notifications: nothing to resume. Find out whether the server has them at all.
      var controller = new AbortController();
      probe("v1/events", controller.signal).then(
        function (response) {
          controller.abort();
          if (response.status === 404) {
            ui.feedStatus.textContent =
              "This server publishes no hook events (it was started without a hook runner).";
          } else if (response.status !== 401 && response.status !== 403) {
            eventsTimer = window.setTimeout(connectEvents, MAX_RETRY_MS / 2);
          }
        },
        function () {
          eventsTimer = window.setTimeout(connectEvents, MAX_RETRY_MS / 2);
        }
      );
    };
  }

  // --- drawing ---------------------------------------------------------------------------

  // Words for a reason, a status or a connection state ("waiting for input", "needs a token");
  // the raw value stays in a data attribute (data-value, data-reason, data-state).
  var words = Views.words;

  function plural(count, noun) {
    return count + " " + noun + (count === 1 ? "" : "s");
  }

  function shownId(id) {
    // Ids are kept raw; an empty or space-padded one is shown quoted so that it stays visible.
    return id === "" || id.trim() !== id ? JSON.stringify(id) : id;
  }

  function element(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function badge(kind, value, text) {
    var node = element("span", "badge " + kind + "-" + value);
    var symbol = element("span", "symbol", SYMBOLS[kind === "node" && value === "blocked" ? "blocked_node" : value] || "•");
    symbol.setAttribute("aria-hidden", "true");
    node.appendChild(symbol);
    node.appendChild(document.createTextNode(" " + (text || words(value))));
    node.dataset.value = value;
    return node;
  }

  function render() {
    lastRender = Date.now();
    var roots = model.view.roots();
    renderConnection();
    renderAggregate(roots);
    renderSuperseded();
    renderRoots(roots);
  }

  function renderConnection() {
    var cursor = model.view.cursor;
    var data = ui.connection.dataset;
    data.state = connection;
    data.cursor = cursor ? Fold.formatCursor(cursor) : "";
    data.epoch = cursor ? cursor.epoch : "";
    data.revision = cursor ? String(cursor.revision) : "";
    data.frames = String(model.frames);
    data.snapshots = String(model.snapshots);
    data.reconnects = String(model.reconnects);
    // A fleet's source that stopped reads "stopped", never the fleet stream's "live".
    var shown = stopped !== null && connection === "live" ? "stopped" : connection;
    data.state = shown;
    var symbol = element("span", "symbol", SYMBOLS[shown] || "•");
    symbol.setAttribute("aria-hidden", "true");
    ui.connectionLabel.replaceChildren(symbol, document.createTextNode(" " + words(shown)));
    ui.connectionLabel.dataset.value = shown;
    ui.connectionLabel.className = "badge connection-" + (shown === "stopped" ? "gone" : shown);
    ui.epoch.textContent = cursor ? cursor.epoch : "–";
    ui.revision.textContent = cursor ? String(cursor.revision) : "–";
    // While disconnected the picture is the last one received: say so beside the status.
    var stale = connection === "reconnecting" && cursor !== null;
    var gone = connection === "gone";
    var every = Math.round(GONE_RETRY_MS / 1000) + " s";
    ui.stale.hidden = !(stale || gone);
    ui.stale.dataset.state = gone ? "gone" : stale ? "stale" : "";
    if (gone) {
      ui.stale.textContent = cursor
        ? "The hub went away; this is its last state (revision " + cursor.revision + "). " +
          "Trying again every " + every + "."
        : "No hub answers at this address. Trying again every " + every + ".";
    } else if (shown === "stopped") {
      ui.stale.hidden = false;
      ui.stale.dataset.state = "stopped";
      ui.stale.textContent = "Not live: " + stopped + ".";
    } else {
      ui.stale.textContent = stale
        ? "Reconnecting: this is the state as of revision " + cursor.revision + "; it may have changed."
        : "";
    }
    document.body.dataset.connection = connection;
  }

  // What needs a person first ("2 need attention: 1 waiting for input, 1 failed at deploy"),
  // then the overall state. The badge says a reason only while nothing needs a person: the
  // aggregate's reason is one root's, and must not stand for the others that wait for a human.
  function renderAggregate(roots) {
    var status = Fold.aggregate(model.view);
    var needs = Views.headline(roots);
    var data = ui.aggregate.dataset;
    data.status = status.state;
    data.reason = status.reason || "";
    data.attention = String(status.attention);
    data.needsAttention = String(needs.count);
    var label = status.state + (status.reason && !needs.count ? " · " + words(status.reason) : "");
    var symbol = element("span", "symbol", SYMBOLS[status.state]);
    symbol.setAttribute("aria-hidden", "true");
    ui.aggregateLabel.replaceChildren(symbol, document.createTextNode(" " + label));
    ui.aggregateLabel.dataset.value = status.state;
    ui.aggregateLabel.className = "badge big state-" + status.state;
    ui.aggregateMessage.textContent = status.message;
    var flag = element("span", "symbol", SYMBOLS.attention);
    flag.setAttribute("aria-hidden", "true");
    ui.aggregateAttention.replaceChildren(flag, document.createTextNode(" " + needs.text));
    ui.aggregateAttention.hidden = !needs.count;
    document.title = (needs.count ? "⚠ " + needs.count + " · " : "") + status.state + " · workflow-hub";
    // A source that sends roots without their graph: say so once, as `watch` does, rather than
    // show cards that look as if nothing failed and nothing asks.
    ui.noGraph.hidden = !(model.view.known() && roots.length && roots.every(function (root) {
      return !root.graph;
    }));
    announce(status);
  }

  function renderSuperseded() {
    var view = model.view;
    var text = "";
    if (view.superseded) {
      text =
        "Superseded: a frame of a new publisher arrived without its snapshot, so the roots of " +
        "epoch " + view.cursor.epoch + " are no longer anyone's. Waiting for a snapshot.";
    } else if (model.replaced && view.cursor && view.cursor.epoch === model.replaced.to &&
               view.availability !== "ready") {
      text =
        "Superseded: a new publisher (epoch " + model.replaced.to + ") replaced epoch " +
        model.replaced.from + ". Its activity is not known yet.";
    }
    ui.superseded.hidden = !text;
    ui.superseded.textContent = text;
    ui.superseded.dataset.state = text ? "superseded" : "current";
  }

  function count(number) {
    return number.toLocaleString("en");
  }

  // The overall state, said once when it changes (never for each frame): "working", "blocked,
  // needs attention", "reconnecting" ...
  function announce(status) {
    var text = "Status " + status.state + (status.attention ? ", needs attention" : "");
    if (connection !== "live" && connection !== "resynced" && connection !== "connecting") {
      text += "; connection " + words(connection);
    }
    if (text === announced) return;
    // The first status of the page is on the screen already; only changes are announced.
    if (announced !== null || connection === "live") ui.announcer.textContent = text;
    announced = text;
  }

  function renderSummary(counts, view) {
    var labels = {
      attention: counts.attention === 1 ? "needs attention" : "need attention",
      working: "working",
      idle: "idle",
      "": "in all",
    };
    Array.prototype.forEach.call(ui.summary.querySelectorAll("a[data-group]"), function (link) {
      var group = link.dataset.group;
      var number = group ? counts[group] : counts.all;
      link.querySelector('[data-role="group-count"]').textContent = count(number);
      link.lastChild.textContent = " " + labels[group];
      link.dataset.count = String(number);
      var current = group === view.group && (group !== "" || Views.isEmpty(view));
      if (current) link.setAttribute("aria-current", "true");
      else link.removeAttribute("aria-current");
    });
  }

  function renderRoots(roots) {
    var all = roots || model.view.roots();
    var view = controls.view;
    var selection = Views.select(all, view);
    var matching = selection.roots;
    var roots = matching.slice(0, limit);
    var known = model.view.known();
    renderSummary(selection.counts, view);
    var active = Views.describeView(Object.assign({}, view, { group: "" }));
    ui.filtersActive.textContent = active ? ": " + active : "";

    // What has the focus now, to give it back after the list is redrawn.
    var focused = document.activeElement;
    var focusItem = focused && focused.closest ? focused.closest("li.root") : null;
    var focusId = focusItem && ui.roots.contains(focusItem) ? focusItem.dataset.rootId : null;
    var focusSummary = focusId !== null && focused.tagName === "SUMMARY";
    var focusIndex = focusId !== null ? Array.prototype.indexOf.call(ui.roots.children, focusItem) : -1;

    var keep = new Map();
    roots.forEach(function (root, index) {
      var item = drawn.get(root.rootRunId);
      // Every frame parses into new objects, so an unchanged root is the very same object.
      if (!item || item.__root !== root) {
        var fresh = rootItem(root);
        fresh.__root = root;
        if (item) item.replaceWith(fresh);
        item = fresh;
      }
      keep.set(root.rootRunId, item);
      if (ui.roots.children[index] !== item) {
        ui.roots.insertBefore(item, ui.roots.children[index] || null);
      }
    });
    drawn.forEach(function (item, id) {
      if (!keep.has(id)) item.remove();
    });
    drawn = keep;
    // Expanded stages of roots that are gone are forgotten: memory follows the roots.
    openRoots.forEach(function (id) {
      if (!model.view.get(id)) openRoots.delete(id);
    });

    // One root is reachable with Tab (roving tabindex); the arrows move between them.
    if (currentId === null || !drawn.has(currentId)) {
      currentId = roots.length ? roots[Math.max(0, Math.min(focusIndex, roots.length - 1))].rootRunId : null;
    }
    drawn.forEach(function (item, id) {
      item.tabIndex = id === currentId ? 0 : -1;
    });
    if (focusId !== null && !ui.roots.contains(document.activeElement)) {
      var target = drawn.get(focusId) || drawn.get(currentId);
      if (target) {
        var summary = focusSummary && target.dataset.rootId === focusId && target.querySelector("summary");
        (summary || target).focus({ preventScroll: true });
      } else {
        ui.rootsHeading.focus({ preventScroll: true });
      }
    }

    ui.roots.dataset.drawn = String(roots.length);
    ui.roots.dataset.matching = String(matching.length);
    ui.rootCount.textContent = known ? "(" + count(all.length) + ")" : "";
    var described = Views.describeView(view);
    ui.shown.hidden = !known || all.length === 0;
    ui.shown.textContent =
      (described ? "Showing " + count(matching.length) + " of " + count(all.length) + ": " + described
                 : "Showing all " + count(all.length)) +
      (roots.length < matching.length ? " (the first " + count(roots.length) + " drawn)" : "") +
      ". Needs attention first, then working, then idle.";
    var rest = matching.length - roots.length;
    ui.more.hidden = rest <= 0;
    ui.more.textContent = "Show " + count(Math.min(PAGE, rest)) + " more (" + count(rest) + " not drawn)";
    ui.rootsEmpty.hidden = roots.length > 0;
    if (!known) {
      // Why, when the source said (C3's detail: "broker unreachable: …").
      var why = model.view.detail;
      ui.rootsEmpty.textContent = "Activity unknown" + (why ? " (" + why + ")" : "") +
        ": no roots are shown until the source is ready.";
    } else if (all.length === 0) {
      ui.rootsEmpty.textContent = "No roots: nothing is running.";
    } else {
      ui.rootsEmpty.textContent = "No root matches this view. Clear the filters to see all " +
        count(all.length) + ".";
    }
  }

  // --- keyboard --------------------------------------------------------------------------

  function moveTo(item) {
    if (!item) return;
    currentId = item.dataset.rootId;
    drawn.forEach(function (other) {
      other.tabIndex = other === item ? 0 : -1;
    });
    item.focus();
  }

  ui.roots.addEventListener("keydown", function (event) {
    var item = event.target.closest("li.root");
    if (!item || event.altKey || event.ctrlKey || event.metaKey) return;
    var onItem = event.target === item;
    var key = event.key;
    if (key === "Escape") {
      var details = item.querySelector("details");
      if (details) details.open = false;
      moveTo(item);
    } else if (onItem && (key === "ArrowDown" || key === "ArrowUp")) {
      var next = key === "ArrowDown" ? item.nextElementSibling : item.previousElementSibling;
      if (!next && key === "ArrowDown" && !ui.more.hidden) {
        showMore();
        next = item.nextElementSibling;
      }
      moveTo(next);
    } else if (onItem && key === "Home") {
      moveTo(ui.roots.firstElementChild);
    } else if (onItem && key === "End") {
      moveTo(ui.roots.lastElementChild);
    } else if (onItem && (key === "Enter" || key === " ")) {
      var graph = item.querySelector("details");
      if (!graph) return;
      graph.open = true;
      openRoots.add(item.dataset.rootId);
      graph.querySelector("summary").focus();
    } else {
      return;
    }
    event.preventDefault();
  });

  function showMore() {
    limit += PAGE;
    renderRoots();
  }

  ui.more.addEventListener("click", function () {
    var index = ui.roots.children.length;
    showMore();
    moveTo(ui.roots.children[index]);
  });

  // Focus that reaches a card another way (a click on its stages) makes it the list's stop.
  ui.roots.addEventListener("focusin", function (event) {
    var item = event.target.closest("li.root");
    if (!item || item.dataset.rootId === currentId) return;
    currentId = item.dataset.rootId;
    drawn.forEach(function (other) {
      other.tabIndex = other === item ? 0 : -1;
    });
  });

  // The skip link lands on the list itself (its current root, past the summary and the
  // filters), without touching the fragment (which holds the view). With no root drawn it
  // lands on the sentence that says why.
  ui.skip.addEventListener("click", function (click) {
    click.preventDefault();
    var target = (currentId !== null && drawn.get(currentId)) || ui.roots.firstElementChild;
    if (target) moveTo(target);
    else ui.rootsEmpty.focus();
  });

  function rootItem(root) {
    var item = element("li", "root");
    item.setAttribute("data-root-id", root.rootRunId);
    item.dataset.group = Views.groupOf(root);
    item.dataset.state = root.state;
    item.dataset.reason = root.reason;
    item.dataset.attention = String(root.needsAttention);

    var failures = Views.failuresOf(root);
    var state = Views.shownState(root);
    var head = element("div", "root-head");
    head.appendChild(element("h3", "root-id", shownId(root.rootRunId)));
    head.appendChild(badge("state", state));
    // A settled failure reads "failed at <stage>", never "idle · nothing to do".
    var reason = element(
      "span", "reason",
      state === "failed" ? (failures.length ? "at " + shownId(failures[0].name) : "") : words(root.reason)
    );
    reason.dataset.value = root.reason;
    head.appendChild(reason);
    if (root.needsAttention) head.appendChild(badge("flag", "attention", "needs attention"));
    item.appendChild(head);

    // The reading order of a card: what failed, then the question, then the counts.
    if (failures.length) item.appendChild(failure(failures));
    if (root.graph) {
      var asked = question(root.graph);
      if (asked) item.appendChild(asked);
    }

    var counts = element("dl", "counts");
    [
      ["active executions", String(root.activeExecutionCount)],
      ["actionable blocks", String(root.actionableBlockCount)],
      ["needs attention", root.needsAttention ? "yes" : "no"],
    ].forEach(function (pair) {
      var group = element("div");
      group.appendChild(element("dt", "", pair[0]));
      group.appendChild(element("dd", "", pair[1]));
      counts.appendChild(group);
    });
    item.appendChild(counts);
    if (root.labels) {
      var labels = labelList(root.labels);
      if (labels) item.appendChild(labels);
    }
    if (root.graph) item.appendChild(graphDetails(root));
    return item;
  }

  // "Failed at deploy: health check timed out (TimeoutError)", and how many more failed: on
  // the card itself, never only behind a click.
  function failure(failures) {
    var first = failures[0];
    var node = element("p", "failure");
    node.dataset.testid = "failure";
    var symbol = element("span", "symbol", SYMBOLS.failed);
    symbol.setAttribute("aria-hidden", "true");
    node.appendChild(symbol);
    node.appendChild(document.createTextNode(" Failed at "));
    node.appendChild(element("strong", "", shownId(first.name)));
    var text = first.message ? ": " + first.message : " (no error given)";
    if (first.type) text += " (" + first.type + ")";
    if (failures.length > 1) text += "; and " + plural(failures.length - 1, "more failure");
    node.appendChild(document.createTextNode(text));
    return node;
  }

  // A root's labels: each a link that narrows the view to the roots carrying it too.
  function labelList(labels) {
    var keys = Object.keys(labels);
    if (!keys.length) return null;
    var list = element("ul", "labels");
    list.setAttribute("aria-label", "labels");
    keys.forEach(function (key) {
      var label = key + ":" + labels[key];
      var link = element("a", "label", key + ": " + labels[key]);
      link.href = Views.formatView({ labels: [label] });
      link.dataset.label = label;
      link.title = "Show only roots labelled " + label;
      link.tabIndex = -1; // the list stays one stop of the Tab key; the Labels filter is the keyboard's way
      var entry = element("li");
      entry.appendChild(link);
      list.appendChild(entry);
    });
    return list;
  }

  ui.roots.addEventListener("click", function (click) {
    var link = click.target.closest && click.target.closest("a.label");
    if (!link || click.ctrlKey || click.metaKey || click.shiftKey || click.button !== 0) return;
    click.preventDefault();
    controls.addLabel(link.dataset.label);
  });

  // The question the root waits on, on the card itself: a prompt can be deep in a subgraph (a
  // child workflow's stage) and is what a reader looks for, so it is never only behind a click.
  function question(graph) {
    var asks = [];
    graph.nodes.forEach(function (node) {
      if (node.pendingPrompt) asks.push({ where: node.name, message: node.pendingPrompt.message });
    });
    (graph.runPrompts || []).forEach(function (prompt) {
      asks.push({ where: "run " + prompt.runId, message: prompt.message });
    });
    if (!asks.length) return null;
    var first = asks[0];
    var text = "Waits for an answer: \u201c" + first.message + "\u201d (" + shownId(first.where) + ")";
    if (asks.length > 1) text += " and " + plural(asks.length - 1, "more question");
    var node = element("p", "prompt question", text);
    node.dataset.testid = "question";
    return node;
  }

  function graphDetails(root) {
    var nodes = root.graph.nodes;
    var details = element("details", "graph");
    details.open = openRoots.has(root.rootRunId);
    details.addEventListener("toggle", function () {
      if (details.open) openRoots.add(root.rootRunId);
      else openRoots.delete(root.rootRunId);
    });
    var running = nodes.filter(function (node) { return node.status === "running"; });
    var stages = nodes.filter(function (node) { return node.kind === "stage"; }).length;
    var tools = nodes.length - stages;
    var parts = [plural(stages, "stage")];
    if (tools) parts.push(plural(tools, "tool"));
    if (running.length) {
      parts.push("running: " + running.map(function (node) { return node.name; }).join(", "));
    }
    var summary = element("summary", "", parts.join(" · "));
    // Not a stop of the Tab key: the list is one stop, Enter on the root moves here (see the
    // keyboard section); a click or a screen reader's own navigation still opens it.
    summary.tabIndex = -1;
    details.appendChild(summary);
    var list = element("ol", "nodes");
    nodes.forEach(function (node) {
      var entry = element("li", "node");
      entry.setAttribute("data-node-id", node.id);
      entry.dataset.status = node.status;
      entry.dataset.kind = node.kind;
      entry.style.setProperty("--depth", String(node.depth));
      entry.appendChild(element("span", "node-kind", node.kind));
      entry.appendChild(element("span", "node-name", shownId(node.name)));
      entry.appendChild(badge("node", node.status));
      if (node.error) {
        entry.appendChild(element(
          "span", "error", node.error.message + (node.error.type ? " (" + node.error.type + ")" : "")
        ));
      }
      if (node.pendingPrompt) {
        entry.appendChild(element("span", "prompt", "waits for: " + node.pendingPrompt.message));
      }
      list.appendChild(entry);
    });
    details.appendChild(list);
    (root.graph.runPrompts || []).forEach(function (prompt) {
      details.appendChild(element("p", "prompt", "run " + prompt.runId + " asks: " + prompt.message));
    });
    return details;
  }

  function renderFeed() {
    var entries = model.feed.entries;
    var items = entries.map(function (entry) {
      var item = element("li", "event");
      item.dataset.type = entry.type;
      item.dataset.seq = String(entry.seq);
      if (entry.time) {
        var time = element("time", "clock", entry.time);
        time.dataset.testid = "event-time";
        if (!entry.timeOwn) time.title = "the time of the event before it (this one carries none)";
        item.appendChild(time);
        item.appendChild(document.createTextNode(" "));
      }
      var label = element("span", "badge event-" + entry.label, entry.label);
      item.appendChild(label);
      item.appendChild(document.createTextNode(" " + entry.text));
      return item;
    });
    ui.feed.replaceChildren.apply(ui.feed, items);
    if (entries.length) ui.feedStatus.textContent =
      "The latest " + entries.length + " of " + model.feed.received + " (at most " + FEED_LIMIT + ").";
  }

  // --- fed by the fleet's page ------------------------------------------------------------

  function fedByParent() {
    return new URL(window.location.href).searchParams.get("feed") === "parent" &&
      window.parent !== window;
  }

  function startFromParent() {
    var origin = window.location.origin;
    window.addEventListener("message", function (message) {
      if (message.source !== window.parent || message.origin !== origin) return;
      var data = message.data || {};
      if (data.type === "frame") {
        onFrame({ data: data.data, lastEventId: data.id });
      } else if (data.type === "connection") {
        if (data.state !== "live" && connection === "live") {
          model.afterReconnect = true;
          model.reconnects += 1;
        }
        if (data.state !== "live" || connection !== "resynced") setConnection(data.state);
      } else if (data.type === "source") {
        // Its own name as the heading; a dead source's liveness words (fleet_liveness.js)
        // instead of the fleet stream's "live".
        document.querySelector(".top h1").textContent = String(data.name);
        stopped = data.stopped ? String(data.stopped) : null;
        renderConnection();
      } else if (data.type === "event") {
        model.feed.push(data.kind, data.event);
        scheduleFeed();
      } else if (data.type === "dropped") {
        model.feed.drop(data.count, data.reason);
        scheduleFeed();
      }
    });
    ui.feedStatus.textContent = "This source's hook events from the moment it was opened.";
    if (window.ResizeObserver) {
      // The fleet page sizes the frame to what it shows: no scroll box in a scroll box.
      new window.ResizeObserver(function () {
        window.parent.postMessage(
          { type: "height", height: document.documentElement.scrollHeight }, origin
        );
      }).observe(document.body);
    }
    window.parent.postMessage({ type: "ready" }, origin);
  }

  resetModel();
  Token.takeFromAddress();
  controls = new window.WorkflowHubControls.Controls(ui.filters, function () {
    limit = PAGE;
    renderRoots();
  });
  if (window.matchMedia && window.matchMedia(NARROW).matches) ui.filtersBox.open = false;
  render();
  if (fedByParent()) startFromParent();
  else start();
})();
