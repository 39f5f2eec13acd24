// Folds frame sequences with the dashboard's fold module and prints what it holds after each
// frame, and its one-line description of each hook event. Input: one JSON object per line,
// {"frames": [...], "events": [...], "feed": [...], "feedLimit": n}; output: one JSON object per
// line, {"results", "descriptions", "feed"}.
// tests/test_dashboard_fold.py runs the same frames through the Python ActivityView.
"use strict";
const path = require("path");
const readline = require("readline");

const fold = require(path.resolve(process.argv[2]));
const lines = readline.createInterface({ input: process.stdin, terminal: false });

lines.on("line", (line) => {
  const input = JSON.parse(line);
  const view = new fold.ActivityView();
  const results = input.frames.map((frame) => {
    const change = view.apply(frame);
    return {
      change: { kind: change.kind, rootIds: change.rootIds, rejection: change.rejection },
      availability: view.availability,
      detail: view.detail,
      cursor: view.cursor,
      roots: view.roots(),
      known: view.known(),
      superseded: view.superseded,
      inSync: view.inSync,
      rejected: view.rejected,
      aggregate: fold.aggregate(view),
    };
  });
  const descriptions = input.events.map((event) => fold.describeEvent(event));
  // The feed: hook events in arrival order ({"type", "data"}; type "dropped" as the server's).
  const feed = new fold.EventFeed(input.feedLimit || 50);
  (input.feed || []).forEach((item) => {
    if (item.type === "dropped") feed.drop(item.data.count);
    else feed.push(item.type, item.data);
  });
  process.stdout.write(JSON.stringify({ results, descriptions, feed: feed.entries }) + "\n");
});
