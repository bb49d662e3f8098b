import { appendFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Code } from "@connectrpc/connect";
import { encodeEvent, publishEvents } from "@emailsvc/events";
import { delivery } from "@emailsvc/proto";
import { readError } from "@emailsvc/errors";
import { newId } from "@emailsvc/ids";
import { tenantKey, type CallContext } from "@emailsvc/tenancy";
import { CrossTenantCollection, openEmbeddedStore } from "@emailsvc/storage";
import type { SandboxMessageDoc } from "../src/storage/documents.js";
import { SandboxArchive, type SandboxMessage } from "../src/storage/sandbox-messages.js";
import { as, startHarness, tenant, waitFor, type Harness, type StoreKind } from "./harness.js";

// Issue 16, defect 2: the sandbox kept every rendered message for ever, as a
// document of the embedded store, which holds every document in memory: one
// test-key campaign to 50,000 took the process from 1.2 to 2.3 GB, linearly
// per repeat. Now the store holds small rows only (bodies are appended to
// segment files beside it), at most SANDBOX_MAX_MESSAGES_PER_TENANT per tenant (the oldest go
// first), each for SANDBOX_RETENTION_HOURS; a message no longer kept answers
// 404 `sandbox_message_expired`.

const TEMPLATE = {
  slug: "receipt",
  subject: "Receipt {{n}}",
  // A body of some size, as a real message: what used to stay in memory for each.
  html: `<!doctype html><html><body><p>Receipt {{n}}</p><p>${"Thank you for your order. ".repeat(200)}</p></body></html>`,
};

async function failure(promise: Promise<unknown>) {
  try {
    await promise;
  } catch (err) {
    return readError(err);
  }
  throw new Error("expected the call to fail");
}

/**
 * Sends `n` emails one after another, each kept before the next is sent: the
 * order they were kept in (which the cap goes by) is the order of their ids.
 */
async function sendMany(h: Harness, call: CallContext, n: number, from = 0): Promise<string[]> {
  const ids: string[] = [];
  for (let i = from; i < from + n; i += 1) {
    const { email } = await h.client.sendEmail({ templateSlug: "receipt", to: `buyer-${i}@example.com`, variables: { n: String(i) } }, as(call));
    ids.push(email!.id);
    await waitFor(async () => ((await h.client.getEmail({ id: email!.id }, as(call))).email!.status === delivery.EmailStatus.SENT ? true : undefined), `email ${email!.id} sent`);
  }
  return ids;
}

