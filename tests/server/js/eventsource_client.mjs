// Node's `eventsource` package (the WhatWG EventSource for Node) on a hub's /v1/activity, and
// `eventsource-parser` (the parser inside it) on the same bytes. One JSON line per happening on
// stdout: {"open"}, {"event", "id"}, {"error"}, {"retry"}; `t` is milliseconds since start.
// Usage: node eventsource_client.mjs URL
import { EventSource } from "eventsource";
import { createParser } from "eventsource-parser";

const url = process.argv[2];
const start = performance.now();
const say = (fields) =>
  process.stdout.write(JSON.stringify({ ...fields, t: performance.now() - start }) + "\n");

// The raw stream through the parser: what the server asks in its retry: field.
const response = await fetch(url);
const parser = createParser({
  onRetry: (interval) => say({ retry: interval }),
  onEvent: () => {},
});
const reader = response.body.getReader();
const decoder = new TextDecoder();
const { value } = await reader.read();
parser.feed(decoder.decode(value));
await reader.cancel();

// The client itself: it reconnects on its own, sending Last-Event-ID.
const source = new EventSource(url);
source.onopen = () => say({ open: true });
source.onerror = () => say({ error: true });
for (const name of ["snapshot", "changed", "removed"]) {
  source.addEventListener(name, (event) => say({ event: name, id: event.lastEventId }));
}
process.stdin.on("end", () => {
  source.close();
  process.exit(0);
});
process.stdin.resume();
