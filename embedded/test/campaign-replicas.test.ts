import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AssignerProtocol, Kafka, logLevel } from "kafkajs";
import { MongoClient } from "mongodb";
import { SERVICE_PROCESSES, SmtpSink, type ArrivedMessage, startServiceProcesses, type ServiceProcesses } from "@emailsvc/testing";
import { GENEROUS_RATE_LIMIT_ENV } from "../../services/gateway/test/support/harness";
import { processCaller, sendCampaignToEveryone, untilCampaignSent } from "./support/crash-campaign";

// Issue 20: what holds past one machine. Every service in its own process on
// the MongoDB-compatible server and Kafka, with two delivery and two campaigns
// processes (replicas of one deployment: the same databases, keys and consumer
// groups), sending one campaign through a real SMTP server. Kafka splits the
// send topic's partitions between the two delivery processes and the status
// topic's between the two campaigns processes; one campaigns process at a
// time holds the campaign's lease. Midway the second delivery and campaigns
// processes leave: stopped (SIGTERM, as a rolling restart or a scale-down
// does), their partitions move to the others and every recipient still gets
// the campaign exactly once at the relay; killed (kill -9, a machine lost),
// every recipient gets it too, and a second copy only of a message whose first
// copy the relay took before the kill (the window no SMTP client can close:
// the relay's 250 and our record of it are two steps; see
// campaign-smtp-crash.test.ts).

const root = join(__dirname, "..", "..");
const ADMIN = "replicas-admin-token-0123456789abcdef";
const RECIPIENTS = 160;

const kafkaBrokers = process.env.KAFKA_BROKERS;
const mongoUrl = process.env.MONGO_URL;

