import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startPlatformProcess, type PlatformProcess } from "@emailsvc/testing";
import { crashTestEnv, processCaller, sendCampaignToEveryone, untilCampaignSent } from "./support/crash-campaign";
import { allItems } from "./support/platform-client";

// kill -9 in the middle of a campaign: the platform process (campaigns and
// delivery in it, each in a worker thread of its own as `npm start` runs
// them) dies without a chance to write anything, starts again, and every
// recipient gets the campaign exactly once (one email record and one message
// at the provider per recipient; the ledger says sent for each). Twice: over
// real Kafka and the MongoDB-compatible server, and on `npm start`'s
// defaults (embedded store, durable in-process bus shared across threads).

const root = join(__dirname, "..", "..");
const ADMIN = "crash-admin-token-0123456789abcdef";
const RECIPIENTS = 120;

const kafka = process.env.KAFKA_BROKERS;
const mongo = process.env.MONGO_URL;

describe.each([
  { setup: "Kafka, MongoDB-compatible store", servers: true },
  { setup: "embedded store, in-process bus", servers: false },
])("a campaign across kill -9 ($setup)", ({ servers }) => {
  const dataDir = mkdtempSync(join(tmpdir(), "campaign-crash-"));
  let proc: PlatformProcess | undefined;
  let key = "";
  // Topics and groups of this test alone: other suites share the cluster.
  const namespace = `crash${Date.now().toString(36)}`;
  const start = () =>
    startPlatformProcess(
      root,
      crashTestEnv(
        { dataDir, adminToken: ADMIN, servers: servers ? { mongoUrl: mongo!, kafkaBrokers: kafka!, namespace } : undefined },
        {
          // 40 a second: the send lasts about three seconds, time to kill it midway.
          CAMPAIGN_RATE: "40/1s",
        },
      ),
    );

  const call = processCaller(() => proc, ADMIN, () => key);

  beforeAll(async () => {
    if (servers && (!kafka || !mongo)) throw new Error("KAFKA_BROKERS and MONGO_URL are not set: run the tests through `npm test`, whose setup starts Kafka and FerretDB");
    proc = await start();
  }, 120_000);

  afterAll(async () => {
    await proc?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("sends to every recipient exactly once when the process is killed mid-campaign and started again", async () => {
    const { id, sent } = await sendCampaignToEveryone(call, (k) => (key = k), { account: "Crash", mode: "test", recipients: RECIPIENTS });

    // Midway: some sent, most not.
    let counts = sent.body.counts;
    for (let i = 0; i < 600 && counts.sent < 20; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      counts = (await call("GET", `/api/v1/campaigns/${id}`)).body.counts;
    }
    expect(counts.sent).toBeGreaterThanOrEqual(20);
    expect(counts.sent).toBeLessThan(RECIPIENTS);
    await proc!.kill();
    proc = await start();
    const done = await untilCampaignSent(call, id);
    expect(done.status).toBe("sent");
    expect(done.counts).toMatchObject({ total: RECIPIENTS, sent: RECIPIENTS, pending: 0, queued: 0, failed: 0, skipped: 0 });

    // Exactly once: one email per recipient, each handed to the provider once (one kept message each).
    const emails = await allItems<{ id: string; to: string; status: string }>((path) => call("GET", path), "/api/v1/emails");
    expect(emails).toHaveLength(RECIPIENTS);
    expect(new Set(emails.map((e) => e.to)).size).toBe(RECIPIENTS);
    expect(emails.every((e) => e.status === "sent")).toBe(true);
    for (const email of emails.slice(0, 10)) expect((await call("GET", `/api/v1/emails/${email.id}/sandbox`)).status).toBe(200);
  }, 300_000);
});
