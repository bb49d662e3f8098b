// What the durable in-process bus promises beyond the contract (which it runs
// in in-process.test.ts): events and positions survive a restart, clean or
// kill -9 of a real process; a torn or damaged tail is dropped, never a crash;
// retention deletes what every group has passed and bounds the disk; one
// process per directory.

import { spawn, type ChildProcess } from "node:child_process";
import { appendFile, mkdtemp, readdir, readFile, rm, stat, truncate, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { InProcessEventBus, type BusLogEntry, type DurableEventBusOptions, type ReceivedEvent } from "../src/index.js";

const DEADLINE_MS = 30_000;
const CHILD = path.join(__dirname, "support", "bus-child.js");

let root: string;
beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), "bus-durable-"));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

let counter = 0;
function freshDir(): string {
  return path.join(root, `bus-${++counter}`);
}

/** Opens a durable bus whose warnings land in `warnings`. */
async function openDurable(dir: string, warnings: BusLogEntry[] = [], options: Partial<DurableEventBusOptions> = {}): Promise<InProcessEventBus> {
  return InProcessEventBus.open({ dir, logger: (entry) => warnings.push(entry), ...options });
}

async function until(condition: () => boolean | Promise<boolean>, what: string, deadlineMs = DEADLINE_MS): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const text = (s: string) => new TextEncoder().encode(s);
const valueText = (event: { value: Uint8Array }) => new TextDecoder().decode(event.value);

/** Subscribes `group` and records what it gets; `accept` may refuse (throw) to leave events unhandled. */
async function record(bus: InProcessEventBus, group: string, topics: string[], accept: (event: ReceivedEvent) => void = () => {}, fromBeginning = true) {
  const received: ReceivedEvent[] = [];
  const subscription = await bus.subscribe({
    group,
    topics,
    fromBeginning,
    handler: async (event) => {
      accept(event);
      received.push(event);
    },
  });
  return { received, subscription };
}

/** The segment files of one partition, oldest first. */
async function segments(dir: string, topic: string, partition = 0): Promise<string[]> {
  const partitionDir = path.join(dir, "topics", topic, String(partition));
  return (await readdir(partitionDir)).filter((name) => name.endsWith(".log")).sort().map((name) => path.join(partitionDir, name));
}

describe("durable in-process bus: restarts in this process", () => {
  it("delivers after a restart what a group had not handled, in order per key, and nothing it had", async () => {
    const dir = freshDir();
    let bus = await openDurable(dir);
    await bus.ensureTopics(["orders"]);
    const events = Array.from({ length: 60 }, (_, i) => ({ key: `k${i % 4}`, value: text(String(i)) }));
    await bus.publish("orders", events.slice(0, 30));

    // The group handles the first 30, then stops; 30 more come while it is away.
    const first = await record(bus, "g", ["orders"]);
    await until(() => first.received.length >= 30, "first 30 handled");
    await first.subscription.stop();
    await bus.publish("orders", events.slice(30));
    await bus.close();

    bus = await openDurable(dir);
    const second = await record(bus, "g", ["orders"]);
    // A group that never consumed before starts at the beginning, and one with fromBeginning false at the end.
    const fresh = await record(bus, "fresh", ["orders"]);
    const late = await record(bus, "late", ["orders"], () => {}, false);
    await until(() => second.received.length >= 30 && fresh.received.length >= 60, "the rest delivered");
    expect(second.received.map(valueText).sort((a, b) => Number(a) - Number(b))).toEqual(events.slice(30).map(valueText));
    for (const key of ["k0", "k1", "k2", "k3"]) {
      const sent = events.filter((e) => e.key === key).map(valueText);
      expect(second.received.filter((e) => e.key === key).map(valueText)).toEqual(sent.filter((v) => Number(v) >= 30));
      expect(fresh.received.filter((e) => e.key === key).map(valueText)).toEqual(sent);
    }
    expect(late.received).toEqual([]);
    await bus.publish("orders", [{ key: "k0", value: text("60") }]);
    await until(() => late.received.length === 1 && second.received.length === 31, "new event to every group");
    await bus.close();
  });

  it("keeps an event whose handler kept failing for the group after a restart", async () => {
    const dir = freshDir();
    let bus = await openDurable(dir, [], { backoff: { initialMs: 5, maxMs: 20 } });
    await bus.ensureTopics(["t"]);
    let attempts = 0;
    await bus.subscribe({
      group: "g",
      topics: ["t"],
      handler: async () => {
        attempts++;
        throw new Error("relay down");
      },
    });
    await bus.publish("t", [{ key: "k", value: text("retry me"), headers: { "event-id": "evt_1" } }]);
    await until(() => attempts >= 2, "redelivered at least once");
    await bus.close();

    bus = await openDurable(dir);
    const again = await record(bus, "g", ["t"]);
    await until(() => again.received.length >= 1, "delivered after the restart");
    expect(again.received.map(valueText)).toEqual(["retry me"]);
    expect(again.received[0]!.headers).toEqual({ "event-id": "evt_1" });
    await bus.close();
  });

  it("keeps topics and their partition count across restarts", async () => {
    const dir = freshDir();
    let bus = await openDurable(dir, [], { partitions: 5 });
    await bus.ensureTopics(["five"]);
    await bus.close();
    bus = await openDurable(dir, [], { partitions: 2 });
    // No ensureTopics: the topic exists from the first run, with its 5 partitions.
    await bus.publish("five", [{ key: "k", value: text("x") }]);
    expect((await readdir(path.join(dir, "topics", "five"))).sort()).toEqual(["0", "1", "2", "3", "4"]);
    await bus.close();
  });

  it("refuses an event larger than 1 MiB, before appending any of its batch", async () => {
    const dir = freshDir();
    const bus = await openDurable(dir);
    await bus.ensureTopics(["t"]);
    await expect(
      bus.publish("t", [
        { key: "a", value: text("small") },
        { key: "b", value: new Uint8Array(1024 * 1024 + 1) },
      ]),
    ).rejects.toThrow(/at most/);
    const got = await record(bus, "g", ["t"]);
    await bus.publish("t", [{ key: "c", value: text("after") }]);
    await until(() => got.received.length >= 1, "the next event");
    expect(got.received.map(valueText)).toEqual(["after"]);
    await bus.close();
  });
});