describe.each([
  { leaving: "stopped", signal: "SIGTERM" as const },
  { leaving: "killed", signal: "SIGKILL" as const },
])("one campaign shared by two delivery and two campaigns processes, one of each $leaving midway (Kafka, MongoDB-compatible store)", ({ signal }) => {
  const dataDir = mkdtempSync(join(tmpdir(), "campaign-replicas-"));
  // Topics, groups and databases of this test alone: other suites share the servers.
  const namespace = `replicas${signal === "SIGTERM" ? "t" : "k"}${Date.now().toString(36)}`;
  const dbName = (service: string) => `${namespace}_${service}`;
  let sink: SmtpSink;
  let platform: ServiceProcesses | undefined;
  let key = "";
  const call = processCaller(() => platform, ADMIN, () => key);

  beforeAll(async () => {
    if (!kafkaBrokers || !mongoUrl) throw new Error("KAFKA_BROKERS and MONGO_URL are not set: run the tests through `npm test`, whose setup starts Kafka and FerretDB");
    sink = await new SmtpSink().start();
    const keys = () => `k1:${randomBytes(32).toString("base64")}`;
    platform = await startServiceProcesses(
      root,
      {
        DATA_DIR: dataDir,
        MONGO_URL: mongoUrl,
        KAFKA_BROKERS: kafkaBrokers,
        KAFKA_NAMESPACE: namespace,
        ADMIN_TOKEN: ADMIN,
        TOKEN_SIGNING_KEYS: keys(),
        SUPPRESSION_KEYS: keys(),
        SEALING_KEYS: keys(),
        EMAIL_PROVIDER: "smtp",
        SMTP_URL: sink.url(),
        EMAIL_FROM: "News <news@sender.example>",
        // About four seconds of sending: time to see both processes at work and stop one of each midway.
        CAMPAIGN_RATE: "40/1s",
        OUTBOX_SWEEP_INTERVAL_MS: "500",
        ...GENEROUS_RATE_LIMIT_ENV,
      },
      { own: (service) => ({ MONGO_DB: dbName(service) }), replicas: { delivery: 2, campaigns: 2 } },
    );
  }, 120_000);

  afterAll(async () => {
    await platform?.stop();
    await sink?.close();
    if (mongoUrl) {
      const client = await MongoClient.connect(mongoUrl);
      try {
        for (const service of SERVICE_PROCESSES) await client.db(dbName(service)).dropDatabase();
      } finally {
        await client.close();
      }
    }
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** The partitions of `topic` each member of `group` holds now, by member (namespaced names). */
  async function assignments(group: string, topic: string): Promise<number[][]> {
    const admin = new Kafka({ clientId: "replicas-test", brokers: kafkaBrokers!.split(","), logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    try {
      const { groups } = await admin.describeGroups([`${namespace}.${group}`]);
      return groups[0]!.members.map((member) => AssignerProtocol.MemberAssignment.decode(member.memberAssignment)?.assignment[`${namespace}.${topic}`] ?? []);
    } finally {
      await admin.disconnect();
    }
  }

  it("splits the send between the processes and sends every recipient the campaign", async () => {
    expect(platform!.processes.map((p) => p.name)).toEqual(expect.arrayContaining(["delivery", "delivery#2", "campaigns", "campaigns#2"]));
    const { id, sent } = await sendCampaignToEveryone(call, (k) => (key = k), { account: "Replicas", mode: "live", recipients: RECIPIENTS });
    expect(sent.status).toBe(200);

    // Both delivery processes hold partitions of the send topic, both campaigns processes of the status topic.
    for (const [group, topic] of [
      ["delivery", "email.send.requested"],
      ["campaigns", "email.status"],
    ] as const) {
      // A member that joined last may still be waiting for its share (a rebalance): ask until both hold some.
      let held = await assignments(group, topic);
      for (let i = 0; i < 100 && !(held.length === 2 && held.every((partitions) => partitions.length > 0)); i++) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        held = await assignments(group, topic);
      }
      expect(held).toHaveLength(2);
      for (const partitions of held) expect(partitions.length).toBeGreaterThan(0);
      expect(held.flat().sort()).toEqual([0, 1, 2]);
    }

    // Midway: the second delivery and campaigns processes drain and leave, or die.
    for (let i = 0; i < 600 && sink.acceptedCount < RECIPIENTS / 4; i++) await new Promise((resolve) => setTimeout(resolve, 25));
    expect(sink.acceptedCount).toBeGreaterThanOrEqual(RECIPIENTS / 4);
    expect(sink.acceptedCount).toBeLessThan(RECIPIENTS);
    const leaving = platform!.processes.filter((p) => p.name === "delivery#2" || p.name === "campaigns#2");
    const leaveStarted = Date.now();
    await Promise.all(leaving.map((p) => (signal === "SIGTERM" ? p.proc.stop() : p.proc.kill())));
    const arrivedAtLeave = sink.messages.length;
    const leaveEnded = Date.now();
    if (signal === "SIGTERM") expect(await Promise.all(leaving.map((p) => p.proc.exited))).toEqual([0, 0]);

    const done = await untilCampaignSent(call, id);
    expect(done.status).toBe("sent");
    expect(done.counts).toMatchObject({ total: RECIPIENTS, sent: RECIPIENTS, pending: 0, queued: 0, failed: 0, skipped: 0 });

    // Everyone got it, nobody else was mailed.
    const recipients = Array.from({ length: RECIPIENTS }, (_, i) => `r${i}@example.com`);
    expect([...sink.recipientCounts.keys()].sort()).toEqual([...recipients].sort());
    if (signal === "SIGTERM") {
      // Exactly once at the relay.
      expect([...sink.recipientCounts.entries()].filter(([, count]) => count !== 1)).toEqual([]);
      expect(sink.acceptedCount).toBe(RECIPIENTS);
    } else {
      // A second copy only of a message the relay took before the kill, with the same Message-ID; never a third.
      // "Before the kill" is what the killed process wrote before it died: the sink may read those bytes and
      // answer them after the exit, on a connection that closes then (the kill closed it; the answer never
      // reached the process, so its message is sent again). Such a copy is on a session closed within the kill.
      const closedByTheKill = (m: ArrivedMessage) => {
        const closedAt = sink.sessionClosedAt(m.session);
        return closedAt !== undefined && closedAt >= leaveStarted && closedAt <= leaveEnded + 2_000;
      };
      const copies = new Map<string, Array<{ m: ArrivedMessage; index: number }>>();
      sink.messages.forEach((m, index) => {
        if (!m.accepted) return;
        const to = m.envelope.to[0]!.toLowerCase();
        copies.set(to, [...(copies.get(to) ?? []), { m, index }]);
      });
      const outside = [...copies].filter(
        ([, list]) =>
          list.length > 2 ||
          (list.length === 2 &&
            ((list[0]!.index >= arrivedAtLeave && !closedByTheKill(list[0]!.m)) || list[0]!.m.parsed.messageId !== list[1]!.m.parsed.messageId)),
      );
      expect(outside.map(([to]) => to)).toEqual([]);
    }
  }, 120_000);
});