describe("the sandbox's bounds (embedded store, bodies in files)", () => {
  let running: Harness | undefined;
  let bodiesDir: string;
  let clock = Date.now();
  const CAP = 5;
  const RETENTION_MS = 3_600_000;

  /** A service whose sandbox keeps bodies in files (as DATA_DIR/sandbox on the embedded store), on a clock of the test's. */
  async function start(maxPerTenant: number): Promise<Harness> {
    bodiesDir = mkdtempSync(join(tmpdir(), "sandbox-bodies-"));
    running = await startHarness({ store: "embedded", sandbox: { maxPerTenant, retentionMs: RETENTION_MS, sweepIntervalMs: 50, now: () => clock, bodiesDir } });
    return running;
  }

  afterEach(async () => {
    await running?.close();
    running = undefined;
    rmSync(bodiesDir, { recursive: true, force: true });
  });

  /** The sandbox's rows as the store holds them in memory, per tenant. */
  async function rows(h: Harness, call: CallContext): Promise<Array<Record<string, unknown>>> {
    return h.store.collection("sandbox_messages").find({ tenant: tenantKey(call.tenant) });
  }

  it("keeps at most SANDBOX_MAX_MESSAGES_PER_TENANT per tenant, the oldest dropped first, with small rows in memory and the bodies in files", async () => {
    const h = await start(CAP);
    const busy = tenant("test");
    const quiet = tenant("test");
    h.templates.put(busy, TEMPLATE);
    h.templates.put(quiet, TEMPLATE);
    const quietIds = await sendMany(h, quiet, 2);
    const ids = await sendMany(h, busy, 30);

    // What the embedded store holds in memory for the busy tenant: at most the cap, each row small.
    const kept = await rows(h, busy);
    expect(kept.length).toBeLessThanOrEqual(CAP);
    expect(kept.length).toBeGreaterThan(0);
    for (const row of kept) {
      expect(row).not.toHaveProperty("html");
      expect(row).not.toHaveProperty("body");
      expect(JSON.stringify(row).length).toBeLessThan(400);
    }
    // The newest are the ones kept; the other tenant keeps its own.
    expect(kept.map((row) => row._id).sort()).toEqual(ids.slice(ids.length - kept.length));
    expect((await rows(h, quiet)).map((row) => row._id).sort()).toEqual(quietIds);
    // The bodies are in the tenant's segment files, each row naming one that is there.
    const files = readdirSync(join(bodiesDir, busy.tenant.accountId, "test"));
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) expect(file).toMatch(/^[1-9][0-9]*\.bodies$/);
    for (const row of kept) expect(files).toContain(`${row.body_segment as string}.bodies`);

    // The newest is readable whole; the oldest answers that it is no longer kept.
    const newest = (await h.client.getSandboxMessage({ emailId: ids[29]! }, as(busy))).message!;
    expect(newest.subject).toBe("Receipt 29");
    expect(newest.html).toContain("Thank you for your order.");
    expect(newest.text).toContain("Receipt 29");
    expect(newest.headers["Message-ID"]).toBe(`<${ids[29]}@localhost>`);
    const oldest = await failure(h.client.getSandboxMessage({ emailId: ids[0]! }, as(busy)));
    expect(oldest).toMatchObject({ code: Code.NotFound, errorCode: "sandbox_message_expired" });
    // Another tenant's email stays unknown, not "expired".
    expect(await failure(h.client.getSandboxMessage({ emailId: ids[29]! }, as(quiet)))).toMatchObject({ code: Code.NotFound, errorCode: "sandbox_message_not_found" });

    // The count stays bounded however many more come.
    await sendMany(h, busy, 12, 30);
    expect((await rows(h, busy)).length).toBeLessThanOrEqual(CAP);
  });

  it("deletes messages past SANDBOX_RETENTION_HOURS (rows and bodies), answering sandbox_message_expired", async () => {
    clock = Date.now();
    const h = await start(100);
    const t = tenant("test");
    h.templates.put(t, TEMPLATE);
    const [id] = await sendMany(h, t, 1);
    expect((await h.client.getSandboxMessage({ emailId: id! }, as(t))).message!.subject).toBe("Receipt 0");

    // The messages were kept on the real clock, a little after `clock` was read: past the retention by a margin.
    clock += RETENTION_MS + 10 * 60_000;
    expect(await failure(h.client.getSandboxMessage({ emailId: id! }, as(t)))).toMatchObject({ code: Code.NotFound, errorCode: "sandbox_message_expired" });
    await waitFor(async () => ((await rows(h, t)).length === 0 ? true : undefined), "the sweep deleting the row");
    const dir = join(bodiesDir, t.tenant.accountId, "test");
    await waitFor(async () => (readdirSync(dir).length === 0 ? true : undefined), "the sweep deleting the body's segment");
    expect(await failure(h.client.getSandboxMessage({ emailId: id! }, as(t)))).toMatchObject({ code: Code.NotFound, errorCode: "sandbox_message_expired" });
  });

  it("keeps the first body when an email is kept again (a resend after a crash), and keeps a resend whose first body a crash left without its row", async () => {
    bodiesDir = mkdtempSync(join(tmpdir(), "sandbox-bodies-"));
    const store = await openEmbeddedStore({});
    const archive = new SandboxArchive(new CrossTenantCollection(store.collection<SandboxMessageDoc>("sandbox_messages"), "test"), { bodiesDir });
    try {
      const account = newId("acc");
      const tenantKeyOf = `${account}:test`;
      const message = (emailId: string, html: string): SandboxMessage => ({ emailId, from: "a@x.example", to: "b@x.example", subject: "s", html, text: "t", headers: {}, capturedAt: Date.now() });
      const first = newId("eml");
      await expect(archive.keep(tenantKeyOf, message(first, "<p>first</p>"))).resolves.toBe(true);
      await expect(archive.keep(tenantKeyOf, message(first, "<p>second</p>"))).resolves.toBe(false);
      await expect(archive.forTenant(tenantKeyOf).get(first)).resolves.toMatchObject({ html: "<p>first</p>" });
      // The second body's bytes, which no row reaches (so no erasure would find them), were zeroed.
      expect(readFileSync(join(bodiesDir, account, "test", "1.bodies"), "latin1")).not.toContain("<p>second</p>");

      // A crash after the body was appended (cut, here) and before its row was stored: the resend appends it again, whole.
      const cut = newId("eml");
      mkdirSync(join(bodiesDir, account, "test"), { recursive: true });
      appendFileSync(join(bodiesDir, account, "test", "99.bodies"), `{"id":"${cut}","html":"<p>cu`);
      await expect(archive.keep(tenantKeyOf, message(cut, "<p>whole</p>"))).resolves.toBe(true);
      await expect(archive.forTenant(tenantKeyOf).get(cut)).resolves.toMatchObject({ html: "<p>whole</p>" });
    } finally {
      await archive.stop();
      await store.close();
    }
  });
});