describe("durable in-process bus: reads of the newest events from memory", () => {
  it("a group keeping up and one starting far behind (past the tail kept in memory) get every event, whole and in order", async () => {
    const dir = freshDir();
    const bus = await openDurable(dir, [], { partitions: 1 });
    await bus.ensureTopics(["t"]);
    const live = await record(bus, "live", ["t"]);
    // 3,000 events of about 250 bytes: far more than the newest 256 KiB kept decoded.
    const expected = Array.from({ length: 3000 }, (_, i) => `${i}:${"v".repeat(200)}`);
    for (let i = 0; i < expected.length; i += 100) {
      await bus.publish("t", expected.slice(i, i + 100).map((v, j) => ({ key: `k${(i + j) % 7}`, value: text(v), headers: { n: String(i + j) } })));
    }
    const late = await record(bus, "late", ["t"]);
    await until(() => live.received.length === 3000 && late.received.length === 3000, "both groups handled everything");
    for (const { received } of [live, late]) {
      expect(received.map(valueText)).toEqual(expected);
      expect(received.map((e) => e.headers.n)).toEqual(expected.map((_, i) => String(i)));
      expect(received.map((e) => e.key)).toEqual(expected.map((_, i) => `k${i % 7}`));
    }
    // A handler's copy is its own: changing it changes nothing another group gets.
    live.received[2999]!.value.fill(0);
    const again = await record(bus, "again", ["t"]);
    await until(() => again.received.length === 3000, "a third group handled everything");
    expect(valueText(again.received[2999]!)).toBe(expected[2999]);
    await bus.close();
  });
});

