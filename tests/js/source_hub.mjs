// A hub of the source contract written in JavaScript, behind the conformance kit's JSON-lines
// protocol (docs/conformance.md): publishers (P1-P9), callback observers with a bounded queue
// (O1-O8), the hub's lifetime and diagnostics (L1-L3) and the hook queue (K1-K2). Nothing beyond
// the source documents: no resuming (R) and no streams (O9), so its hello declares the source
// profile only. Values travel in the wire format and are kept as the JSON they arrived as.
//
// Delivery happens only in `settle`, as the protocol asks: each observer's consumer takes frames
// from its queue in order until the queue is empty or the consumer is stalled inside a frame,
// then the hook queue is handed to the recording dispatcher.
//
// tests/testing/test_conformance_js.py plants bugs in copies of this file by replacing exact
// lines: keep the lines it names as they are.
import { randomUUID } from "node:crypto";
import { createInterface } from "node:readline";

const PROCESS = randomUUID();
let epochs = 0;

function freshEpoch() {
  epochs += 1;
  return `${PROCESS}-${epochs}`;
}

class Hub {
  constructor({ queueLimit, diagnosticsLimit }) {
    this.queueLimit = queueLimit;
    this.diagnosticsLimit = diagnosticsLimit;
    this.epoch = freshEpoch();
    this.revision = 0;
    this.availability = "unavailable";
    this.roots = new Map();
    this.disposed = false;
    this.publishers = [];
    this.observers = [];
    this.diagnostics = [];
    this.hookQueue = [];
    this.hookEvents = [];
    this.bound = false;
  }

  cursor() {
    return { epoch: this.epoch, revision: this.revision };
  }

  snapshotFrame() {
    const frame = { kind: "snapshot", cursor: this.cursor(), availability: this.availability };
    if (this.availability === "ready") frame.roots = [...this.roots.values()];
    return frame;
  }

  record(kind) {
    this.diagnostics.push({ kind, cursor: this.cursor() });
    if (this.diagnostics.length > this.diagnosticsLimit) {
      this.diagnostics.splice(0, this.diagnostics.length - this.diagnosticsLimit);
    }
  }

  recordAvailability() {
    if (this.availability === "recovering") this.record("SourceRecovering");
    if (this.availability === "unavailable") this.record("SourceUnavailable");
  }

  enqueue(observer, frame) {
    observer.pending.push(frame);
  }

  send(frame) {
    for (const observer of this.observers) {
      if (observer.disposed) continue;
      if (observer.pending.length >= this.queueLimit) {
        observer.pending = [this.snapshotFrame()];
        this.record("ObserverOverflow");
      } else {
        this.enqueue(observer, frame);
      }
    }
  }

  isCurrent(publisher) {
    return !publisher.disposed && !this.disposed && publisher.epoch === this.epoch;
  }

  // The publisher if it is current, else null after recording PublisherFenced (P2).
  current(index) {
    const publisher = this.publishers[index];
    if (this.isCurrent(publisher)) return publisher;
    this.record("PublisherFenced");
    return null;
  }

  advance() {
    this.revision += 1;
    return this.cursor();
  }

  registerPublisher() {
    if (this.disposed) {
      this.publishers.push({ epoch: null, disposed: false });
      return;
    }
    this.epoch = freshEpoch();
    this.revision = 0;
    this.availability = "unavailable";
    this.roots = new Map();
    this.record("SourceUnavailable");
    this.send(this.snapshotFrame());
    this.publishers.push({ epoch: this.epoch, disposed: false });
  }

  publishSnapshot(index, availability, roots) {
    if (this.current(index) === null) return null;
    if (availability === "recovering") this.record("SourceRecovering");
    if (availability === "unavailable") this.record("SourceUnavailable");
    const cursor = this.advance();
    this.availability = availability;
    this.roots = new Map();
    for (const root of roots ?? []) this.roots.set(root.rootRunId, root);
    this.send(this.snapshotFrame());
    return cursor;
  }

  publishChanged(index, root) {
    const publisher = this.current(index);
    if (publisher === null) return null;
    const cursor = this.advance();
    this.roots.set(root.rootRunId, root);
    this.send({ kind: "changed", cursor, root });
    this.hookQueue.push({ event: { type: "workflow_activity_changed", cursor, root }, publisher });
    return cursor;
  }

  publishRemoved(index, rootRunId) {
    if (this.current(index) === null) return null;
    const cursor = this.advance();
    this.roots.delete(rootRunId);
    this.send({ kind: "removed", cursor, rootRunId });
    return cursor;
  }

