/*
 * What a list of roots shows, without the DOM: the order (attention first), the filters and the
 * search, and their text form in the page's address (the fragment), so that a link reproduces a
 * view. The single hub's dashboard uses it; the fleet's page can use it as it is (it knows
 * nothing of where the roots come from).
 *
 * A classic script like fold.js: the page loads it with a <script> tag, node with require()
 * (tests/test_dashboard_views.py runs it under node).
 *
 * A view is {group, state, reason, attention, q}: every field optional ("" or false = any).
 *   group      "attention" | "working" | "idle" (the summary's groups, see groupOf)
 *   state      a root state: "working" | "blocked" | "idle"
 *   reason     a root reason ("awaiting_input", "paused", ...)
 *   attention  true: only roots that need attention (blocked, or flagged needs-attention)
 *   q          text that the root's id or one of its graph's names contains (any case)
 */
(function (global) {
  "use strict";

  /* The groups, in the order the page shows them. */
  var GROUPS = ["attention", "working", "idle"];
  var STATES = ["working", "blocked", "idle"];
  var REASONS = [
    "executing", "retrying", "automatic_continuation", "stopping",
    "awaiting_input", "manual_intervention", "paused", "quiescent",
  ];
  var FIELDS = ["group", "state", "reason", "attention", "q"];

  /*
   * What a reader sees for a value of the contract (a root's reason, a node's status) or of the
   * page (a connection state): words, never the raw value, which stays in a data attribute for
   * tests and scripts. Values without an entry read as themselves with spaces for "_" and "-"
   * (a newer hub's value still reads, if less well).
   */
  var WORDS = {
    // reasons (the contract's Reason)
    executing: "executing",
    retrying: "retrying",
    automatic_continuation: "continuing by itself",
    stopping: "stopping",
    awaiting_input: "waiting for input",
    manual_intervention: "needs intervention",
    paused: "paused",
    quiescent: "nothing to do",
    // (a node's status is a plain word, or awaiting_input above)
    // the page's connection
    connecting: "connecting",
    live: "live",
    reconnecting: "reconnecting",
    resynced: "resynced",
    gone: "hub gone",
    "needs-token": "needs a token",
  };

  function words(value) {
    var text = String(value);
    return Object.prototype.hasOwnProperty.call(WORDS, text) ? WORDS[text] : text.replace(/[_-]/g, " ");
  }
  var SEARCH_LIMIT = 200;

  /*
   * A root's group: "attention" when it is blocked or flagged needs-attention (whatever else it
   * does: a working root with a failure waits for a human too), else "working" when it works,
   * else "idle".
   */
  function groupOf(root) {
    if (root.state === "blocked" || root.needsAttention) return "attention";
    if (root.state === "working") return "working";
    return "idle";
  }

  function needsAttention(root) {
    return groupOf(root) === "attention";
  }

  function emptyView() {
    return { group: "", state: "", reason: "", attention: false, q: "" };
  }

  function isEmpty(view) {
    return !view.group && !view.state && !view.reason && !view.attention && !view.q;
  }

  function sameView(a, b) {
    return FIELDS.every(function (field) { return a[field] === b[field]; });
  }

  /*
   * The view of an address fragment ("#group=attention&q=deploy", with or without "#").
   * Unknown keys and values that name no group, state or reason are ignored: an old or edited
   * link still opens a page, showing more rather than nothing.
   */
  function parseView(fragment) {
    var text = String(fragment || "");
    if (text.charAt(0) === "#") text = text.slice(1);
    var params = new URLSearchParams(text);
    var view = emptyView();
    var group = params.get("group") || "";
    if (GROUPS.indexOf(group) >= 0) view.group = group;
    var state = params.get("state") || "";
    if (STATES.indexOf(state) >= 0) view.state = state;
    var reason = params.get("reason") || "";
    if (REASONS.indexOf(reason) >= 0) view.reason = reason;
    var attention = params.get("attention");
    view.attention = attention === "1" || attention === "true" || attention === "yes";
    view.q = (params.get("q") || "").slice(0, SEARCH_LIMIT);
    return view;
  }

  /* The fragment of a view ("" for the whole list), its fields in a fixed order. */
  function formatView(view) {
    var params = new URLSearchParams();
    if (view.group) params.set("group", view.group);
    if (view.state) params.set("state", view.state);
    if (view.reason) params.set("reason", view.reason);
    if (view.attention) params.set("attention", "1");
    if (view.q) params.set("q", view.q);
    var text = params.toString();
    return text ? "#" + text : "";
  }

  // What the search looks in, per root object: an unchanged root is the same object from frame
  // to frame, so its text is built once; a removed root's entry goes with it (a WeakMap).
  var searchTexts = new WeakMap();

  function searchText(root) {
    var text = searchTexts.get(root);
    if (text === undefined) {
      var parts = [root.rootRunId];
      if (root.graph) {
        root.graph.nodes.forEach(function (node) {
          parts.push(node.name);
        });
      }
      text = parts.join("\n").toLowerCase();
      searchTexts.set(root, text);
    }
    return text;
  }

  function matches(root, view, needle) {
    if (view.group && groupOf(root) !== view.group) return false;
    if (view.state && root.state !== view.state) return false;
    if (view.reason && root.reason !== view.reason) return false;
    if (view.attention && !needsAttention(root)) return false;
    if (needle && searchText(root).indexOf(needle) < 0) return false;
    return true;
  }

  /*
   * The roots a view shows, in the page's order: the attention group first, then working, then
   * idle; within a group in the order given (the hub's: first published first). Also the count
   * of every group among all roots, for the summary. One pass, no sort: O(roots).
   */
  function select(roots, view) {
    var needle = view.q ? view.q.toLowerCase() : "";
    var buckets = { attention: [], working: [], idle: [] };
    var counts = { all: roots.length, attention: 0, working: 0, idle: 0 };
    for (var i = 0; i < roots.length; i += 1) {
      var root = roots[i];
      var group = groupOf(root);
      counts[group] += 1;
      if (matches(root, view, needle)) buckets[group].push(root);
    }
    var shown = buckets.attention.concat(buckets.working, buckets.idle);
    return { roots: shown, counts: counts };
  }

  /* Words for a view, for the list's caption: "blocked · waiting for input · matching “db”". */
  function describeView(view) {
    var parts = [];
    if (view.group) parts.push(view.group === "attention" ? "needs attention" : view.group);
    if (view.state) parts.push(view.state);
    if (view.reason) parts.push(words(view.reason));
    if (view.attention && view.group !== "attention") parts.push("needs attention");
    if (view.q) parts.push("matching \u201c" + view.q + "\u201d");
    return parts.join(" \u00b7 ");
  }

  var api = {
    GROUPS: GROUPS,
    STATES: STATES,
    REASONS: REASONS,
    groupOf: groupOf,
    emptyView: emptyView,
    isEmpty: isEmpty,
    sameView: sameView,
    parseView: parseView,
    formatView: formatView,
    select: select,
    describeView: describeView,
    words: words,
  };
  if (typeof module === "object" && module.exports) {
    module.exports = api;
  } else {
    global.WorkflowHubViews = api;
  }
})(typeof globalThis !== "undefined" ? globalThis : this);
