// The campaign benchmark's per-service runs on Kafka (issue 20): every
// service in its own process, on MongoDB (here FerretDB on PostgreSQL) with
// Kafka, once with one process per service and once with two delivery and two
// campaigns replicas sharing the campaign; and, for comparison, on the
// embedded store per service. Each row gives the processes' CPU seconds and
// peak RSS one by one, and the CPU seconds of the servers beside them (the
// Kafka broker, FerretDB, PostgreSQL) over the same span.
//
// run.ts calls `runKafkaCampaigns`; alone (no results file written):
//   node bench/dist/campaign/kafka.js    (CAMPAIGN_BENCH_N, KAFKA_BENCH_RUNS=embedded,mongo,replicas)
import { rmSync } from "node:fs";
import { openStore } from "@emailsvc/storage";
import { ensureKafka, ensureMongo, KAFKA_VERSION, type KafkaServer, type MongoServer } from "@emailsvc/testing";
import { describeMongo, dropDatabases, perServiceMongoEnv } from "../support/mongo.js";
import { processPerService, SERVICES, type PerServiceOptions, type ServiceName } from "../support/platform.js";
import { serverCpu } from "../support/process.js";
import { prepareAudience, runCampaign, sandboxCount, type CampaignRow, type OpenServiceStore } from "./run.js";

export type KafkaRun = "embedded" | "mongo" | "replicas";
export const KAFKA_RUNS: readonly KafkaRun[] = ["embedded", "mongo", "replicas"];

/** Two delivery and two campaigns processes: what a second replica of the busy services adds. */
export const TWO_REPLICAS: PerServiceOptions["replicas"] = { delivery: 2, campaigns: 2 };

/**
 * The per-service campaign runs of `runs` to `n` sandbox recipients, on the
 * test servers (KAFKA_BROKERS and MONGO_URL if set, else servers of their own):
 * each on fresh databases and topics, dropped afterwards.
 */
export async function runKafkaCampaigns(n: number, runs: readonly KafkaRun[] = KAFKA_RUNS): Promise<CampaignRow[]> {
  const rows: CampaignRow[] = [];
  const kafka = await ensureKafka();
  let mongo: MongoServer | undefined;
  try {
    if (runs.includes("embedded")) rows.push(await embeddedPerService(n, kafka));
    if (runs.includes("mongo") || runs.includes("replicas")) {
      mongo = await ensureMongo();
      const server = await describeMongo(mongo.url, mongo.description);
      if (runs.includes("mongo")) rows.push(await mongoPerService(n, kafka, mongo, server));
      if (runs.includes("replicas")) rows.push(await mongoPerService(n, kafka, mongo, server, TWO_REPLICAS));
    }
  } finally {
    await mongo?.stop();
    await kafka.stop();
  }
  return rows;
}

/** Process per service on the embedded store (a folder per service under one DATA_DIR), on Kafka. */
async function embeddedPerService(n: number, kafka: KafkaServer): Promise<CampaignRow> {
  const env = { KAFKA_BROKERS: kafka.brokers, KAFKA_NAMESPACE: `bench${Date.now().toString(36)}s` };
  const audience = await prepareAudience(n, "test", env);
  try {
    const row = await runCampaign(
      `process per service, embedded store, Kafka ${KAFKA_VERSION}`,
      audience,
      env,
      () => sandboxCount(audience, n),
      (dataDir, withEnv) => processPerService(dataDir, withEnv),
      serverCpu(kafka.brokers),
    );
    console.log(row);
    return row;
  } finally {
    rmSync(audience.dataDir, { recursive: true, force: true });
  }
}

/**
 * Process per service on MongoDB (each service its own database, MONGO_DB),
 * on Kafka, with `replicas` of some services.
 */
async function mongoPerService(n: number, kafka: KafkaServer, mongo: MongoServer, server: string, replicas?: PerServiceOptions["replicas"]): Promise<CampaignRow> {
  const prefix = `bcmp${Date.now().toString(36)}`;
  const dbName = (service: string) => `${prefix}_${service}`;
  const env = perServiceMongoEnv(mongo.url, kafka.brokers, prefix);
  const own = (service: ServiceName) => ({ MONGO_DB: dbName(service) });
  const store: OpenServiceStore = (_dataDir, service) => openStore({ mongoUrl: mongo.url, dbName: dbName(service) });
  const launchOne = (dataDir: string, withEnv: Record<string, string>) => processPerService(dataDir, withEnv, { own });
  let dataDir: string | undefined;
  try {
    const audience = await prepareAudience(n, "test", env, { launch: launchOne, store });
    dataDir = audience.dataDir;
    const label = replicas
      ? `process per service, ${Object.entries(replicas).map(([service, count]) => `${count} × ${service}`).join(", ")}, ${server}, Kafka ${KAFKA_VERSION}`
      : `process per service, ${server}, Kafka ${KAFKA_VERSION}`;
    const row = await runCampaign(
      label,
      audience,
      env,
      () => sandboxCount(audience, n, store),
      (dir, withEnv) => processPerService(dir, withEnv, { own, ...(replicas ? { replicas } : {}) }),
      serverCpu(kafka.brokers, mongo.url),
    );
    console.log(row);
    return row;
  } finally {
    await dropDatabases(mongo.url, SERVICES.map(dbName));
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  }
}

if (require.main === module) {
  const n = Number(process.env.CAMPAIGN_BENCH_N ?? 20_000);
  const runs = (process.env.KAFKA_BENCH_RUNS ?? KAFKA_RUNS.join(",")).split(",").filter((r): r is KafkaRun => (KAFKA_RUNS as readonly string[]).includes(r));
  runKafkaCampaigns(n, runs).then(
    (rows) => console.log(JSON.stringify(rows, null, 2)),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}
