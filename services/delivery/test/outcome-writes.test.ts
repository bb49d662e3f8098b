import { newId } from "@emailsvc/ids";
import { TenantCollection, type DocumentStore } from "@emailsvc/storage";
import { openTestStore, type StoreKind } from "@emailsvc/testing";
import { PENDING } from "../src/domain/email.js";
import type { EmailDoc } from "../src/storage/documents.js";
import { OutcomeWrites } from "../src/usecases/outcome-writes.js";

// A campaign batch's outcome writes, made together (usecases/outcome-writes.ts):
// the settles of one turn of the event loop are one store write, each settle
// learns whether its own guarded update matched, and only once it is stored.

describe.each<StoreKind>(["embedded", "mongodb"])("outcome writes of a campaign batch (%s)", (kind) => {
  let store: DocumentStore;
  let cleanup: () => void;
  let emails: TenantCollection<EmailDoc>;

  beforeAll(async () => {
    ({ store, cleanup } = await openTestStore(kind, "outcome_writes"));
  });
  afterAll(async () => {
    await store.close();
    cleanup();
  });
  beforeEach(() => {
    emails = new TenantCollection(store.collection<EmailDoc>(`emails_${newId("c").slice(2, 12)}`), `${newId("acc")}:test`);
  });

  const queued = (id: string, status: EmailDoc["status"] = "queued") => ({ _id: id, status, status_history: [{ status, at: 1, detail: "" }] }) as unknown as Omit<EmailDoc, "tenant">;
  const sent = (at: number) => ({ $set: { status: "sent" as const, sent_at: at, updated_at: at }, $push: { status_history: { $each: [{ status: "sent" as const, at, detail: "" }] } } });

  test("the settles of one turn are one write; each answers whether it matched, once stored", async () => {
    await emails.insertMany([queued("e1"), queued("e2"), queued("e3", "sent"), queued("e4", "deferred")]);
    const writes = new OutcomeWrites(emails);
    const settled = Promise.all(["e1", "e2", "e3", "e4", "e9"].map((id) => writes.write({ _id: id, status: PENDING }, sent(2))));
    // Nothing is written before the turn ends.
    expect(writes.writes).toBe(0);
    // e3 was settled before (by another attempt), e9 is unknown: no match, nothing changed.
    await expect(settled).resolves.toEqual([true, true, false, true, false]);
    expect(writes.writes).toBe(1);
    expect(writes.updates).toBe(5);
    const stored = new Map((await emails.find({})).map((d) => [d._id, d]));
    for (const id of ["e1", "e2", "e4"]) {
      expect(stored.get(id)).toMatchObject({ status: "sent", sent_at: 2, updated_at: 2 });
      expect(stored.get(id)!.status_history!.map((c) => c.status)).toEqual([id === "e4" ? "deferred" : "queued", "sent"]);
    }
    expect(stored.get("e3")!.status_history).toHaveLength(1);

    // A later turn is a write of its own.
    await emails.insertMany([queued("e5")]);
    await expect(writes.write({ _id: "e5", status: PENDING }, sent(3))).resolves.toBe(true);
    expect(writes.writes).toBe(2);
  });

  test("a write that fails rejects every settle it carried, and writes none of them", async () => {
    await emails.insertMany([queued("f1"), queued("f2")]);
    const writes = new OutcomeWrites(emails);
    const bad = { $set: { "bad.$path": 1 } } as never;
    const results = await Promise.allSettled([writes.write({ _id: "f1", status: PENDING }, sent(2)), writes.write({ _id: "f2", status: PENDING }, bad)]);
    expect(results.map((r) => r.status)).toEqual(["rejected", "rejected"]);
    expect((await emails.find({})).map((d) => d.status)).toEqual(["queued", "queued"]);
  });
});
