import { openStore, type DocumentStore } from "@emailsvc/storage";
import { auditRetentionDaysFromEnv, sweepMembersData } from "../src/members/sweep";
import { AuditLog } from "../src/members/audit";
import { SESSION_IDLE_MS } from "../src/members/store";

// The members' sweep deletes exactly what has run out (audit entries past
// the retention, sessions past their idle or absolute end, invitations and
// password resets past their expiry) and nothing else, on both stores.

const NOW = new Date("2026-11-27T12:00:00.000Z");
const at = (ms: number) => new Date(NOW.getTime() + ms).toISOString();
const DAY = 86_400_000;

describe.each(["embedded", "mongodb"] as const)("the members' sweep (%s)", (kind) => {
  let store: DocumentStore;
  beforeAll(async () => {
    if (kind === "mongodb" && !process.env.MONGO_URL) throw new Error("MONGO_URL is not set: run through the repository's Jest config, whose globalSetup starts FerretDB");
    store = await openStore({ mongoUrl: kind === "mongodb" ? process.env.MONGO_URL : undefined, dbName: `gateway_sweep_${Date.now().toString(36)}` });
    await new AuditLog(store).ensureIndexes();
  });
  afterAll(() => store?.close());

  it("deletes what ran out, keeps the rest", async () => {
    const audit = store.collection("audit_log");
    await audit.insertOne({ _id: "aud_old", account_id: "acc_1", at: at(-31 * DAY) });
    await audit.insertOne({ _id: "aud_recent", account_id: "acc_1", at: at(-29 * DAY) });
    const sessions = store.collection("sessions");
    await sessions.insertOne({ _id: "ses_ended", expires_at: at(-1000), last_seen_at: at(-1000) });
    await sessions.insertOne({ _id: "ses_idle", expires_at: at(DAY), last_seen_at: at(-SESSION_IDLE_MS - 1000) });
    await sessions.insertOne({ _id: "ses_live", expires_at: at(DAY), last_seen_at: at(-1000) });
    const invitations = store.collection("invitations");
    await invitations.insertOne({ _id: "inv_expired", expires_at: at(-1000), accepted_at: null });
    await invitations.insertOne({ _id: "inv_open", expires_at: at(DAY), accepted_at: null });
    const resets = store.collection("password_resets");
    await resets.insertOne({ _id: "pwr_expired", expires_at: at(-1000) });
    await resets.insertOne({ _id: "pwr_open", expires_at: at(1000) });

    const counts = await sweepMembersData(store, { auditRetentionDays: 30, now: NOW });
    expect(counts).toEqual({ auditEntries: 1, sessions: 2, invitations: 1, passwordResets: 1 });
    const ids = async (name: string) => (await store.collection(name).find({})).map((d) => d._id).sort();
    expect(await ids("audit_log")).toEqual(["aud_recent"]);
    expect(await ids("sessions")).toEqual(["ses_live"]);
    expect(await ids("invitations")).toEqual(["inv_open"]);
    expect(await ids("password_resets")).toEqual(["pwr_open"]);
    // A second pass finds nothing more.
    expect(await sweepMembersData(store, { auditRetentionDays: 30, now: NOW })).toEqual({ auditEntries: 0, sessions: 0, invitations: 0, passwordResets: 0 });
  });
});

it("reads AUDIT_LOG_RETENTION_DAYS, 400 by default, refusing nonsense", () => {
  expect(auditRetentionDaysFromEnv({})).toBe(400);
  expect(auditRetentionDaysFromEnv({ AUDIT_LOG_RETENTION_DAYS: "90" })).toBe(90);
  expect(() => auditRetentionDaysFromEnv({ AUDIT_LOG_RETENTION_DAYS: "0" })).toThrow(/AUDIT_LOG_RETENTION_DAYS/);
  expect(() => auditRetentionDaysFromEnv({ AUDIT_LOG_RETENTION_DAYS: "soon" })).toThrow(/AUDIT_LOG_RETENTION_DAYS/);
});