  publishLifecycle(index, input) {
    const publisher = this.current(index);
    if (publisher === null) return null;
    const cursor = this.advance();
    this.hookQueue.push({ event: { ...input, cursor }, publisher });
    const target = input.target;
    if (target.kind === "stage" && target.status === "completed") {
      const event = { ...input, type: "workflow_stage_completed", cursor };
      this.hookQueue.push({ event, publisher });
    }
    return cursor;
  }

  publishHeartbeat(index, event) {
    const publisher = this.current(index);
    if (publisher !== null) this.hookQueue.push({ event, publisher });
  }

  disposePublisher(index) {
    const publisher = this.publishers[index];
    if (publisher.disposed) return;
    const current = this.isCurrent(publisher);
    publisher.disposed = true;
    if (!current) {
      this.record("PublisherFenced");
      return;
    }
    this.advance();
    this.availability = "unavailable";
    this.roots = new Map();
    this.record("SourceUnavailable");
    this.send(this.snapshotFrame());
  }

  observe(failing) {
    const observer = {
      received: [],
      pending: [],
      failing,
      stalled: false,
      inFlight: false,
      disposed: false,
    };
    this.observers.push(observer);
    if (this.disposed) {
      observer.disposed = true;
      this.record("ObserverDisposed");
      return;
    }
    this.recordAvailability();
    observer.pending.push(this.snapshotFrame());
  }

  disposeObserver(index) {
    const observer = this.observers[index];
    if (observer.disposed) return;
    observer.disposed = true;
    observer.pending = [];
    this.record("ObserverDisposed");
  }

  dispose() {
    if (this.disposed) return;
    this.disposed = true;
    this.observers.forEach((_, index) => this.disposeObserver(index));
    this.hookQueue = [];
    this.bound = false;
  }

  settle() {
    for (const observer of this.observers) {
      while (observer.pending.length > 0 && !observer.inFlight && !observer.disposed) {
        observer.received.push(observer.pending.shift());
        if (observer.failing) this.record("ObserverDeliveryFailed");
        else if (observer.stalled) observer.inFlight = true;
      }
    }
    if (this.bound) {
      for (const { event, publisher } of this.hookQueue) {
        if (this.isCurrent(publisher)) this.hookEvents.push(event);
      }
      this.hookQueue = [];
    }
  }
}

let hub = null;

function handle(request) {
  const op = request.op;
  if (op === "hello") return { profiles: ["source"] };
  if (op === "start") {
    hub = new Hub(request);
    return {};
  }
  if (op === "close") {
    hub = null;
    return {};
  }
  if (hub === null) throw new Error(`${op} before start`);
  const cursor = (value) => (value === null ? {} : { cursor: value });
  switch (op) {
    case "registerPublisher":
      hub.registerPublisher();
      return {};
    case "publishSnapshot":
      return cursor(hub.publishSnapshot(request.publisher, request.availability, request.roots));
    case "publishChanged":
      return cursor(hub.publishChanged(request.publisher, request.root));
    case "publishRemoved":
      return cursor(hub.publishRemoved(request.publisher, request.rootRunId));
    case "publishLifecycle":
      return cursor(hub.publishLifecycle(request.publisher, request.event));
    case "publishHeartbeat":
      hub.publishHeartbeat(request.publisher, request.event);
      return {};
    case "disposePublisher":
      hub.disposePublisher(request.publisher);
      return {};
    case "observe":
      if (request.style !== "callback") throw new Error("only callback observers (source profile)");
      hub.observe(request.failing === true);
      return { resumed: false };
    case "stall":
      hub.observers[request.observer].stalled = true;
      return {};
    case "release": {
      const observer = hub.observers[request.observer];
      observer.stalled = false;
      observer.inFlight = false;
      return {};
    }
    case "disposeObserver":
      hub.disposeObserver(request.observer);
      return {};
    case "bindDispatcher":
      if (!hub.disposed) hub.bound = true;
      return {};
    case "disposeHub":
      hub.dispose();
      return {};
    case "settle":
      hub.settle();
      return {};
    case "frames":
      return { frames: hub.observers[request.observer].received };
    case "pending":
      return { pending: hub.observers[request.observer].pending.length };
    case "snapshot":
      return { snapshot: hub.snapshotFrame() };
    case "diagnostics":
      return { diagnostics: hub.diagnostics };
    case "hookEvents":
      return { events: hub.hookEvents };
    default:
      throw new Error(`unknown op ${op}`);
  }
}

createInterface({ input: process.stdin }).on("line", (line) => {
  let id = null;
  let answer;
  try {
    const request = JSON.parse(line);
    id = request.id ?? null;
    answer = { id, ok: true, ...handle(request) };
  } catch (error) {
    answer = { id, ok: false, error: String(error) };
  }
  process.stdout.write(JSON.stringify(answer) + "\n");
});
