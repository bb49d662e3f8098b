import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { newId } from "@emailsvc/ids";
import { CrossTenantCollection, openEmbeddedStore, type EmbeddedDocumentStore } from "@emailsvc/storage";
import type { SandboxMessageDoc } from "../src/storage/documents.js";
import { SandboxArchive, type SandboxMessage, type SandboxSettings } from "../src/storage/sandbox-messages.js";

// Issue 20: the sandbox's bodies on the embedded store are appended to
// segment files of their tenant (a file created per message was a quarter of
// delivery's thread in a sandbox campaign). What that must not cost: an
// erased body must be gone from the disk at once (its bytes zeroed in the
// segment, read back here from the file), segments must go once the cap or
// the retention dropped all their messages, a restart must read what was
// kept, and bytes a crash left (a cut record, a body whose row never came)
// must be skipped and reclaimed, never read as a message.

const ACCOUNT = newId("acc");
const TENANT = `${ACCOUNT}:test`;
const HOUR = 3_600_000;

describe("the sandbox's body segments (embedded store)", () => {
  let dir: string;
  let store: EmbeddedDocumentStore;
  let archive: SandboxArchive;
  let clock: number;

  /** The store with its datafile and an archive on it, as delivery opens them at start. */
  async function open(settings: SandboxSettings = {}): Promise<void> {
    store = await openEmbeddedStore({ dataDir: join(dir, "delivery") });
    const rows = store.collection<SandboxMessageDoc>("sandbox_messages");
    archive = new SandboxArchive(new CrossTenantCollection(rows, "test"), {
      bodiesDir: join(dir, "sandbox"),
      now: () => clock,
      retentionMs: 72 * HOUR,
      ...settings,
    });
    await rows.createIndexes(archive.indexes);
  }

  /** Stops the archive and the store, as a shutdown does. */
  async function shut(): Promise<void> {
    await archive.stop();
    await store.close();
  }

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "sandbox-segments-"));
    clock = Date.now();
  });
  afterEach(async () => {
    await shut().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  });

  const segmentsDir = () => join(dir, "sandbox", ACCOUNT, "test");
  const segments = () => readdirSync(segmentsDir()).sort();
  const message = (emailId: string, html: string): SandboxMessage => ({ emailId, from: "shop@x.example", to: "buyer@x.example", subject: `Order ${emailId}`, html, text: "thanks", headers: { "X-Order": emailId }, capturedAt: clock });
  const rows = () => store.collection<SandboxMessageDoc>("sandbox_messages").find({ tenant: TENANT });

  /** Keeps `n` messages, `together` at a time (as concurrent sends hand them over); answers their ids. */
  async function keepMany(n: number, html: (i: number) => string, together = 10): Promise<string[]> {
    const ids = Array.from({ length: n }, () => newId("eml"));
    for (let i = 0; i < n; i += together) {
      const kept = await Promise.all(ids.slice(i, i + together).map((id, j) => archive.keep(TENANT, message(id, html(i + j)))));
      expect(kept.every(Boolean)).toBe(true);
    }
    return ids;
  }

  it("appends bodies one after another to one segment (twenty handed over at once), and reads each back by its place", async () => {
    await open();
    // Characters of two, three and four bytes in UTF-8: places and lengths count bytes.
    const html = (i: number) => (i % 2 === 0 ? `<p>order ${i}</p>` : `<p>Grüße, order ${i} → 👋</p>`);
    const ids = await keepMany(40, html, 20);
    expect(segments()).toEqual(["1.bodies"]);
    const stored = await rows();
    expect(stored).toHaveLength(40);
    // Places follow one another without overlap, and the file holds exactly them (one newline after each).
    const places = stored.map((row) => [row.body_offset!, row.body_length!] as const).sort((a, b) => a[0] - b[0]);
    let end = 0;
    for (const [offset, length] of places) {
      expect(offset).toBe(end);
      end = offset + length + 1;
    }
    expect(statSync(join(segmentsDir(), "1.bodies")).size).toBe(end);
    for (const [i, id] of ids.entries()) {
      await expect(archive.forTenant(TENANT).get(id)).resolves.toMatchObject({ emailId: id, html: html(i), text: "thanks", headers: { "X-Order": id } });
    }
  });

  it("overwrites an erased body's bytes with zeros in the segment at once, leaving the others readable", async () => {
    await open();
    const [erased, kept] = await keepMany(2, (i) => (i === 0 ? "<p>ERASE-ME secret@example.com</p>" : "<p>KEEP-ME</p>"));
    const file = join(segmentsDir(), "1.bodies");
    expect(readFileSync(file, "latin1")).toContain("ERASE-ME");
    const row = (await rows()).find((r) => r._id === erased)!;

    await archive.forTenant(TENANT).deleteForEmails([erased!]);

    // The segment stays (another message is in it), but the erased body's bytes are zeros, not only unreachable.
    const bytes = readFileSync(file);
    expect(bytes.toString("latin1")).not.toContain("ERASE-ME");
    expect(bytes.toString("latin1")).not.toContain("secret@example.com");
    expect(bytes.toString("latin1")).not.toContain(erased!);
    expect(bytes.subarray(row.body_offset!, row.body_offset! + row.body_length!).every((byte) => byte === 0)).toBe(true);
    expect(bytes.toString("latin1")).toContain("KEEP-ME");
    await expect(archive.forTenant(TENANT).get(erased!)).resolves.toBeUndefined();
    await expect(archive.forTenant(TENANT).get(kept!)).resolves.toMatchObject({ html: "<p>KEEP-ME</p>" });

    // Erasing the last message of the segment deletes the segment itself.
    await archive.forTenant(TENANT).deleteForEmails([kept!]);
    expect(segments()).toEqual([]);
  });

  it("writes bodies handed over together in one write, not one each", async () => {
    await open();
    await keepMany(1, () => "<p>warm</p>"); // the segment made and opened
    // The process' write system calls (Linux): the bodies' and the store's rows' appends. The
    // counter is the whole process's, and jest writing its own files in it once came into a window
    // (3,693 writes; never again in reruns): the fewer of two windows of the same work is counted.
    const writes = () => Number(/^syscw: (\d+)$/m.exec(readFileSync("/proc/self/io", "utf8"))![1]);
    const windows: number[] = [];
    for (let round = 0; round < 2; round += 1) {
      const before = writes();
      await keepMany(200, (i) => `<p>order ${i}</p>`, 50);
      windows.push(writes() - before);
    }
    // A file per body took one write each (and an open and a close); four groups of fifty take a few.
    expect(Math.min(...windows)).toBeLessThan(50);
  });

  it("deletes the segments whose messages the cap dropped, keeping the disk within the cap's bodies", async () => {
    const cap = 20;
    const body = "<p>" + "x".repeat(1_000) + "</p>";
    // A segment of about four bodies: 400 messages go through twenty at a time.
    await open({ maxPerTenant: cap, segments: { segmentBytes: 4_000 } });
    const ids = await keepMany(400, () => body, 1);
    await archive.stop(); // waits for the last trim
    const stored = await rows();
    expect(stored.length).toBeLessThanOrEqual(cap);
    // Each file left is a segment some kept row points into.
    const used = new Set(stored.map((row) => `${row.body_segment}.bodies`));
    expect(segments()).toEqual([...used].sort());
    const bytes = segments().reduce((sum, name) => sum + statSync(join(segmentsDir(), name)).size, 0);
    expect(bytes).toBeLessThanOrEqual((cap + 4) * (body.length + 200));
    // Segments were numbered up through about a hundred: most were deleted.
    expect(Math.max(...segments().map((name) => Number.parseInt(name, 10)))).toBeGreaterThan(80);
    await expect(archive.forTenant(TENANT).get(ids[399]!)).resolves.toMatchObject({ html: body });
    await expect(archive.forTenant(TENANT).get(ids[0]!)).resolves.toBe(undefined);
  });

  it("drops the first kept, segment after segment and in part of one, and deletes a segment once the cap took all its messages", async () => {
    const body = "<p>" + "x".repeat(1_000) + "</p>";
    // About four bodies a segment; a cap of 10 trims down to 9.
    await open({ maxPerTenant: 10, segments: { segmentBytes: 4_000 } });
    const ids = await keepMany(11, () => body, 1);
    await shut(); // waits for the trim
    await open({ maxPerTenant: 10, segments: { segmentBytes: 4_000 } });
    // The two kept first went, though the rest of their segment stays.
    const first = (await rows()).map((row) => row._id).sort();
    expect(first).toEqual(ids.slice(2).sort());
    expect(segments()).toContain("1.bodies");
    // After a restart (a new segment), two more: the next two kept first go, and with them the last of segment 1.
    ids.push(...(await keepMany(2, () => body, 1)));
    await archive.stop();
    expect((await rows()).map((row) => row._id).sort()).toEqual(ids.slice(4).sort());
    expect(segments()).not.toContain("1.bodies");
    for (const id of ids.slice(4)) await expect(archive.forTenant(TENANT).get(id)).resolves.toMatchObject({ html: body });
  });

  it("drops a row kept before segments (its body in the row) by its time, first", async () => {
    await open({ maxPerTenant: 4 });
    const legacy = newId("eml");
    await store.collection<SandboxMessageDoc>("sandbox_messages").insertOne({ _id: legacy, tenant: TENANT, from: "a@x.example", to: "b@x.example", subject: "s", body: { html: "<p>old</p>", text: "t", headers: {} }, captured_at: clock - HOUR });
    const ids = await keepMany(4, (i) => `<p>new ${i}</p>`, 1);
    await archive.stop();
    // Five past a cap of four: down to four, the row from before segments first.
    expect((await rows()).map((row) => row._id).sort()).toEqual(ids.sort());
  });

  it("deletes the segments of messages past the retention, the current one too, and starts a new one after", async () => {
    await open({ segments: { segmentBytes: 200 } });
    await keepMany(6, (i) => `<p>old ${i}</p>`, 1);
    expect(segments().length).toBeGreaterThan(1);
    clock += 73 * HOUR;
    await expect(archive.sweep()).resolves.toBe(6);
    expect(segments()).toEqual([]);
    const [fresh] = await keepMany(1, () => "<p>fresh</p>");
    await expect(archive.forTenant(TENANT).get(fresh!)).resolves.toMatchObject({ html: "<p>fresh</p>" });
    expect(segments()).toHaveLength(1);
  });

  it("reads what was kept after a restart, appends to a new segment, and skips and reclaims what a crash left (a cut tail, a body without its row)", async () => {
    await open();
    const before = await keepMany(3, (i) => `<p>before ${i}</p>`);
    await shut();
    // A crash: a body appended after them whose row never came, then a record cut mid-write.
    const orphan = newId("eml");
    appendFileSync(join(segmentsDir(), "1.bodies"), `{"id":"${orphan}","html":"<p>orphan</p>","text":"","headers":{}}\n{"id":"${newId("eml")}","html":"<p>cu`);
    // And a segment a crash left with nothing but a cut record (its rows never came).
    writeFileSync(join(segmentsDir(), "2.bodies"), `{"id":"${newId("eml")}","ht`);

    await open();
    for (const [i, id] of before.entries()) await expect(archive.forTenant(TENANT).get(id)).resolves.toMatchObject({ html: `<p>before ${i}</p>` });
    await expect(archive.forTenant(TENANT).get(orphan)).resolves.toBeUndefined();
    // New bodies go to a new segment, not after the cut tail.
    const [after] = await keepMany(1, () => "<p>after</p>");
    expect((await rows()).find((row) => row._id === after)!.body_segment).toBe("3");
    await expect(archive.forTenant(TENANT).get(after!)).resolves.toMatchObject({ html: "<p>after</p>" });
    // The resend of the orphan's email (its row never came) keeps it whole.
    await expect(archive.keep(TENANT, message(orphan, "<p>orphan again</p>"))).resolves.toBe(true);
    await expect(archive.forTenant(TENANT).get(orphan)).resolves.toMatchObject({ html: "<p>orphan again</p>" });

    // The sweep deletes the segment nothing points into; the one with kept messages stays.
    await archive.sweep();
    expect(segments()).toEqual(["1.bodies", "3.bodies"]);
    // Once its messages are erased, the cut one goes too.
    await archive.forTenant(TENANT).deleteForEmails(before);
    expect(segments()).toEqual(["3.bodies"]);
  });
});
