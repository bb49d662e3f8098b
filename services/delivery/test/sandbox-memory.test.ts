import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getHeapStatistics, setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { newId } from "@emailsvc/ids";
import { openEmbeddedStore, type EmbeddedDocumentStore } from "@emailsvc/storage";
import { DeliveryStorage } from "../src/storage/repositories.js";
import type { SandboxArchive } from "../src/storage/sandbox-messages.js";

// Issue 20: memory grows with what is in flight, not with what was sent. The
// sandbox provider keeps every message it is handed; before issue 16 each was
// a document of the embedded store (which holds every document in memory),
// and one test-key campaign to 50,000 took the process from 1.2 to 2.3 GB.
// Here 50,000 messages of a realistic size (about 7 KB each, as a rendered
// newsletter) are kept through the same SandboxArchive the provider uses, on
// the embedded store with its datafile and the bodies in segment files, as
// `npm start` runs it; after 10,000 and after 50,000 the test asserts what the
// sandbox holds: the store's rows and the bodies' bytes stay within the
// per-tenant cap (plus one segment of dropped bodies not yet reclaimed),
// and the heap (after a full collection, plus what buffers hold) grows by less
// than a fixed margin between the two, where 40,000 more bodies in memory
// would be about 280 MB, 40,000 more rows about 15 MB, and 50 bytes more held
// per message 2 MB. Not timed: it asserts counts and bytes only. (The embedded
// store keeps documents at rest on disk, a bounded cache of them in memory, and
// lets go of a deleted row's document at once: see
// packages/storage/test/memory.test.ts for what each document costs.)

const CAP = 5_000;
/** The default size at which a body segment is rotated (sandbox-segments.ts). */
const SEGMENT_BYTES = 8 * 1024 * 1024;
const TENANT = "acc_memory:test";
/** A rendered newsletter's size: what stayed in memory per message before. */
const HTML = `<!doctype html><html><body>${"<p>Here is what is new this week, and what is coming next.</p>".repeat(110)}</body></html>`;
const TEXT = "Here is what is new this week, and what is coming next.\n".repeat(20);
/**
 * Heap growth allowed between 10,000 and 50,000 messages kept: code warming
 * up, caches of fixed size, rows between the trim's target and the cap. Runs
 * here moved by -0.3 to +0.3 MB; 50 bytes more held per message (a string of
 * the email id in some list) moved it by 2.9 MB.
 */
const MARGIN_BYTES = 2 * 1024 * 1024;

/** A full collection (gc exposed for this process at run time; Jest's workers run without --expose-gc). */
function collect(): void {
  setFlagsFromString("--expose-gc");
  const gc = runInNewContext("gc") as () => void;
  gc();
  gc();
}

/** Bytes live on the V8 heap and in buffers after a full collection. */
async function heldBytes(): Promise<number> {
  // Twice, with a turn of the event loop between: finalizers and weak callbacks run in between.
  collect();
  await new Promise((resolve) => setImmediate(resolve));
  collect();
  return getHeapStatistics().used_heap_size + process.memoryUsage().arrayBuffers;
}

/** Files and bytes under a directory (the body files). */
function filesUnder(dir: string): { files: number; bytes: number } {
  let files = 0;
  let bytes = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    files += 1;
    bytes += statSync(join(entry.parentPath, entry.name)).size;
  }
  return { files, bytes };
}

describe("the sandbox's memory does not grow with what was sent (embedded store, bodies in segment files)", () => {
  let dir: string;
  let store: EmbeddedDocumentStore;
  let archive: SandboxArchive;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "sandbox-memory-"));
    store = await openEmbeddedStore({ dataDir: join(dir, "delivery") });
    const storage = new DeliveryStorage(store, { maxPerTenant: CAP, bodiesDir: join(dir, "sandbox") });
    await storage.createIndexes();
    archive = storage.sandboxKeeper();
  });

  afterAll(async () => {
    await archive?.stop();
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Keeps `n` more messages, 50 at a time (as the provider does under DELIVERY_CONCURRENCY). */
  async function keep(n: number): Promise<void> {
    const capturedAt = Date.now();
    for (let i = 0; i < n; i += 50) {
      await Promise.all(
        Array.from({ length: Math.min(50, n - i) }, () =>
          archive.keep(TENANT, { emailId: newId("eml"), from: "news@example.com", to: "reader@example.com", subject: "News of the week", capturedAt, html: HTML, text: TEXT, headers: { "X-Campaign": "weekly" } }),
        ),
      );
    }
  }

  it("holds at most the cap of rows and bodies' bytes, and the same heap after 50,000 messages as after 10,000", async () => {
    await keep(10_000);
    const rows = store.collection("sandbox_messages");
    const after10k = { rows: await rows.count({}), bodies: filesUnder(join(dir, "sandbox")), held: await heldBytes() };

    await keep(40_000);
    const after50k = { rows: await rows.count({}), bodies: filesUnder(join(dir, "sandbox")), held: await heldBytes() };

    for (const at of [after10k, after50k]) {
      expect(at.rows).toBeLessThanOrEqual(CAP);
      expect(at.rows).toBeGreaterThan(CAP - CAP / 10 - 50);
      // The cap's bodies, plus what the oldest segment still holds of those dropped (a segment goes once none of its bodies is kept).
      expect(at.bodies.bytes).toBeLessThanOrEqual(CAP * (HTML.length + TEXT.length + 200) + SEGMENT_BYTES);
      expect(at.bodies.files).toBeLessThanOrEqual(Math.ceil((CAP * (HTML.length + TEXT.length + 200)) / SEGMENT_BYTES) + 2);
    }
    // The bodies are not in the heap: one is 7 KB, so even the cap's worth would be 35 MB.
    expect(HTML.length + TEXT.length).toBeGreaterThan(7_000);
    expect(after50k.held - after10k.held).toBeLessThan(MARGIN_BYTES);
  }, 60_000);
});
