import { once } from "node:events";
import { newId } from "@emailsvc/ids";
import { TenantCollection, type DocumentStore } from "@emailsvc/storage";
import { memoryLogger, openTestStore, waitFor, type StoreKind } from "@emailsvc/testing";
import type { EmailDoc } from "../src/storage/documents.js";
import { LeaseGroup } from "../src/usecases/lease.js";

// A campaign batch's leases (usecases/lease.ts, LeaseGroup): one renewal, one
// shutdown listener and one deadline sweep for the batch, each attempt still
// cut off on its own when its deadline passes or its lease is lost, and all
// of them at shutdown.

describe.each<StoreKind>(["embedded", "mongodb"])("a campaign batch's leases (%s)", (kind) => {
  let store: DocumentStore;
  let cleanup: () => void;
  let emails: TenantCollection<EmailDoc>;
  let shutdown: AbortController;
  const groups: LeaseGroup[] = [];

  beforeAll(async () => {
    ({ store, cleanup } = await openTestStore(kind, "lease_group"));
  });
  afterAll(async () => {
    await store.close();
    cleanup();
  });
  beforeEach(() => {
    emails = new TenantCollection(store.collection<EmailDoc>(`emails_${newId("c").slice(2, 12)}`), `${newId("acc")}:test`);
    shutdown = new AbortController();
  });
  afterEach(() => {
    for (const group of groups.splice(0)) group.close();
  });

  const token = "batch-token";
  /** Records stored leased with the batch's token, as the intake stores them, and their group. */
  const leased = async (ids: string[], settings: { leaseMs: number; attemptTimeoutMs: number }) => {
    const until = Date.now() + settings.leaseMs;
    await emails.insertMany(ids.map((id) => ({ _id: id, status: "queued", lease_token: token, lease_until: until }) as unknown as Omit<EmailDoc, "tenant">));
    const deps = { ...settings, now: Date.now, logger: memoryLogger().logger };
    const group = new LeaseGroup(deps, emails, token, ids, until, shutdown.signal);
    groups.push(group);
    return { group, deps };
  };

  test("cuts off an attempt past its deadline, and only that one", async () => {
    const { group, deps } = await leased(["d1", "d2"], { leaseMs: 60_000, attemptTimeoutMs: 50 });
    const late = group.attempt("d1");
    // The next attempt's deadline is far off (the deadline is read as each attempt starts).
    deps.attemptTimeoutMs = 600_000;
    const onTime = group.attempt("d2");
    if (!late.signal.aborted) await once(late.signal, "abort");
    expect(late.signal.reason).toBeInstanceOf(DOMException);
    expect((late.signal.reason as DOMException).name).toBe("TimeoutError");
    // A deadline is no lost lease: the attempt writes its deferral.
    expect(late.lost).toBe(false);
    expect(onTime.signal.aborted).toBe(false);
    late.end();
    onTime.end();
  });

  test("cuts off every attempt at shutdown, and one taken after it at once", async () => {
    const { group } = await leased(["s1", "s2", "s3"], { leaseMs: 60_000, attemptTimeoutMs: 600_000 });
    const running = [group.attempt("s1"), group.attempt("s2")];
    const reason = new Error("stopping");
    shutdown.abort(reason);
    for (const attempt of running) {
      expect(attempt.signal.aborted).toBe(true);
      expect(attempt.signal.reason).toBe(reason);
      expect(attempt.lost).toBe(false);
    }
    const later = group.attempt("s3");
    expect(later.signal.aborted).toBe(true);
    for (const attempt of [...running, later]) attempt.end();
  });

  test("cuts off the attempt whose lease another attempt took, and renews the others", async () => {
    const { group } = await leased(["l1", "l2"], { leaseMs: 300, attemptTimeoutMs: 600_000 });
    const taken = group.attempt("l1");
    const kept = group.attempt("l2");
    // Another attempt claims l1 (as one would once its lease ran out): the next renewal finds it gone.
    expect(await emails.updateOne({ _id: "l1" }, { $set: { lease_token: "another-attempt", lease_until: Date.now() + 60_000 } })).not.toBeNull();
    const renewedFrom = (await emails.findOne({ _id: "l2" }))!.lease_until;
    if (!taken.signal.aborted) await once(taken.signal, "abort");
    expect(taken.lost).toBe(true);
    expect((taken.signal.reason as Error).message).toBe("lease lost");
    expect(kept.signal.aborted).toBe(false);
    expect(kept.lost).toBe(false);
    await waitFor(async () => ((await emails.findOne({ _id: "l2" }))!.lease_until > renewedFrom ? true : undefined), "l2's lease renewed");
    // l1 is the other attempt's: left as it took it.
    expect(await emails.findOne({ _id: "l1" })).toMatchObject({ lease_token: "another-attempt" });
    taken.end();
    kept.end();
  });

  test("hands an attempt's signal to the next one only when it ended unaborted and unheard", async () => {
    const { group } = await leased(["r1", "r2", "r3", "r4", "r5"], { leaseMs: 60_000, attemptTimeoutMs: 600_000 });
    const first = group.attempt("r1");
    const reused = first.signal;
    const listener = () => undefined;
    reused.addEventListener("abort", listener, { once: true });
    reused.removeEventListener("abort", listener);
    first.end();
    first.end(); // idempotent: given back once
    const second = group.attempt("r2");
    expect(second.signal).toBe(reused);
    // Another attempt at the same time has a signal of its own.
    const third = group.attempt("r3");
    expect(third.signal).not.toBe(reused);
    // A listener left on its signal (a send that did not let go): not handed on, whatever it listens to.
    second.signal.addEventListener("abort", listener, { once: true });
    second.end();
    const fourth = group.attempt("r4");
    expect(fourth.signal).not.toBe(reused);
    // Aborted: never handed on.
    (fourth as unknown as { abort(reason: unknown): void }).abort(new Error("cut off"));
    const aborted = fourth.signal;
    fourth.end();
    third.end();
    const fifth = group.attempt("r5");
    expect(fifth.signal).not.toBe(aborted);
    expect(fifth.signal.aborted).toBe(false);
    fifth.end();
  });
});
