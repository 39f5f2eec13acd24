// Runs the dashboard's view module (static/views.js) on requests, one JSON object per line:
// {"roots": [...wire roots], "view": {...}, "fragment": "#...", "format": {...view}}; answers one
// JSON object per line: {"shown": [ids in the page's order], "counts": {...}, "parsed": view,
// "formatted": "#...", "headline": {count, parts, text}, "why": [attentionOf per root],
// "shownStates": [shownState per root], "failures": [failuresOf per root]}. tests/test_dashboard_views.py compares them with the documented rules.
"use strict";
const path = require("path");
const readline = require("readline");

const views = require(path.resolve(process.argv[2]));
const lines = readline.createInterface({ input: process.stdin, terminal: false });

lines.on("line", (line) => {
  const input = JSON.parse(line);
  const selection = views.select(input.roots || [], input.view || views.emptyView());
  process.stdout.write(
    JSON.stringify({
      shown: selection.roots.map((root) => root.rootRunId),
      counts: selection.counts,
      parsed: views.parseView(input.fragment || ""),
      formatted: views.formatView(input.format || views.emptyView()),
      reparsed: views.parseView(views.formatView(input.format || views.emptyView())),
      headline: views.headline(input.roots || []),
      why: (input.roots || []).map(views.attentionOf),
      shownStates: (input.roots || []).map(views.shownState),
      failures: (input.roots || []).map(views.failuresOf),
    }) + "\n"
  );
});