describe("durable in-process bus: a torn or damaged log", () => {
  /** A bus with one partition holding "e0", "e1", "e2"; returns the segment file. */
  async function threeEvents(dir: string): Promise<string> {
    const bus = await openDurable(dir, [], { partitions: 1 });
    await bus.ensureTopics(["t"]);
    await bus.publish("t", ["e0", "e1", "e2"].map((v) => ({ key: "k", value: text(v), headers: { h: v } })));
    await bus.close();
    const [file] = await segments(dir, "t");
    return file!;
  }

  /** Reopens the log, reads it whole, publishes one more "new"; `newBefore`: how many "new" the log already holds. */
  async function valuesAfterReopen(dir: string, warnings: BusLogEntry[], newBefore = 0): Promise<string[]> {
    const bus = await openDurable(dir, warnings, { partitions: 1 });
    const got = await record(bus, `reader-${++counter}`, ["t"]);
    const published = ["e0", "e1", "e2", "new"];
    await bus.publish("t", [{ key: "k", value: text("new") }]);
    // Until this one arrives, not an older "new" read first (the reader may not have reached the end yet).
    await until(() => got.received.filter((e) => valueText(e) === "new").length > newBefore, "the event published after reopening");
    await bus.close();
    expect(published).toEqual(expect.arrayContaining(got.received.map(valueText)));
    return got.received.map(valueText);
  }

  it("drops a last record cut off at any byte, keeps the rest, and appends after it", async () => {
    const whole = await threeEvents(freshDir());
    const size = (await stat(whole)).size;
    const recordSize = size / 3; // three records of the same size
    for (let cut = size - recordSize; cut < size; cut += 3) {
      const dir = freshDir();
      const file = await threeEvents(dir);
      await truncate(file, cut);
      const warnings: BusLogEntry[] = [];
      expect(await valuesAfterReopen(dir, warnings)).toEqual(["e0", "e1", "new"]);
      if (cut > size - recordSize) {
        expect(warnings).toContainEqual(expect.objectContaining({ message: expect.stringMatching(/torn or damaged record/) }));
      }
      // And once more: the new record was appended where the torn one was cut off.
      expect(await valuesAfterReopen(dir, [], 1)).toEqual(["e0", "e1", "new", "new"]);
    }
  });

  it("drops zeros or garbage after the last record (a power loss, a torn write)", async () => {
    for (const tail of [Buffer.alloc(4096), Buffer.from("\x00\x00\x00\x30garbage that is not a record at all, of some length"), Buffer.from([0xff, 0xff, 0xff, 0xff, 1, 2, 3])]) {
      const dir = freshDir();
      const file = await threeEvents(dir);
      await appendFile(file, tail);
      const warnings: BusLogEntry[] = [];
      expect(await valuesAfterReopen(dir, warnings)).toEqual(["e0", "e1", "e2", "new"]);
      expect(warnings).toContainEqual(expect.objectContaining({ fields: expect.objectContaining({ bytes_dropped: tail.length }) }));
    }
  });

  it("ends the log at a damaged record (checksum) and deletes the segments after it", async () => {
    const dir = freshDir();
    const bus = await openDurable(dir, [], { partitions: 1, segmentBytes: 1 });
    await bus.ensureTopics(["t"]);
    await (await record(bus, "pin", ["t"])).subscription.stop(); // a group at 0 keeps every segment
    for (const v of ["e0", "e1", "e2", "e3"]) await bus.publish("t", [{ key: "k", value: text(v) }]);
    await bus.close();
    const files = await segments(dir, "t");
    expect(files).toHaveLength(4); // a new segment for each write past 1 byte
    const data = await readFile(files[1]!);
    data[data.length - 1] = data[data.length - 1]! ^ 0xff; // the value's last byte: the CRC no longer matches
    await writeFile(files[1]!, data);
    const warnings: BusLogEntry[] = [];
    const reopened = await openDurable(dir, warnings, { partitions: 1, segmentBytes: 1 });
    const got = await record(reopened, "g", ["t"]);
    await reopened.publish("t", [{ key: "k", value: text("new") }]);
    await until(() => got.received.length >= 2, "e0 and the new event");
    expect(got.received.map(valueText)).toEqual(["e0", "new"]);
    expect(warnings.map((w) => w.message)).toEqual(
      expect.arrayContaining([expect.stringMatching(/torn or damaged record/), expect.stringMatching(/deleted \d+ segment file/)]),
    );
    await reopened.close();
  });

  it("starts groups over when groups.json is unreadable, with a warning", async () => {
    const dir = freshDir();
    let bus = await openDurable(dir);
    await bus.ensureTopics(["t"]);
    await bus.publish("t", [{ key: "k", value: text("once") }]);
    const first = await record(bus, "g", ["t"]);
    await until(() => first.received.length === 1, "handled");
    await bus.close();
    await writeFile(path.join(dir, "groups.json"), '{"format":1,"groups":{"g":');

    const warnings: BusLogEntry[] = [];
    bus = await openDurable(dir, warnings);
    const again = await record(bus, "g", ["t"]);
    await until(() => again.received.length === 1, "delivered again: at least once");
    expect(warnings).toContainEqual(expect.objectContaining({ message: expect.stringMatching(/group positions unreadable/) }));
    await bus.close();
  });
});