describe.each<StoreKind>(["embedded", "mongodb"])("the sandbox's cap on %s storage", (kind) => {
  const CAP = 5;
  let running: Harness | undefined;
  afterEach(async () => {
    await running?.close();
    running = undefined;
  });

  async function start(): Promise<Harness> {
    running = await startHarness({ store: kind, sandbox: { maxPerTenant: CAP } });
    return running;
  }

  it("drops the messages kept longest ago, not the oldest email ids: a campaign's late sends (ids minted at its snapshot) stay", async () => {
    const h = await start();
    const t = tenant("test");
    const templateId = h.templates.put(t, TEMPLATE);
    const subscriberId = h.subscribers.put(t, "late-reader@example.com", { n: "late" });
    // A campaign copied its audience (the email id is minted then) and was paused before this recipient's turn...
    const lateId = newId("eml");
    // ...while the tenant's other mail filled the sandbox up to its cap.
    const earlier = await sendMany(h, t, CAP);
    // Resumed: the campaign hands the recipient over now, long after its id was minted.
    await publishEvents(h.bus, [
      encodeEvent(
        "email.send.requested",
        { eventId: newId("evt"), tenant: tenantKey(t.tenant), occurredAt: Date.now() },
        { emailId: lateId, campaignId: newId("cmp"), subscriberId, templateId, templateVersion: 1 },
      ),
    ]);
    const status = () => h.client.getEmail({ id: lateId }, as(t)).then((res) => res.email!.status, () => undefined);
    await waitFor(async () => ((await status()) === delivery.EmailStatus.SENT ? true : undefined), "the campaign's email sent");

    // The message just kept is there; the one kept longest ago went.
    expect((await h.client.getSandboxMessage({ emailId: lateId }, as(t))).message!.to).toBe("late-reader@example.com");
    expect(await failure(h.client.getSandboxMessage({ emailId: earlier[0]! }, as(t)))).toMatchObject({ code: Code.NotFound, errorCode: "sandbox_message_expired" });
    expect((await h.store.collection("sandbox_messages").find({ tenant: tenantKey(t.tenant) })).map((row) => row._id).sort()).toEqual([...earlier.slice(1), lateId].sort());
  });

});
