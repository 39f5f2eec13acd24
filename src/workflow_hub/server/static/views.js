/*
 * What a list of roots shows, without the DOM: the order (attention first), the filters and the
 * search, and their text form in the page's address (the fragment), so that a link reproduces a
 * view. The single hub's dashboard uses it; the fleet's page can use it as it is (it knows
 * nothing of where the roots come from).
 *
 * A classic script like fold.js: the page loads it with a <script> tag, node with require()
 * (tests/test_dashboard_views.py runs it under node).
 *
 * A view is {group, state, reason, attention, labels, q}: every field optional ("", false or []
 * = any).
 *   group      "attention" | "working" | "idle" (the summary's groups, see groupOf)
 *   state      a root state: "working" | "blocked" | "idle"
 *   reason     a root reason ("awaiting_input", "paused", ...)
 *   attention  true: only roots that need attention (blocked, or flagged needs-attention)
 *   labels     ["team:infra", ...]: only roots carrying every one of these labels (key:value)
 *   q          text that the root's id or one of its graph's names contains (any case)
 *
 * It also says why a root needs a person (attentionOf: "waiting for input", "failed at deploy")
 * and what failed in it (failureOf: the failed stage or tool and its error), for the cards and
 * the page's headline (headline: "2 need attention: 1 waiting for input, 1 failed at deploy").
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
  // A label in a view is "key:value"; keys as the contract's (C3): a letter, then letters,
  // digits, "_ . - /", at most 63 characters; values 1 to 256 characters; at most 16 labels.
  var LABEL_KEY = /^[A-Za-z][A-Za-z0-9_.\/-]{0,62}$/;
  var LABEL_LIMIT = 16;
  var VALUE_LIMIT = 256;

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
    return { group: "", state: "", reason: "", attention: false, labels: [], q: "" };
  }

  function labelsOf(view) {
    return view.labels || [];
  }

  function isEmpty(view) {
    return !view.group && !view.state && !view.reason && !view.attention && !view.q &&
      !labelsOf(view).length;
  }

  function sameView(a, b) {
    return FIELDS.every(function (field) { return a[field] === b[field]; }) &&
      labelsOf(a).join("\n") === labelsOf(b).join("\n");
  }

  /* "key:value" as it is, or null when it names no possible label. */
  function parseLabel(text) {
    text = String(text);
    var at = text.indexOf(":");
    if (at < 1) return null;
    var key = text.slice(0, at);
    var value = text.slice(at + 1);
    if (!LABEL_KEY.test(key) || !value || Array.from(value).length > VALUE_LIMIT) return null;
    return key + ":" + value;
  }

  /* The labels of a list of texts: each parsed, duplicates and impossible ones dropped, at
     most LABEL_LIMIT (no root carries more). */
  function parseLabels(texts) {
    var labels = [];
    texts.forEach(function (text) {
      var label = parseLabel(text);
      if (label !== null && labels.indexOf(label) < 0 && labels.length < LABEL_LIMIT) {
        labels.push(label);
      }
    });
    return labels;
  }

  /* Whether a root carries every label of a view. */
  function hasLabels(root, labels) {
    var own = root.labels;
    for (var i = 0; i < labels.length; i += 1) {
      var at = labels[i].indexOf(":");
      var key = labels[i].slice(0, at);
      if (!own || !Object.prototype.hasOwnProperty.call(own, key) ||
          own[key] !== labels[i].slice(at + 1)) {
        return false;
      }
    }
    return true;
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
    view.labels = parseLabels(params.getAll("label"));
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
    labelsOf(view).forEach(function (label) { params.append("label", label); });
    if (view.q) params.set("q", view.q);
    // ":" and "/" need no escape in a fragment: "#label=team:infra" reads as it is typed.
    var text = params.toString().replace(/%3A/gi, ":").replace(/%2F/gi, "/");
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
    if (view.labels && view.labels.length && !hasLabels(root, view.labels)) return false;
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

  // --- why a root needs a person ------------------------------------------------------------

  // Per root object (an unchanged root is the same object from frame to frame), like searchText.
  var failureCache = new WeakMap();
  var attentionCache = new WeakMap();

  /*
   * What failed in a root: its graph's failed stages and tools in the graph's order, each
   * {id, name, kind, message, type} ("" where the scheduler gave no error, C3). [] without a
   * graph or a failure.
   */
  function failuresOf(root) {
    if (!root.graph) return [];
    var found = failureCache.get(root);
    if (found === undefined) {
      found = [];
      root.graph.nodes.forEach(function (node) {
        if (node.status !== "failed") return;
        var error = node.error || {};
        found.push({
          id: node.id,
          name: node.name,
          kind: node.kind,
          message: error.message || "",
          type: error.type || "",
        });
      });
      failureCache.set(root, found);
    }
    return found;
  }

  function asksQuestion(root) {
    if (root.reason === "awaiting_input") return true;
    if (!root.graph) return false;
    if (root.graph.runPrompts && root.graph.runPrompts.length) return true;
    return root.graph.nodes.some(function (node) { return Boolean(node.pendingPrompt); });
  }

  /*
   * The state a card shows: the root's state, except that a root that is idle yet needs
   * attention is a settled failure (its executor ended on a failure, C3) and reads "failed",
   * never "idle · nothing to do".
   */
  function shownState(root) {
    return root.state === "idle" && root.needsAttention ? "failed" : root.state;
  }

  /*
   * Why a root needs a person, in words, or "" when it needs none: "waiting for input" (blocked
   * on input, or a question pending while other work runs), "failed at <stage>" (the first
   * failed stage or tool), "needs intervention", "failed" (a settled failure without a graph),
   * the blocked reason in words, else "needs attention" (flagged while working).
   */
  function attentionOf(root) {
    if (!needsAttention(root)) return "";
    var why = attentionCache.get(root);
    if (why === undefined) {
      var failures = failuresOf(root);
      if (asksQuestion(root)) why = "waiting for input";
      else if (failures.length) why = "failed at " + failures[0].name;
      else if (root.reason === "manual_intervention") why = "needs intervention";
      else if (root.state === "idle") why = "failed";
      else if (root.state === "blocked") why = words(root.reason);
      else why = "needs attention";
      attentionCache.set(root, why);
    }
    return why;
  }

  // The headline's order: a question, an intervention, a failure, the rest.
  function whyRank(why) {
    if (why === "waiting for input") return 0;
    if (why === "needs intervention") return 1;
    if (why === "failed" || why.indexOf("failed at ") === 0) return 2;
    return 3;
  }

  var HEADLINE_PARTS = 3;

  /*
   * What needs a person among `roots`, for the page's headline: {count, parts: [{why, count}],
   * text}, text like "2 need attention: 1 waiting for input, 1 failed at deploy" ("" when
   * nothing does). The reasons are grouped, questions first, then interventions, then failures,
   * each rank by count (most first), then first seen; at most HEADLINE_PARTS of them, the rest
   * counted ("and 4 more"). One pass over the roots: O(roots).
   */
  function headline(roots) {
    var counts = new Map();
    var total = 0;
    for (var i = 0; i < roots.length; i += 1) {
      var why = attentionOf(roots[i]);
      if (!why) continue;
      total += 1;
      counts.set(why, (counts.get(why) || 0) + 1);
    }
    var parts = [];
    var order = 0;
    counts.forEach(function (number, reason) {
      parts.push({ why: reason, count: number, rank: whyRank(reason), order: order });
      order += 1;
    });
    parts.sort(function (a, b) {
      return a.rank - b.rank || b.count - a.count || a.order - b.order;
    });
    var shown = parts.slice(0, HEADLINE_PARTS).map(function (part) {
      return { why: part.why, count: part.count };
    });
    var text = "";
    if (total) {
      text = total + (total === 1 ? " needs attention" : " need attention") + ": " +
        shown.map(function (part) { return part.count + " " + part.why; }).join(", ");
      var rest = 0;
      parts.slice(HEADLINE_PARTS).forEach(function (part) { rest += part.count; });
      if (rest) text += ", and " + rest + " more";
    }
    return { count: total, parts: shown, text: text };
  }

  /* Words for a view, for the list's caption: "blocked · waiting for input · matching “db”". */
  function describeView(view) {
    var parts = [];
    if (view.group) parts.push(view.group === "attention" ? "needs attention" : view.group);
    if (view.state) parts.push(view.state);
    if (view.reason) parts.push(words(view.reason));
    if (view.attention && view.group !== "attention") parts.push("needs attention");
    labelsOf(view).forEach(function (label) { parts.push(label); });
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
    parseLabel: parseLabel,
    parseLabels: parseLabels,
    failuresOf: failuresOf,
    shownState: shownState,
    attentionOf: attentionOf,
    headline: headline,
  };
  if (typeof module === "object" && module.exports) {
    module.exports = api;
  } else {
    global.WorkflowHubViews = api;
  }
})(typeof globalThis !== "undefined" ? globalThis : this);