describe("durable in-process bus: retention", () => {
  const options = { partitions: 1, segmentBytes: 1024, retentionCheckMs: 50 };
  const value = text("x".repeat(200));

  it("deletes the segments every group has passed, never the active one", async () => {
    const dir = freshDir();
    const bus = await openDurable(dir, [], options);
    await bus.ensureTopics(["t"]);
    const a = await record(bus, "a", ["t"]);
    const b = await record(bus, "b", ["t"]);
    await b.subscription.stop(); // b has handled nothing
    for (let i = 0; i < 40; i++) await bus.publish("t", [{ key: "k", value }]);
    await until(() => a.received.length === 40, "a handled everything");
    const kept = (await segments(dir, "t")).length;
    expect(kept).toBeGreaterThan(5); // b still needs them all

    const b2 = await record(bus, "b", ["t"]);
    await until(() => b2.received.length === 40, "b handled everything");
    await until(async () => (await segments(dir, "t")).length === 1, "only the active segment left");
    await bus.close();
  });

  it("bounds a topic's bytes: beyond retentionBytes a lagging group loses the oldest events, with warnings", async () => {
    const dir = freshDir();
    const warnings: BusLogEntry[] = [];
    const bus = await openDurable(dir, warnings, { ...options, retentionBytes: 4096 });
    await bus.ensureTopics(["t"]);
    const lagging = await record(bus, "lagging", ["t"]);
    await lagging.subscription.stop();
    for (let i = 0; i < 60; i++) await bus.publish("t", [{ key: "k", value: text(`${i}:${"x".repeat(200)}`) }]);
    await until(async () => {
      const files = await segments(dir, "t");
      const sizes = await Promise.all(files.map(async (file) => (await stat(file)).size));
      return sizes.reduce((sum, size) => sum + size, 0) <= 4096 + 1024;
    }, "disk use within the cap (plus the active segment)");
    expect(warnings).toContainEqual(expect.objectContaining({ message: expect.stringMatching(/over its retention size/), fields: expect.objectContaining({ groups: "lagging" }) }));

    const resumed = await record(bus, "lagging", ["t"]);
    await until(() => resumed.received.some((e) => valueText(e).startsWith("59:")), "the newest event");
    const first = Number(valueText(resumed.received[0]!).split(":")[0]);
    expect(first).toBeGreaterThan(0);
    expect(resumed.received.map((e) => Number(valueText(e).split(":")[0]))).toEqual(Array.from({ length: 60 - first }, (_, i) => first + i));
    expect(warnings).toContainEqual(expect.objectContaining({ message: expect.stringMatching(/skipping events/), fields: expect.objectContaining({ group: "lagging", skipped: first }) }));
    await bus.close();
  });

  /** Whether any file under the bus directory holds `needle` (a key, a subscriber id). */
  async function onDisk(dir: string, needle: string): Promise<boolean> {
    const walk = async (at: string): Promise<boolean> => {
      for (const entry of await readdir(at, { withFileTypes: true })) {
        const full = path.join(at, entry.name);
        if (entry.isDirectory() ? await walk(full) : (await readFile(full).catch(() => Buffer.alloc(0))).includes(needle)) return true;
      }
      return false;
    };
    return walk(dir);
  }

  // Issue 16, defect 11d: an erasure left the subscriber's id in the log for
  // as long as its segment stayed active, i.e. until 8 MiB of events followed,
  // which on a quiet platform is never.
  it("deletes events every group has handled at the next pass, though their segment is far from full", async () => {
    const dir = freshDir();
    const bus = await openDurable(dir, [], { ...options, segmentBytes: 8 * 1024 * 1024 });
    try {
      await bus.ensureTopics(["t"]);
      const a = await record(bus, "a", ["t"]);
      const b = await record(bus, "b", ["t"]);
      await b.subscription.stop(); // b has handled nothing yet
      await bus.publish("t", [{ key: "sub_erasedsubscriber01", value }]);
      await until(() => a.received.length === 1, "a handled it");
      expect(await onDisk(dir, "sub_erasedsubscriber01")).toBe(true);

      const b2 = await record(bus, "b", ["t"]);
      await until(() => b2.received.length === 1, "b handled it");
      await until(async () => !(await onDisk(dir, "sub_erasedsubscriber01")), "the handled event gone from every file", 10_000);
      // The log goes on after the segment it was in.
      await bus.publish("t", [{ key: "k", value }]);
      await until(() => a.received.length === 2 && b2.received.length === 2, "the next event");
    } finally {
      await bus.close();
    }
  });

  it("closes the active segment once its first event is segmentMaxAgeMs old, so handled events go while a group never catches up", async () => {
    const dir = freshDir();
    const bus = await openDurable(dir, [], { ...options, segmentBytes: 8 * 1024 * 1024, segmentMaxAgeMs: 1, backoff: { initialMs: 10, maxMs: 20 } });
    let newest = "";
    try {
      await bus.ensureTopics(["t"]);
      // The group handles the id, then keeps failing on whatever event is newest: it is never caught up.
      const g = await record(bus, "g", ["t"], (event) => {
        if (valueText(event) === newest) throw new Error("not yet");
      });
      await bus.publish("t", [{ key: "sub_erasedsubscriber02", value }]);
      await until(() => g.received.length === 1, "g handled the id");
      for (let i = 0; i < 100 && (await onDisk(dir, "sub_erasedsubscriber02")); i++) {
        newest = `blocking-${i}`;
        await bus.publish("t", [{ key: "k", value: text(newest) }]);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(await onDisk(dir, "sub_erasedsubscriber02")).toBe(false);
    } finally {
      newest = "";
      await bus.close();
    }
  });

  it("deletes events older than retentionMs even if a group has not handled them, with a warning naming it", async () => {
    const dir = freshDir();
    const warnings: BusLogEntry[] = [];
    const bus = await openDurable(dir, warnings, { ...options, segmentBytes: 8 * 1024 * 1024, retentionMs: 1 });
    try {
      await bus.ensureTopics(["t"]);
      const stopped = await record(bus, "stopped", ["t"]);
      await stopped.subscription.stop();
      await bus.publish("t", [{ key: "sub_erasedsubscriber03", value }]);
      await until(async () => !(await onDisk(dir, "sub_erasedsubscriber03")), "the old event gone", 10_000);
      expect(warnings).toContainEqual(
        expect.objectContaining({ message: expect.stringMatching(/older than the log's retention/), fields: expect.objectContaining({ groups: "stopped" }) }),
      );
    } finally {
      await bus.close();
    }
  });

  it("forgets a group that has not consumed for the group retention, so it pins nothing", async () => {
    const dir = freshDir();
    const warnings: BusLogEntry[] = [];
    const bus = await openDurable(dir, warnings, { ...options, groupRetentionMs: 1 });
    await bus.ensureTopics(["t"]);
    const gone = await record(bus, "gone", ["t"]);
    await gone.subscription.stop();
    for (let i = 0; i < 20; i++) await bus.publish("t", [{ key: "k", value }]);
    await until(async () => (await segments(dir, "t")).length === 1, "segments deleted once the idle group is forgotten");
    expect(warnings).toContainEqual(expect.objectContaining({ message: expect.stringMatching(/forgot a consumer group/), fields: expect.objectContaining({ group: "gone" }) }));
    await bus.close();
  });
});

interface Child {
  child: ChildProcess;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr: string[];
}

function startChild(dir: string, report: string, mode: "stream" | "hold"): Child {
  const child = spawn(process.execPath, [CHILD, dir, report, mode], { stdio: ["ignore", "ignore", "pipe"] });
  const stderr: string[] = [];
  child.stderr!.on("data", (d) => stderr.push(String(d)));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  return { child, exited, stderr };
}

/** What the child reported: the highest seq whose publish resolved, and the seqs it handled in order. */
async function readReport(report: string): Promise<{ ready: boolean; published: number; handled: number[] }> {
  const lines = (await readFile(report, "utf8").catch(() => "")).split("\n");
  let published = -1;
  const handled: number[] = [];
  for (const line of lines) {
    if (line.startsWith("P ")) published = Math.max(published, Number(line.slice(2)));
    else if (line.startsWith("H ")) handled.push(Number(line.slice(2)));
  }
  return { ready: lines.includes("ready"), published, handled };
}

describe("durable in-process bus: a real process stopped or killed mid-stream", () => {
  /**
   * Runs the child until it has published and handled some, stops it with
   * `signal`, reopens its directory here and consumes as its group until every
   * event it reported published has been handled by one side or the other.
   */
  async function streamAndRestart(signal: "SIGTERM" | "SIGKILL") {
    const dir = freshDir();
    const report = `${dir}.report`;
    const child = startChild(dir, report, "stream");
    await until(async () => {
      if (child.child.exitCode !== null) throw new Error(`child exited: ${child.stderr.join("")}`);
      const r = await readReport(report);
      return r.published >= 10_000 && r.handled.length >= 2_000;
    }, "the child publishing and consuming");
    child.child.kill(signal);
    const exit = await child.exited;
    if (signal === "SIGTERM") expect(exit).toEqual({ code: 0, signal: null });
    else expect(exit.signal).toBe("SIGKILL");
    const before = await readReport(report);

    const warnings: BusLogEntry[] = [];
    const bus = await openDurable(dir, warnings);
    const redelivered: number[] = [];
    const keys: string[] = [];
    await bus.subscribe({
      group: "g",
      topics: ["stream"],
      handler: async (event) => {
        const seq = Number(valueText(event));
        expect(event.key).toBe(`k${seq % 7}`);
        expect(event.headers).toEqual({ seq: String(seq) });
        redelivered.push(seq);
        keys.push(event.key);
      },
    });
    const handledBefore = new Set(before.handled);
    await until(() => {
      const seen = new Set([...handledBefore, ...redelivered]);
      for (let seq = 0; seq <= before.published; seq++) if (!seen.has(seq)) return false;
      return true;
    }, "every event whose publish resolved handled before the stop or delivered after it");
    await bus.close();
    if (process.env.EVENTS_TEST_LOG) {
      const repeated = redelivered.filter((seq) => handledBefore.has(seq)).length;
      console.log(`${signal}: published ${before.published + 1}, handled before ${before.handled.length}, delivered after ${redelivered.length} (${repeated} again)`);
    }
    return { before, redelivered, handledBefore, warnings };
  }

  /** Per key the events come in publish (seq) order, and the restart picks up where the key's handled prefix ends. */
  function expectOrderPerKey(before: { handled: number[] }, redelivered: number[]): void {
    for (let k = 0; k < 7; k++) {
      const handled = before.handled.filter((seq) => seq % 7 === k);
      const after = redelivered.filter((seq) => seq % 7 === k);
      const ascending = (list: number[]) => list.every((seq, i) => i === 0 || seq > list[i - 1]!);
      expect(ascending(handled)).toBe(true);
      expect(ascending(after)).toBe(true);
      // Together they are the key's events without a gap: after the restart the
      // key continues right after (or, at least once, a little before) its last handled event.
      const all = [...new Set([...handled, ...after])].sort((a, b) => a - b);
      all.forEach((seq, i) => expect(seq).toBe(k + 7 * i));
      if (after.length > 0 && handled.length > 0) expect(after[0]!).toBeLessThanOrEqual(handled[handled.length - 1]! + 7);
    }
  }

  it("SIGTERM: a clean stop redelivers nothing that was handled and loses nothing published", async () => {
    const { before, redelivered, handledBefore } = await streamAndRestart("SIGTERM");
    expect(redelivered.filter((seq) => handledBefore.has(seq))).toEqual([]);
    expectOrderPerKey(before, redelivered);
  }, 120_000);

  it("kill -9: every published event not yet committed comes again, in order per key; only the uncommitted tail repeats", async () => {
    const { before, redelivered, handledBefore, warnings } = await streamAndRestart("SIGKILL");
    expectOrderPerKey(before, redelivered);
    // At least once: what repeats is, per key, a tail of what was handled (the
    // commit window), never an event from before a later committed one.
    for (let k = 0; k < 7; k++) {
      const handled = before.handled.filter((seq) => seq % 7 === k);
      const repeated = redelivered.filter((seq) => seq % 7 === k && handledBefore.has(seq));
      expect(repeated).toEqual(handled.slice(handled.length - repeated.length));
    }
    // A torn last write, if the kill cut one, is reported, never fatal.
    for (const warning of warnings) expect(warning.message).toMatch(/torn or damaged record|deleted \d+ segment/);
  }, 120_000);

  it("one process per directory: a second is refused with a clear error; a killed owner's lock is taken over", async () => {
    const dir = freshDir();
    const report = `${dir}.report`;
    const child = startChild(dir, report, "hold");
    await until(async () => {
      if (child.child.exitCode !== null) throw new Error(`child exited: ${child.stderr.join("")}`);
      return (await readReport(report)).ready;
    }, "the child holding the bus");
    await expect(openDurable(dir, [], { lockWaitMs: 0 })).rejects.toThrow(new RegExp(`event bus .* is in use by process ${child.child.pid} \\(lock file .*\\.lock\\)`));
    child.child.kill("SIGKILL");
    await child.exited;
    const bus = await openDurable(dir);
    await bus.ensureTopics(["stream"]);
    await bus.close();
  });
});
